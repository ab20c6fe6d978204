// The process's plugin: the one place that holds process-wide state. NCCL's
// v8..v10 entry points carry no context, so the API layer keeps one plugin
// state (knobs as read from the environment, devices, the shared engine) and
// the connects in progress, and passes what they hold down as arguments:
// nothing below this layer reaches a global (scripts/check_layers.py).
#pragma once

#include "net_plugin/transport/pending_connects.h"
#include "net_plugin/transport/plugin_state.h"

namespace bagua::net::api {

// The process's plugin state, made on first use with the knobs of the
// environment. Throws NetError on a malformed knob (the next call tries
// again).
PluginState& processState();

// The process's connects in progress (after processState()).
PendingConnects& processConnects();

// Starts or shares the process's engine (processState().engine()), for the
// listeners and connectors the API layer makes.
EngineSource processEngine();

}  // namespace bagua::net::api
