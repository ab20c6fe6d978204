// ncclNetPlugin_v10 (NCCL 2.26-2.27; newer NCCL prefers v11). One init per
// process, no finalize: the engine's threads live only while comms exist.
#include "net_plugin/abi/shims.h"
#include "net_plugin/nccl/net_v10.h"

namespace bagua::net::abi {
namespace {

ncclResult_t init(ncclDebugLogger_t logger, ncclProfilerCallback_t) { return api::init(logger); }

ncclResult_t connect(int dev, ncclNetCommConfig_v10_t*, void* handle, void** sendComm,
                     ncclNetDeviceHandle_t**) {
  return api::connect(nullptr, dev, handle, sendComm);
}

}  // namespace
}  // namespace bagua::net::abi

extern "C" __attribute__((visibility("default"))) const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = bagua::net::api::kNetName,
    .init = bagua::net::abi::init,
    .devices = bagua::net::api::devices,
    .getProperties = bagua::net::abi::getPropertiesAs<ncclNetProperties_v10_t>,
    .listen = bagua::net::api::listen,
    .connect = bagua::net::abi::connect,
    .accept = bagua::net::abi::accept,
    .regMr = bagua::net::api::regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = bagua::net::api::deregMr,
    .isend = bagua::net::abi::isendProfiled,
    .irecv = bagua::net::abi::irecvProfiled,
    .iflush = bagua::net::api::iflush,
    .test = bagua::net::api::test,
    .closeSend = bagua::net::api::closeSend,
    .closeRecv = bagua::net::api::closeRecv,
    .closeListen = bagua::net::api::closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
};
