// Engine selection: io_uring unless told otherwise or unavailable.
#include "net_plugin/engine/engine.h"

#include "net_plugin/core/status.h"

namespace bagua::net {

std::unique_ptr<Engine> createEngine(EngineKind kind, int threads, std::string* note) {
  if (kind == EngineKind::kEpoll) return createEpollEngine(threads);
  if (kind == EngineKind::kIoUring) return createUringEngine(threads);
  try {
    return createUringEngine(threads);
  } catch (const NetError& e) {
    *note = std::string("io_uring unavailable (") + e.what() + "), falling back to epoll";
    return createEpollEngine(threads);
  }
}

}  // namespace bagua::net
