// ncclNetPlugin_v11: the primary table (NCCL 2.28+). Per-communicator
// init/finalize with a context; everything else forwards to the API layer.
#include "net_plugin/abi/shims.h"
#include "net_plugin/nccl/net_v11.h"

namespace bagua::net::abi {
namespace {

ncclResult_t init(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                  ncclDebugLogger_t logger, ncclProfilerCallback_t) {
  int trafficClass = config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return api::initContext(ctx, commId, trafficClass, logger);
}

ncclResult_t getProperties(int dev, ncclNetProperties_v11_t* props) {
  ncclResult_t rc = getPropertiesAs(dev, props);
  if (rc == ncclSuccess) props->maxMultiRequestSize = 1;
  return rc;
}

ncclResult_t listen(void*, int dev, void* handle, void** listenComm) {
  return api::listen(dev, handle, listenComm);
}

ncclResult_t connect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_t**) {
  return api::connect(ctx, dev, handle, sendComm);
}

ncclResult_t setNetAttr(void* ctx, ncclNetAttr_v11_t* attr) { return api::setNetAttr(ctx, attr); }

}  // namespace
}  // namespace bagua::net::abi

extern "C" __attribute__((visibility("default"))) const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "Bagua",
    .init = bagua::net::abi::init,
    .devices = bagua::net::api::devices,
    .getProperties = bagua::net::abi::getProperties,
    .listen = bagua::net::abi::listen,
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
    .finalize = bagua::net::api::finalizeContext,
    .setNetAttr = bagua::net::abi::setNetAttr,
};
