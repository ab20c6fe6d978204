// NcclCommunicator.
#include "runtime/comm/nccl_communicator.h"

#include <cstring>
#include <thread>
#include <vector>

#include "runtime/cuda/cuda_check.h"

namespace bagua {
namespace {

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kInt8:
      return ncclInt8;
    case DType::kUInt8:
      return ncclUint8;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
  }
  BAGUA_THROW(InvalidArgument, "unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

ncclRedOp_t ncclOp(ReduceOp op, int size) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return size == 1 ? ncclSum : ncclAvg;  // see the header: one-rank ncclAvg bug
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kProduct:
      return ncclProd;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      break;
  }
  BAGUA_THROW(InvalidArgument, std::string("NCCL has no ") + reduceOpName(op) + " reduction");
}

// Completion of the stream work enqueued before it, through a CUDA event;
// a timeout aborts the communicator so the stream drains with an error.
class EventWork final : public Work {
 public:
  EventWork(NcclCommunicator& comm, ncclComm_t nccl, std::string what,
            std::chrono::milliseconds timeout)
      : comm_(comm), nccl_(nccl), what_(std::move(what)), timeout_(timeout) {
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
    if (ncclCommGetAsyncError(nccl_, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
      BAGUA_THROW(CommError, what_ + " failed: " + ncclGetErrorString(async) + " (" +
                                 ncclGetLastError(nccl_) + ")");
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

 private:
  NcclCommunicator& comm_;
  ncclComm_t nccl_;
  std::string what_;
  std::chrono::milliseconds timeout_;
  cudaEvent_t event_ = nullptr;
};

std::string describe(const char* op, size_t count, const char* unit) {
  return std::string(op) + " of " + std::to_string(count) + " " + unit;
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
  } else {
    std::vector<uint8_t> bytes = store.get(key, options_.timeout);
    BAGUA_ENFORCE(bytes.size() == sizeof(id), "NCCL unique id in the store has the wrong size");
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  BAGUA_NCCL_CHECK(ncclCommInitRank(&comm_, size, id, rank));
  int lowest = 0;
  int highest = 0;
  BAGUA_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  BAGUA_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, highest));
  BAGUA_CUDA_CHECK(cudaMalloc(&scratch_, sizeof(float)));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ != nullptr) {
    if (aborted_) {
      ncclCommAbort(comm_);
    } else {
      cudaStreamSynchronize(stream_);
      ncclCommDestroy(comm_);
    }
  }
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void NcclCommunicator::checkUsable(const char* op) const {
  if (aborted_) {
    BAGUA_THROW(CommError, std::string(op) +
                               ": the NCCL communicator was aborted after an "
                               "earlier failure");
  }
}

std::shared_ptr<Work> NcclCommunicator::record(std::string what) {
  return std::make_shared<EventWork>(*this, comm_, std::move(what), options_.timeout);
}

void NcclCommunicator::abort(const std::string& why) {
  if (aborted_.exchange(true)) return;
  fprintf(stderr, "[bagua] aborting NCCL communicator (rank %d of %d): %s\n", rank_, size_,
          why.c_str());
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

std::shared_ptr<Work> NcclCommunicator::allreduce(void* data, size_t count, DType dtype,
                                                  ReduceOp op) {
  checkUsable("allreduce");
  requireReduction("allreduce", dtype, op);
  BAGUA_NCCL_CHECK(
      ncclAllReduce(data, data, count, ncclType(dtype), ncclOp(op, size_), comm_, stream_));
  return record(describe("allreduce", count, dtypeName(dtype)));
}

std::shared_ptr<Work> NcclCommunicator::reduceScatter(const void* in, void* out,
                                                      size_t countPerRank, DType dtype,
                                                      ReduceOp op) {
  checkUsable("reduceScatter");
  requireReduction("reduceScatter", dtype, op);
  BAGUA_NCCL_CHECK(
      ncclReduceScatter(in, out, countPerRank, ncclType(dtype), ncclOp(op, size_), comm_, stream_));
  return record(describe("reduceScatter", countPerRank, dtypeName(dtype)));
}

std::shared_ptr<Work> NcclCommunicator::allgather(const void* in, void* out, size_t bytesPerRank) {
  checkUsable("allgather");
  BAGUA_NCCL_CHECK(ncclAllGather(in, out, bytesPerRank, ncclUint8, comm_, stream_));
  return record(describe("allgather", bytesPerRank, "bytes"));
}

std::shared_ptr<Work> NcclCommunicator::alltoall(const void* in, void* out, size_t bytesPerRank) {
  checkUsable("alltoall");
  BAGUA_NCCL_CHECK(ncclGroupStart());
  for (int peer = 0; peer < size_; ++peer) {
    const auto* src = static_cast<const uint8_t*>(in) + bytesPerRank * static_cast<size_t>(peer);
    auto* dst = static_cast<uint8_t*>(out) + bytesPerRank * static_cast<size_t>(peer);
    BAGUA_NCCL_CHECK(ncclSend(src, bytesPerRank, ncclUint8, peer, comm_, stream_));
    BAGUA_NCCL_CHECK(ncclRecv(dst, bytesPerRank, ncclUint8, peer, comm_, stream_));
  }
  BAGUA_NCCL_CHECK(ncclGroupEnd());
  return record(describe("alltoall", bytesPerRank, "bytes"));
}

std::shared_ptr<Work> NcclCommunicator::broadcast(void* data, size_t bytes, int root) {
  checkUsable("broadcast");
  BAGUA_NCCL_CHECK(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream_));
  return record(describe("broadcast", bytes, "bytes"));
}

std::shared_ptr<Work> NcclCommunicator::send(const void* data, size_t bytes, int peer) {
  checkUsable("send");
  BAGUA_NCCL_CHECK(ncclSend(data, bytes, ncclUint8, peer, comm_, stream_));
  return record(describe("send", bytes, "bytes"));
}

std::shared_ptr<Work> NcclCommunicator::recv(void* data, size_t bytes, int peer) {
  checkUsable("recv");
  BAGUA_NCCL_CHECK(ncclRecv(data, bytes, ncclUint8, peer, comm_, stream_));
  return record(describe("recv", bytes, "bytes"));
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

}  // namespace bagua
