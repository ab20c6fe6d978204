// Engine selection: io_uring unless told otherwise or unavailable.
#include "net_plugin/engine/engine.h"

#include <system_error>

#include "net_plugin/core/status.h"

namespace bagua::net {

namespace {

std::unique_ptr<Engine> startEngine(EngineKind kind, int threads, int spinUs, std::string* note) {
  if (kind == EngineKind::kEpoll) return createEpollEngine(threads, spinUs);
  if (kind == EngineKind::kIoUring) return createUringEngine(threads, spinUs);
  try {
    return createUringEngine(threads, spinUs);
  } catch (const NetError& e) {
    *note = std::string("io_uring unavailable (") + e.what() + "), falling back to epoll";
    return createEpollEngine(threads, spinUs);
  }
}

}  // namespace

std::unique_ptr<Engine> createEngine(EngineKind kind, int threads, int spinUs, std::string* note) {
  try {
    return startEngine(kind, threads, spinUs, note);
  } catch (const std::system_error& e) {  // std::thread could not start one
    throw NetError(Status::kSystemError, std::string("starting the I/O engine's worker threads: ") +
                                             e.what() +
                                             " (out of memory or process/thread limits)");
  }
}

}  // namespace bagua::net
