// See plugin_logger.h.
#include "tools/plugin_driver/plugin_logger.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace bagua::plugin_driver {
namespace {

std::mutex gMutex;
int gRank = -1;
ncclDebugLogLevel gMaxLevel = NCCL_LOG_WARN;
std::string gLastWarning;

}  // namespace

void setupPluginLogger(int rank) {
  std::lock_guard<std::mutex> lock(gMutex);
  gRank = rank;
  const char* debug = std::getenv("NCCL_DEBUG");
  gMaxLevel = NCCL_LOG_WARN;
  if (debug && strcasecmp(debug, "INFO") == 0) gMaxLevel = NCCL_LOG_INFO;
  if (debug && strcasecmp(debug, "TRACE") == 0) gMaxLevel = NCCL_LOG_TRACE;
  if (debug && strcasecmp(debug, "VERSION") == 0) gMaxLevel = NCCL_LOG_VERSION;
}

void pluginLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                  const char* fmt, ...) {
  (void)flags;
  bool isWarn = level == NCCL_LOG_WARN || level == NCCL_LOG_ABORT;
  // NCCL orders levels WARN < INFO < ABORT < TRACE; ABORT is shown like WARN.
  bool shown = isWarn || (level == NCCL_LOG_INFO && gMaxLevel >= NCCL_LOG_INFO) ||
               (level == NCCL_LOG_TRACE && gMaxLevel >= NCCL_LOG_TRACE);
  if (!shown || fmt == nullptr) return;
  char text[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  const char* tag = isWarn ? "WARN" : level == NCCL_LOG_INFO ? "INFO" : "TRACE";
  std::lock_guard<std::mutex> lock(gMutex);
  if (isWarn) {
    std::fprintf(stderr, "rank %d: NCCL %s %s:%d %s\n", gRank, tag, file ? file : "?", line, text);
    gLastWarning = text;
  } else {
    std::fprintf(stderr, "rank %d: NCCL %s %s\n", gRank, tag, text);
  }
}

std::string lastPluginWarning() {
  std::lock_guard<std::mutex> lock(gMutex);
  return gLastWarning;
}

}  // namespace bagua::plugin_driver
