// Logging through NCCL's logger, the only channel the plugin writes to.
//
// Every line carries the "NET/Bagua " prefix. Lines important at start-up are
// tagged INIT|NET because NCCL hides NET-only lines unless NCCL_DEBUG_SUBSYS
// names NET. TRACE compiles to nothing unless the build's `trace` option is
// on. Before NCCL hands us its logger (or when a test passes none), WARN goes
// to stderr and INFO too when NCCL_DEBUG=INFO.
#pragma once

#include "net_plugin/nccl/net_types.h"

namespace bagua::net {

// Installs NCCL's logger (NULL keeps the stderr fallback). Thread-safe.
void setLogger(ncclDebugLogger_t logger);

// printf-style; use the macros below, which add file and line.
void logLine(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
             const char* fmt, ...) __attribute__((format(printf, 5, 6)));

}  // namespace bagua::net

#define BAGUA_WARN(fmt, ...)                                         \
  ::bagua::net::logLine(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, \
                        "NET/Bagua " fmt __VA_OPT__(, ) __VA_ARGS__)
#define BAGUA_INFO(flags, fmt, ...)                                 \
  ::bagua::net::logLine(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, \
                        "NET/Bagua " fmt __VA_OPT__(, ) __VA_ARGS__)

#include "config.h"
#if BAGUA_TRACE
#define BAGUA_TRACE_LOG(fmt, ...)                                     \
  ::bagua::net::logLine(NCCL_LOG_TRACE, NCCL_NET, __FILE__, __LINE__, \
                        "NET/Bagua " fmt __VA_OPT__(, ) __VA_ARGS__)
#else
#define BAGUA_TRACE_LOG(fmt, ...) \
  do {                            \
  } while (false)
#endif
