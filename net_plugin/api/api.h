// The API boundary: one function per plugin entry point, independent of the
// ABI version. The versioned tables in net_plugin/abi/ are thin shims over
// these. Here, and only here:
//  - arguments are validated (NULL pointers, device index, handle magic and
//    checksum, comm and request identity) -> ncclInvalidArgument with a WARN
//    naming the function and the problem;
//  - every exception is caught (NetError keeps its code, bad_alloc is
//    ncclSystemError, anything else ncclInternalError) and logged;
//  - opaque pointers become typed objects, once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "net_plugin/nccl/net_types.h"
#include "net_plugin/nccl/net_v11.h"

namespace bagua::net::api {

// The name NCCL knows the plugin (and its tuner) by; NCCL_NET=Bagua picks it
// (NCCL compares ignoring case).
inline constexpr const char* kNetName = "Bagua";

// Version-neutral device properties; each shim copies them into its layout.
struct DeviceProps {
  char* name;
  char* pciPath;  // NULL for a virtual NIC
  uint64_t guid;
  int ptrSupport;
  int speedMbps;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  size_t maxP2pBytes;
  size_t maxCollBytes;
};

// Process-wide initialisation (v8-v10 init, and part of v11 init).
ncclResult_t init(ncclDebugLogger_t logger);
// v11: per-communicator context; holds the engine until finalizeContext.
ncclResult_t initContext(void** ctx, uint64_t commId, int trafficClass, ncclDebugLogger_t logger);
// v11: ends a context; NULL is accepted (NCCL 2.28 calls it after a failed init).
ncclResult_t finalizeContext(void* ctx);
// v11: NCCL's hints about peers and flows: the connections per peer set the
// stream count of later connects when BAGUA_NET_FLOWS_PER_PEER is set.
ncclResult_t setNetAttr(void* ctx, const ncclNetAttr_v11_t* attr);

ncclResult_t devices(int* ndev);
ncclResult_t getProperties(int dev, DeviceProps* props);
ncclResult_t listen(int dev, void* handle, void** listenComm);
// `ctx` is the v11 context (its rank's rate limiter) or NULL for older ABIs.
ncclResult_t connect(void* ctx, int dev, void* handle, void** sendComm);
ncclResult_t accept(void* listenComm, void** recvComm);
ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t deregMr(void* comm, void* mhandle);
ncclResult_t isend(void* sendComm, void* data, size_t size, void* mhandle, void** request);
ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, void** mhandles,
                   void** request);
ncclResult_t iflush(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                    void** request);
ncclResult_t test(void* request, int* done, int* sizes);
ncclResult_t closeSend(void* sendComm);
// Connects started and not yet finished or closed (for tests and diagnostics).
size_t pendingConnects();
ncclResult_t closeRecv(void* recvComm);
ncclResult_t closeListen(void* listenComm);

}  // namespace bagua::net::api
