// API boundary, data half: memory registration, isend/irecv/iflush, test.
#include <sched.h>

#include <chrono>
#include <memory>

#include "net_plugin/api/api.h"
#include "net_plugin/api/boundary.h"
#include "net_plugin/api/process.h"
#include "net_plugin/api/registry.h"
#include "net_plugin/engine/caller_wait.h"
#include "net_plugin/transport/memory_region.h"
#include "net_plugin/transport/recv_comm.h"
#include "net_plugin/transport/send_comm.h"

namespace bagua::net::api {
namespace {

bool isComm(void* comm) {
  return Registry::get().is(comm, ObjectKind::kSend) || Registry::get().is(comm, ObjectKind::kRecv);
}

// Unfinished test()s of one thread closer together than kTightPoll mean
// a caller polling in a tight loop, which gives the workers no CPU back
// unless it yields; after kTightPolls of them in a row, test() yields once.
// A caller that yields between polls itself (NCCL's proxy after an idle
// pass, bagua-net-perf) mostly waits out a message in fewer polls than that
// and pays no second yield. Measured (bench/results/small_cpus_2026-11-25):
// a yield in every unfinished test() cost such a caller 10% of the bandwidth
// at 64 MiB; one after every tight poll, 1.1 us of 8.9 in ping-pong; this
// one neither.
constexpr auto kTightPoll = std::chrono::microseconds(20);
constexpr int kTightPolls = 16;

void yieldIfPollingTightly() {
  thread_local std::chrono::steady_clock::time_point previous;
  thread_local int tightPolls = 0;
  auto now = std::chrono::steady_clock::now();
  tightPolls = now - previous < kTightPoll ? tightPolls + 1 : 0;
  previous = now;
  if (tightPolls < kTightPolls) return;
  tightPolls = 0;
  sched_yield();
  previous = std::chrono::steady_clock::now();
}

}  // namespace

ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return guarded("regMr", [&](const char* fn) {
    BAGUA_CHECK_ARG(mhandle != nullptr, "mhandle is NULL");
    *mhandle = nullptr;
    BAGUA_CHECK_ARG(isComm(comm), "unknown comm %p", comm);
    BAGUA_CHECK_ARG(type == NCCL_PTR_HOST,
                    "memory type %d: only host memory (NCCL_PTR_HOST) is supported", type);
    BAGUA_CHECK_ARG(data != nullptr || size == 0, "NULL buffer of %zu bytes", size);
    auto region = std::make_unique<MemoryRegion>();
    region->base = static_cast<const uint8_t*>(data);
    region->size = size;
    Registry::get().add(region.get(), ObjectKind::kRegion);
    *mhandle = region.release();
    return Status::kOk;
  });
}

ncclResult_t deregMr(void* comm, void* mhandle) {
  return guarded("deregMr", [&](const char* fn) {
    BAGUA_CHECK_ARG(isComm(comm), "unknown comm %p", comm);
    BAGUA_CHECK_ARG(Registry::get().is(mhandle, ObjectKind::kRegion), "unknown mhandle %p",
                    mhandle);
    Registry::get().remove(mhandle);
    delete static_cast<MemoryRegion*>(mhandle);
    return Status::kOk;
  });
}

ncclResult_t isend(void* sendComm, void* data, size_t size, void* mhandle, void** request) {
  return guarded("isend", [&](const char* fn) {
    BAGUA_CHECK_ARG(request != nullptr, "request is NULL");
    *request = nullptr;
    BAGUA_CHECK_ARG(Registry::get().is(sendComm, ObjectKind::kSend), "unknown sendComm %p",
                    sendComm);
    BAGUA_CHECK_ARG(data != nullptr || size == 0, "NULL buffer of %zu bytes", size);
    BAGUA_CHECK_ARG(size <= NCCL_MAX_NET_SIZE_BYTES, "size %zu exceeds maxP2pBytes", size);
    if (mhandle != nullptr) {
      const auto* region = static_cast<const MemoryRegion*>(mhandle);
      BAGUA_CHECK_ARG(
          Registry::get().is(mhandle, ObjectKind::kRegion) && region->covers(data, size),
          "buffer %p (+%zu bytes) is not inside the registered region", data, size);
    }
    Request* req = nullptr;
    Status status = static_cast<SendComm*>(sendComm)->isend(data, size, &req);
    *request = req;
    return status;
  });
}

ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, void** mhandles,
                   void** request) {
  return guarded("irecv", [&](const char* fn) {
    BAGUA_CHECK_ARG(request != nullptr, "request is NULL");
    // NCCL may preset *request to NCCL_NET_OPTIONAL_RECV_COMPLETION: always overwrite it.
    *request = nullptr;
    BAGUA_CHECK_ARG(Registry::get().is(recvComm, ObjectKind::kRecv), "unknown recvComm %p",
                    recvComm);
    BAGUA_CHECK_ARG(n == 1, "n = %d receives grouped (this plugin reports maxRecvs = 1)", n);
    BAGUA_CHECK_ARG(data != nullptr && sizes != nullptr, "data or sizes is NULL");
    BAGUA_CHECK_ARG(data[0] != nullptr || sizes[0] == 0, "NULL buffer of %zu bytes", sizes[0]);
    if (mhandles != nullptr && mhandles[0] != nullptr) {
      const auto* region = static_cast<const MemoryRegion*>(mhandles[0]);
      BAGUA_CHECK_ARG(
          Registry::get().is(mhandles[0], ObjectKind::kRegion) && region->covers(data[0], sizes[0]),
          "buffer %p (+%zu bytes) is not inside the registered region", data[0], sizes[0]);
    }
    Request* req = nullptr;
    Status status = static_cast<RecvComm*>(recvComm)->irecv(data[0], sizes[0], &req);
    *request = req;
    return status;
  });
}

ncclResult_t iflush(void* recvComm, int, void**, int*, void**, void** request) {
  return guarded("iflush", [&](const char* fn) {
    BAGUA_CHECK_ARG(request != nullptr, "request is NULL");
    *request = nullptr;  // host memory needs no flush; NCCL treats NULL as done
    BAGUA_CHECK_ARG(Registry::get().is(recvComm, ObjectKind::kRecv), "unknown recvComm %p",
                    recvComm);
    return Status::kOk;
  });
}

ncclResult_t test(void* request, int* done, int* sizes) {
  return guarded("test", [&](const char* fn) {
    BAGUA_CHECK_ARG(request != nullptr && done != nullptr, "request or done is NULL");
    auto* req = static_cast<Request*>(request);
    BAGUA_CHECK_ARG(req->magic == Request::kMagic, "%p is not a request of this plugin", request);
    bool live = Registry::get().is(
        req->comm, req->kind == RequestKind::kSend ? ObjectKind::kSend : ObjectKind::kRecv);
    BAGUA_CHECK_ARG(live && req->inUse.load(std::memory_order_relaxed),
                    "request %p is not in flight", request);
    if (processState().watchesCallerWait()) sampleCallerWait();
    Status status = req->comm->test(req, done, sizes);
    // With no CPU to spare for the workers, a caller that polls again at
    // once would only take CPU from them (BAGUA_NET_TEST_YIELD).
    if (status == Status::kOk && *done == 0 && processState().testYields()) {
      yieldIfPollingTightly();
    }
    return status;
  });
}

}  // namespace bagua::net::api
