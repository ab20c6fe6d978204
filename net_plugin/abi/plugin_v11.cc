// ncclNetPlugin_v11 (NCCL 2.28-2.29; newer NCCL prefers v12). Per-communicator
// init/finalize with a context; everything forwards to the API layer
// (shims.h's contextTable, shared with v12).
#include "net_plugin/abi/shims.h"
#include "net_plugin/nccl/net_v11.h"

extern "C" __attribute__((visibility("default"))) constinit const ncclNet_v11_t ncclNetPlugin_v11 =
    bagua::net::abi::contextTable<ncclNet_v11_t, ncclNetProperties_v11_t>();
