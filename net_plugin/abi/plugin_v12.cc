// ncclNetPlugin_v12 (NCCL 2.30+): v11's entry points (shims.h's
// contextTable); only the properties differ: the wider vProps, and
// railId/planeId left undefined (props.h).
#include "net_plugin/abi/shims.h"
#include "net_plugin/nccl/net_v12.h"

extern "C" __attribute__((visibility("default"))) constinit const ncclNet_v12_t ncclNetPlugin_v12 =
    bagua::net::abi::contextTable<ncclNet_v12_t, ncclNetProperties_v12_t>();
