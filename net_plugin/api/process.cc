// The process's plugin state and connects in progress.
#include "net_plugin/api/process.h"

namespace bagua::net::api {

PluginState& processState() {
  // A throwing initializer (a malformed knob) leaves the static unset, so a
  // fixed environment is read again on the next call.
  static PluginState state(params());
  return state;
}

PendingConnects& processConnects() {
  static PendingConnects pending(processState().params().connectTimeoutMs);
  return pending;
}

EngineSource processEngine() {
  return [] { return processState().engine(); };
}

}  // namespace bagua::net::api
