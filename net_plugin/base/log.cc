// NCCL logger forwarding with a stderr fallback.
#include "net_plugin/base/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace bagua::net {
namespace {

std::atomic<ncclDebugLogger_t> gLogger{nullptr};

bool fallbackShowsInfo() {
  static const bool show = [] {
    const char* level = std::getenv("NCCL_DEBUG");
    return level != nullptr && (strcasecmp(level, "INFO") == 0 || strcasecmp(level, "TRACE") == 0);
  }();
  return show;
}

}  // namespace

void setLogger(ncclDebugLogger_t logger) {
  if (logger != nullptr) gLogger.store(logger, std::memory_order_release);
}

void logLine(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
             const char* fmt, ...) {
  char text[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);

  ncclDebugLogger_t logger = gLogger.load(std::memory_order_acquire);
  if (logger != nullptr) {
    // NCCL's logger is printf-style; pass the formatted text through "%s".
    logger(level, flags, file, line, "%s", text);
    return;
  }
  if (level == NCCL_LOG_WARN || (level == NCCL_LOG_INFO && fallbackShowsInfo())) {
    std::fprintf(stderr, "%s %s\n", level == NCCL_LOG_WARN ? "WARN" : "INFO", text);
  }
}

}  // namespace bagua::net
