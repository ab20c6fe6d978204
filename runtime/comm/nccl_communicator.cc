// NcclCommunicator: setup, event-backed Work, abort, broadcast, point to
// point and barrier (the other collectives: nccl_collectives.cc).
#include "runtime/comm/nccl_communicator.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "runtime/comm/op_args.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_scope.h"
#include "runtime/cuda/stream_event.h"
#include "runtime/store/barrier.h"

namespace bagua {
namespace {

// Completion of the stream work enqueued before it, through a CUDA event;
// a timeout aborts the communicator so the stream drains with an error.
class EventWork final : public Work, public StreamEvent {
 public:
  EventWork(NcclCommunicator& comm, std::string what, std::chrono::milliseconds timeout)
      : comm_(comm), what_(std::move(what)), timeout_(timeout) {
    BAGUA_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    BAGUA_CUDA_CHECK(cudaEventRecord(event_, comm.stream()));
  }
  ~EventWork() override { cudaEventDestroy(event_); }

  bool done() override {
    cudaError_t status = cudaEventQuery(event_);
    if (status == cudaSuccess) return true;
    if (status != cudaErrorNotReady) {
      BAGUA_THROW(CudaError, what_ + " failed: " + cudaGetErrorString(status));
    }
    ncclResult_t async = ncclSuccess;
    std::string detail;
    if (!comm_.asyncError(&async, &detail)) {
      BAGUA_THROW(CommError, what_ + " failed: the NCCL communicator was aborted after an "
                                     "earlier failure");
    }
    if (async != ncclSuccess && async != ncclInProgress) {
      BAGUA_THROW(CommError,
                  what_ + " failed: " + ncclGetErrorString(async) + " (" + detail + ")");
    }
    return false;
  }

  void wait(std::chrono::milliseconds timeout) override {
    auto deadline = std::chrono::steady_clock::now() + std::min(timeout, timeout_);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) {
        comm_.abort(what_ + " timed out");
        BAGUA_THROW(TimeoutError, what_ + " did not finish within " +
                                      std::to_string(std::min(timeout, timeout_).count()) +
                                      " ms; the NCCL communicator was aborted");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  const std::string& what() const override { return what_; }
  cudaEvent_t event() const override { return event_; }

 private:
  NcclCommunicator& comm_;
  std::string what_;
  std::chrono::milliseconds timeout_;
  cudaEvent_t event_ = nullptr;
};

// The live communicators of the process, oldest first (shutdownAll).
struct LiveCommunicators {
  std::mutex mutex;
  std::vector<NcclCommunicator*> list;
};

LiveCommunicators& live() {
  static auto* registry = new LiveCommunicators();  // never destroyed: used at exit
  return *registry;
}

}  // namespace

NcclCommunicator::NcclCommunicator(Store& store, int rank, int size, int device, Options options)
    : rank_(rank), size_(size), device_(device), options_(std::move(options)) {
  BAGUA_ENFORCE(size >= 1 && rank >= 0 && rank < size,
                "NcclCommunicator: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                    " is out of range");
  BAGUA_CUDA_CHECK(cudaSetDevice(device));
  ncclUniqueId id;
  std::string key = options_.prefix + "/unique_id";
  if (rank == 0) {
    BAGUA_NCCL_CHECK(ncclGetUniqueId(&id));
    std::vector<uint8_t> bytes(sizeof(id));
    std::memcpy(bytes.data(), &id, sizeof(id));
    store.set(key, bytes);
  }
  // NCCL's init has no deadline of its own: a rank that never comes (it
  // crashed, or the job's world size is wrong) would leave the others in
  // ncclCommInitRank for ever. Every rank meets here first, within the
  // timeout, or the error names the ranks that did not.
  try {
    bagua::barrier(store, rank, size, options_.prefix + "/init", options_.timeout);
  } catch (const TimeoutError& e) {
    BAGUA_THROW(TimeoutError, "NCCL communicator setup (rank " + std::to_string(rank) + " of " +
                                  std::to_string(size) + "): " + e.what());
  }
  if (rank != 0) {
    std::vector<uint8_t> bytes = store.get(key, options_.timeout);
    BAGUA_ENFORCE(bytes.size() == sizeof(id), "NCCL unique id in the store has the wrong size");
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  if (options_.background) {
    ncclConfig_t config;
    config.nChannelsPerNetPeer = 1;
    BAGUA_NCCL_CHECK(ncclCommInitRankConfig(&comm_, size, id, rank, &config));
  } else {
    BAGUA_NCCL_CHECK(ncclCommInitRank(&comm_, size, id, rank));
  }
  int lowest = 0;
  int highest = 0;
  BAGUA_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  BAGUA_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking,
                                                options_.background ? lowest : highest));
  BAGUA_CUDA_CHECK(cudaMalloc(&scratch_, sizeof(float)));
  std::lock_guard<std::mutex> lock(live().mutex);
  live().list.push_back(this);
}

NcclCommunicator::~NcclCommunicator() {
  {
    std::lock_guard<std::mutex> lock(live().mutex);
    auto& list = live().list;
    list.erase(std::remove(list.begin(), list.end(), this), list.end());
  }
  if (comm_ != nullptr) {
    if (aborted_) {
      ncclCommAbort(comm_);
    } else {
      shutdown();
    }
  }
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void NcclCommunicator::shutdown() {
  if (aborted_ || shut_down_.exchange(true) || comm_ == nullptr) return;
  cudaStreamSynchronize(stream_);  // the stream knows its device: the caller's stays current
  std::unique_lock<std::shared_mutex> lock(commMutex_);
  ncclCommDestroy(comm_);
  comm_ = nullptr;
}

bool NcclCommunicator::asyncError(ncclResult_t* result, std::string* detail) {
  std::shared_lock<std::shared_mutex> lock(commMutex_);
  if (aborted_ || comm_ == nullptr) return false;
  if (ncclCommGetAsyncError(comm_, result) != ncclSuccess) *result = ncclSuccess;
  if (*result != ncclSuccess && *result != ncclInProgress) *detail = ncclGetLastError(comm_);
  return true;
}

void NcclCommunicator::shutdownAll() {
  std::lock_guard<std::mutex> lock(live().mutex);
  auto& list = live().list;
  for (auto it = list.rbegin(); it != list.rend(); ++it) (*it)->shutdown();
}

void NcclCommunicator::checkUsable(const char* op) const {
  if (aborted_) {
    BAGUA_THROW(CommError, std::string(op) +
                               ": the NCCL communicator was aborted after an "
                               "earlier failure");
  }
  if (shut_down_) {
    BAGUA_THROW(CommError, std::string(op) +
                               ": the NCCL communicator was shut down (process exit or "
                               "bagua's shutdown_nccl())");
  }
}

std::shared_ptr<Work> NcclCommunicator::record(std::string what) {
  DeviceScope scope(device_);  // the event must live on the stream's device, whoever calls
  return std::make_shared<EventWork>(*this, std::move(what), options_.timeout);
}

void NcclCommunicator::abort(const std::string& why) {
  if (aborted_.exchange(true)) return;
  fprintf(stderr, "[bagua] aborting NCCL communicator (rank %d of %d): %s\n", rank_, size_,
          why.c_str());
  std::unique_lock<std::shared_mutex> lock(commMutex_);
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

std::shared_ptr<Work> NcclCommunicator::broadcast(void* data, size_t bytes, int root) {
  checkUsable("broadcast");
  checkRoot("broadcast", root, size_);
  BAGUA_NCCL_CHECK(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream_));
  return record(describeBytes("broadcast", bytes));
}

std::shared_ptr<Work> NcclCommunicator::send(const void* data, size_t bytes, int peer) {
  checkUsable("send");
  checkPeer("send", peer, rank_, size_);
  BAGUA_NCCL_CHECK(ncclSend(data, bytes, ncclUint8, peer, comm_, stream_));
  return record(describeBytes("send", bytes));
}

std::shared_ptr<Work> NcclCommunicator::recv(void* data, size_t bytes, int peer) {
  checkUsable("recv");
  checkPeer("recv", peer, rank_, size_);
  BAGUA_NCCL_CHECK(ncclRecv(data, bytes, ncclUint8, peer, comm_, stream_));
  return record(describeBytes("recv", bytes));
}

std::shared_ptr<Work> NcclCommunicator::barrier() {
  checkUsable("barrier");
  BAGUA_NCCL_CHECK(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_));
  return record("barrier");
}

void NcclCommunicator::waitEvent(cudaEvent_t event) {
  BAGUA_CUDA_CHECK(cudaStreamWaitEvent(stream_, event, 0));
}

std::shared_ptr<Work> NcclCommunicator::fence(std::string what) { return record(std::move(what)); }

void NcclCommunicator::waitFor(std::shared_ptr<Work> work) {
  // Any stream's event (ours, or the training's StepOps fence): the GPU waits.
  if (auto* event = dynamic_cast<StreamEvent*>(work.get())) {
    BAGUA_CUDA_CHECK(cudaStreamWaitEvent(stream_, event->event(), 0));
    return;
  }
  work->wait(options_.timeout);  // not a stream's: only the host can wait for it
}

}  // namespace bagua
