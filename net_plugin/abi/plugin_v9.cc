// ncclNetPlugin_v9 (NCCL 2.24-2.25): size_t sizes, no profiler handles.
#include "net_plugin/abi/shims.h"
#include "net_plugin/nccl/net_v9.h"

namespace bagua::net::abi {
namespace {

ncclResult_t isend(void* sendComm, void* data, size_t size, int, void* mhandle, void** request) {
  return api::isend(sendComm, data, size, mhandle, request);
}

ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int*, void** mhandles,
                   void** request) {
  return api::irecv(recvComm, n, data, sizes, mhandles, request);
}

}  // namespace
}  // namespace bagua::net::abi

extern "C" __attribute__((visibility("default"))) const ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = bagua::net::api::kNetName,
    .init = bagua::net::api::init,
    .devices = bagua::net::api::devices,
    .getProperties = bagua::net::abi::getPropertiesAs<ncclNetProperties_v9_t>,
    .listen = bagua::net::api::listen,
    .connect = bagua::net::abi::connectNoContext,
    .accept = bagua::net::abi::accept,
    .regMr = bagua::net::api::regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = bagua::net::api::deregMr,
    .isend = bagua::net::abi::isend,
    .irecv = bagua::net::abi::irecv,
    .iflush = bagua::net::api::iflush,
    .test = bagua::net::api::test,
    .closeSend = bagua::net::api::closeSend,
    .closeRecv = bagua::net::api::closeRecv,
    .closeListen = bagua::net::api::closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
};
