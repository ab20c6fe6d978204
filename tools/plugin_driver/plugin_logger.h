// The logger handed to the plugin's init: WARN lines always go to stderr,
// INFO (and TRACE) lines only when NCCL_DEBUG=INFO (TRACE), as NCCL would
// show them. The last WARN text is kept so an error report can quote it.
#pragma once

#include <string>

#include "net_plugin/nccl/net_types.h"

namespace bagua::plugin_driver {

// Reads NCCL_DEBUG and sets the "rank R" prefix; call after the configuration's
// environment is applied and before the plugin is loaded.
void setupPluginLogger(int rank);

// The function passed to init. Thread-safe: plugins log from their own threads.
void pluginLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                  const char* fmt, ...) __attribute__((format(printf, 5, 6)));

// The most recent WARN line of the plugin ("" if none).
std::string lastPluginWarning();

}  // namespace bagua::plugin_driver
