// Forwarders shared by the versioned tables where two or more ABI versions
// have the same signature, so each plugin_vN.cc lists only what differs.
// Properties are still filled per version, field by field (fillCommon).
#pragma once

#include "net_plugin/abi/props.h"
#include "net_plugin/api/api.h"

namespace bagua::net::abi {

// getProperties for any version's properties struct.
template <typename Props>
ncclResult_t getPropertiesAs(int dev, Props* props) {
  api::DeviceProps p;
  ncclResult_t rc = api::getProperties(dev, props != nullptr ? &p : nullptr);
  if (rc == ncclSuccess) fillCommon(p, dev, props);
  return rc;
}

// accept: the same shape in v8..v12 (the device-offload handle is unused).
inline ncclResult_t accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_t**) {
  return api::accept(listenComm, recvComm);
}

// connect without a context or config (v8, v9).
inline ncclResult_t connectNoContext(int dev, void* handle, void** sendComm,
                                     ncclNetDeviceHandle_t**) {
  return api::connect(nullptr, dev, handle, sendComm);
}

// isend/irecv with size_t sizes and profiler handles (v10..v12).
inline ncclResult_t isendProfiled(void* sendComm, void* data, size_t size, int, void* mhandle,
                                  void*, void** request) {
  return api::isend(sendComm, data, size, mhandle, request);
}
inline ncclResult_t irecvProfiled(void* recvComm, int n, void** data, size_t* sizes, int*,
                                  void** mhandles, void**, void** request) {
  return api::irecv(recvComm, n, data, sizes, mhandles, request);
}

// The context-taking entry points of v11 and v12 (same signatures: v12's
// config and attribute types are v11's).
inline ncclResult_t initContext(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                                ncclDebugLogger_t logger, ncclProfilerCallback_t) {
  int trafficClass = config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return api::initContext(ctx, commId, trafficClass, logger);
}
inline ncclResult_t listenInContext(void*, int dev, void* handle, void** listenComm) {
  return api::listen(dev, handle, listenComm);
}
inline ncclResult_t connectInContext(void* ctx, int dev, void* handle, void** sendComm,
                                     ncclNetDeviceHandle_t**) {
  return api::connect(ctx, dev, handle, sendComm);
}
inline ncclResult_t setNetAttr(void* ctx, ncclNetAttr_v11_t* attr) {
  return api::setNetAttr(ctx, attr);
}

// The whole table of v11 or v12 (their entries have the same signatures; the
// properties struct is the version's own).
template <typename Table, typename Props>
constexpr Table contextTable() {
  return Table{
      .name = api::kNetName,
      .init = initContext,
      .devices = api::devices,
      .getProperties = getPropertiesAs<Props>,
      .listen = listenInContext,
      .connect = connectInContext,
      .accept = accept,
      .regMr = api::regMr,
      .regMrDmaBuf = nullptr,
      .deregMr = api::deregMr,
      .isend = isendProfiled,
      .irecv = irecvProfiled,
      .iflush = api::iflush,
      .test = api::test,
      .closeSend = api::closeSend,
      .closeRecv = api::closeRecv,
      .closeListen = api::closeListen,
      .getDeviceMr = nullptr,
      .irecvConsumed = nullptr,
      .makeVDevice = nullptr,
      .finalize = api::finalizeContext,
      .setNetAttr = setNetAttr,
  };
}

}  // namespace bagua::net::abi
