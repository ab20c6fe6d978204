// A network that moves nothing: every send and receive completes the moment it
// is posted. Only for measuring the ceiling of NCCL's host-staged network path
// on the GPU machine (the GPU kernel writing and reading pinned host buffers,
// the proxy thread posting and testing requests) with no transport in it: a
// transport's busbw can only reach what this one reaches. The data is NOT
// delivered, so nccl-tests counts the results #wrong; only its busbw means
// anything. net_defaults.sh runs it as the config `null` (NULL_NET=<so>).
//
// Exports the v11 net ABI (NCCL 2.28-2.29) under the name "Null"; select it
// with NCCL_NET_PLUGIN=<path to this .so> NCCL_NET=Null.
#include <cstring>

#include "net_plugin/nccl/net_v11.h"

namespace {

// One posted send or receive: its sizes, handed back by test().
struct Request {
  int n = 0;
  int sizes[NCCL_NET_MAX_REQUESTS] = {};
};

// Any non-null address serves as a context, comm or memory handle.
char gToken;

ncclResult_t init(void** ctx, uint64_t, ncclNetCommConfig_v11_t*, ncclDebugLogger_t,
                  ncclProfilerCallback_t) {
  *ctx = &gToken;
  return ncclSuccess;
}

ncclResult_t devices(int* ndev) {
  *ndev = 1;
  return ncclSuccess;
}

ncclResult_t getProperties(int dev, ncclNetProperties_v11_t* props) {
  std::memset(props, 0, sizeof(*props));
  props->name = const_cast<char*>("null");
  props->pciPath = nullptr;
  props->ptrSupport = NCCL_PTR_HOST;
  props->speed = 100000;  // Mbit/s; channels are set by the run, not from this
  props->maxComms = 65536;
  props->maxRecvs = 1;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxCollBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxMultiRequestSize = 1;
  return ncclSuccess;
}

ncclResult_t listen(void*, int, void* handle, void** listenComm) {
  std::memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  *listenComm = &gToken;
  return ncclSuccess;
}

ncclResult_t connect(void*, int, void*, void** sendComm, ncclNetDeviceHandle_t**) {
  *sendComm = &gToken;
  return ncclSuccess;
}

ncclResult_t accept(void*, void** recvComm, ncclNetDeviceHandle_t**) {
  *recvComm = &gToken;
  return ncclSuccess;
}

ncclResult_t regMr(void*, void*, size_t, int, void** mhandle) {
  *mhandle = &gToken;
  return ncclSuccess;
}

ncclResult_t deregMr(void*, void*) { return ncclSuccess; }

ncclResult_t isend(void*, void*, size_t size, int, void*, void*, void** request) {
  auto* r = new Request;
  r->n = 1;
  r->sizes[0] = static_cast<int>(size);
  *request = r;
  return ncclSuccess;
}

ncclResult_t irecv(void*, int n, void**, size_t* sizes, int*, void**, void**, void** request) {
  if (n < 1 || n > NCCL_NET_MAX_REQUESTS) return ncclInvalidArgument;
  auto* r = new Request;
  r->n = n;
  for (int i = 0; i < n; ++i) r->sizes[i] = static_cast<int>(sizes[i]);
  *request = r;
  return ncclSuccess;
}

ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;  // host memory: nothing to flush
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  *done = 1;
  if (sizes != nullptr) std::memcpy(sizes, r->sizes, sizeof(int) * r->n);
  delete r;
  return ncclSuccess;
}

ncclResult_t closeComm(void*) { return ncclSuccess; }
ncclResult_t finalize(void*) { return ncclSuccess; }
ncclResult_t setNetAttr(void*, ncclNetAttr_v11_t*) { return ncclSuccess; }

}  // namespace

extern "C" __attribute__((visibility("default"))) const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "Null",
    .init = init,
    .devices = devices,
    .getProperties = getProperties,
    .listen = listen,
    .connect = connect,
    .accept = accept,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = isend,
    .irecv = irecv,
    .iflush = iflush,
    .test = test,
    .closeSend = closeComm,
    .closeRecv = closeComm,
    .closeListen = closeComm,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
    .finalize = finalize,
    .setNetAttr = setNetAttr,
};
