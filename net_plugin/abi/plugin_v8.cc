// ncclNetPlugin_v8 (NCCL 2.20-2.23): int message sizes; properties without
// forceFlush, vProps or byte limits (NCCL then assumes 1 GiB per transfer).
#include "net_plugin/abi/shims.h"
#include "net_plugin/nccl/net_v8.h"

namespace bagua::net::abi {
namespace {

ncclResult_t isend(void* sendComm, void* data, int size, int, void* mhandle, void** request) {
  if (size < 0) {
    if (request != nullptr) *request = nullptr;
    return ncclInvalidArgument;
  }
  return api::isend(sendComm, data, static_cast<size_t>(size), mhandle, request);
}

ncclResult_t irecv(void* recvComm, int n, void** data, int* sizes, int*, void** mhandles,
                   void** request) {
  // maxRecvs is 1, so one size; the API layer rejects any other n.
  size_t size = (sizes != nullptr && n >= 1 && sizes[0] > 0) ? static_cast<size_t>(sizes[0]) : 0;
  return api::irecv(recvComm, n, data, sizes != nullptr ? &size : nullptr, mhandles, request);
}

}  // namespace
}  // namespace bagua::net::abi

extern "C" __attribute__((visibility("default"))) const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = bagua::net::api::kNetName,
    .init = bagua::net::api::init,
    .devices = bagua::net::api::devices,
    .getProperties = bagua::net::abi::getPropertiesAs<ncclNetProperties_v8_t>,
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
};
