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

// accept: the same shape in v8..v11 (the device-offload handle is unused).
inline ncclResult_t accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_t**) {
  return api::accept(listenComm, recvComm);
}

// connect without a context or config (v8, v9).
inline ncclResult_t connectNoContext(int dev, void* handle, void** sendComm,
                                     ncclNetDeviceHandle_t**) {
  return api::connect(nullptr, dev, handle, sendComm);
}

// isend/irecv with size_t sizes and profiler handles (v10, v11).
inline ncclResult_t isendProfiled(void* sendComm, void* data, size_t size, int, void* mhandle,
                                  void*, void** request) {
  return api::isend(sendComm, data, size, mhandle, request);
}
inline ncclResult_t irecvProfiled(void* recvComm, int n, void** data, size_t* sizes, int*,
                                  void** mhandles, void**, void** request) {
  return api::irecv(recvComm, n, data, sizes, mhandles, request);
}

}  // namespace bagua::net::abi
