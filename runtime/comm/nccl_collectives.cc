// NcclCommunicator's collectives: NCCL's own where it has them (allreduce,
// reduce, reduce-scatter, allgather; a background communicator's allgather is
// point to point), grouped ncclSend/ncclRecv for gather,
// scatter, alltoall and alltoallv, and for the bitwise ops (which NCCL lacks)
// a collection of every rank's slice followed by kernels::reduceSlices.
// Everything is enqueued on the communicator's stream.
#include <cstdint>

#include "kernels/reduce_slices_cuda.h"
#include "runtime/comm/nccl_communicator.h"
#include "runtime/comm/op_args.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_scope.h"

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

// NCCL's operator for a non-bitwise op (bitwise ops take enqueueBitwise).
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

const uint8_t* bytesAt(const void* p, size_t offset) {
  return static_cast<const uint8_t*>(p) + offset;
}

uint8_t* bytesAt(void* p, size_t offset) { return static_cast<uint8_t*>(p) + offset; }

}  // namespace

std::shared_ptr<Work> NcclCommunicator::allreduce(void* data, size_t count, DType dtype,
                                                  ReduceOp op) {
  checkUsable("allreduce");
  requireReduction("allreduce", dtype, op);
  if (isBitwiseOp(op)) {
    enqueueBitwise(Collect::kAllgather, data, data, count, dtype, op, -1);
  } else {
    BAGUA_NCCL_CHECK(
        ncclAllReduce(data, data, count, ncclType(dtype), ncclOp(op, size_), comm_, stream_));
  }
  return record(describeElements("allreduce", count, dtype));
}

std::shared_ptr<Work> NcclCommunicator::reduce(const void* in, void* out, size_t count, DType dtype,
                                               ReduceOp op, int root) {
  checkUsable("reduce");
  requireReduction("reduce", dtype, op);
  checkRoot("reduce", root, size_);
  checkRootBuffer("reduce", "out", out, count, rank_, root);
  if (isBitwiseOp(op)) {
    enqueueBitwise(Collect::kGatherToRoot, in, out, count, dtype, op, root);
  } else {
    BAGUA_NCCL_CHECK(
        ncclReduce(in, out, count, ncclType(dtype), ncclOp(op, size_), root, comm_, stream_));
  }
  return record(describeElements("reduce", count, dtype));
}

std::shared_ptr<Work> NcclCommunicator::reduceScatter(const void* in, void* out,
                                                      size_t countPerRank, DType dtype,
                                                      ReduceOp op) {
  checkUsable("reduceScatter");
  requireReduction("reduceScatter", dtype, op);
  checkElementCount("reduceScatter", countPerRank, dtype, size_);
  if (isBitwiseOp(op)) {
    enqueueBitwise(Collect::kAlltoall, in, out, countPerRank, dtype, op, -1);
  } else {
    BAGUA_NCCL_CHECK(ncclReduceScatter(in, out, countPerRank, ncclType(dtype), ncclOp(op, size_),
                                       comm_, stream_));
  }
  return record(describeElements("reduceScatter", countPerRank, dtype));
}

std::shared_ptr<Work> NcclCommunicator::allgather(const void* in, void* out, size_t bytesPerRank) {
  checkUsable("allgather");
  if (options_.background) {
    enqueueAllgatherP2p(in, out, bytesPerRank);
  } else {
    BAGUA_NCCL_CHECK(ncclAllGather(in, out, bytesPerRank, ncclUint8, comm_, stream_));
  }
  return record(describeBytes("allgather", bytesPerRank));
}

std::shared_ptr<Work> NcclCommunicator::gather(const void* in, void* out, size_t bytesPerRank,
                                               int root) {
  checkUsable("gather");
  checkRoot("gather", root, size_);
  checkRootBuffer("gather", "out", out, bytesPerRank, rank_, root);
  enqueueGather(in, out, bytesPerRank, root);
  return record(describeBytes("gather", bytesPerRank));
}

std::shared_ptr<Work> NcclCommunicator::scatter(const void* in, void* out, size_t bytesPerRank,
                                                int root) {
  checkUsable("scatter");
  checkRoot("scatter", root, size_);
  checkRootBuffer("scatter", "in", in, bytesPerRank, rank_, root);
  if (bytesPerRank > 0) {
    if (rank_ == root) {
      const uint8_t* own = bytesAt(in, bytesPerRank * root);
      if (own != out) {
        BAGUA_CUDA_CHECK(
            cudaMemcpyAsync(out, own, bytesPerRank, cudaMemcpyDeviceToDevice, stream_));
      }
    }
    BAGUA_NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < size_ && rank_ == root; ++r) {
      if (r == root) continue;
      BAGUA_NCCL_CHECK(
          ncclSend(bytesAt(in, bytesPerRank * r), bytesPerRank, ncclUint8, r, comm_, stream_));
    }
    if (rank_ != root) {
      BAGUA_NCCL_CHECK(ncclRecv(out, bytesPerRank, ncclUint8, root, comm_, stream_));
    }
    BAGUA_NCCL_CHECK(ncclGroupEnd());
  }
  return record(describeBytes("scatter", bytesPerRank));
}

std::shared_ptr<Work> NcclCommunicator::alltoall(const void* in, void* out, size_t bytesPerRank) {
  checkUsable("alltoall");
  enqueueAlltoall(in, out, bytesPerRank);
  return record(describeBytes("alltoall", bytesPerRank));
}

std::shared_ptr<Work> NcclCommunicator::alltoallv(const void* in,
                                                  const std::vector<size_t>& sendBytes,
                                                  const std::vector<size_t>& sendOffsets, void* out,
                                                  const std::vector<size_t>& recvBytes,
                                                  const std::vector<size_t>& recvOffsets) {
  checkUsable("alltoallv");
  checkAlltoallv(rank_, size_, sendBytes, sendOffsets, recvBytes, recvOffsets);
  const size_t self = static_cast<size_t>(rank_);
  if (sendBytes[self] > 0) {
    BAGUA_CUDA_CHECK(cudaMemcpyAsync(bytesAt(out, recvOffsets[self]),
                                     bytesAt(in, sendOffsets[self]), sendBytes[self],
                                     cudaMemcpyDeviceToDevice, stream_));
  }
  // Empty blocks are skipped on both sides (recvBytes[j] on this rank is
  // sendBytes[this rank] on rank j).
  BAGUA_NCCL_CHECK(ncclGroupStart());
  for (size_t peer = 0; peer < sendBytes.size(); ++peer) {
    if (peer == self) continue;
    const int p = static_cast<int>(peer);
    if (sendBytes[peer] > 0) {
      BAGUA_NCCL_CHECK(
          ncclSend(bytesAt(in, sendOffsets[peer]), sendBytes[peer], ncclUint8, p, comm_, stream_));
    }
    if (recvBytes[peer] > 0) {
      BAGUA_NCCL_CHECK(
          ncclRecv(bytesAt(out, recvOffsets[peer]), recvBytes[peer], ncclUint8, p, comm_, stream_));
    }
  }
  BAGUA_NCCL_CHECK(ncclGroupEnd());
  return record("alltoallv of " + std::to_string(totalBytes(sendBytes)) + " bytes out, " +
                std::to_string(totalBytes(recvBytes)) + " in");
}

void NcclCommunicator::enqueueGather(const void* in, void* out, size_t bytesPerRank, int root) {
  if (bytesPerRank == 0) return;
  if (rank_ == root) {
    uint8_t* own = bytesAt(out, bytesPerRank * root);
    if (own != in) {
      BAGUA_CUDA_CHECK(cudaMemcpyAsync(own, in, bytesPerRank, cudaMemcpyDeviceToDevice, stream_));
    }
  }
  BAGUA_NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < size_ && rank_ == root; ++r) {
    if (r == root) continue;
    BAGUA_NCCL_CHECK(
        ncclRecv(bytesAt(out, bytesPerRank * r), bytesPerRank, ncclUint8, r, comm_, stream_));
  }
  if (rank_ != root) BAGUA_NCCL_CHECK(ncclSend(in, bytesPerRank, ncclUint8, root, comm_, stream_));
  BAGUA_NCCL_CHECK(ncclGroupEnd());
}

// Every rank sends its block to every other: the bytes of a ring allgather,
// on the point-to-point channels (one per peer on a background communicator).
void NcclCommunicator::enqueueAllgatherP2p(const void* in, void* out, size_t bytesPerRank) {
  if (bytesPerRank == 0) return;
  uint8_t* own = bytesAt(out, bytesPerRank * static_cast<size_t>(rank_));
  if (own != in) {
    BAGUA_CUDA_CHECK(cudaMemcpyAsync(own, in, bytesPerRank, cudaMemcpyDeviceToDevice, stream_));
  }
  BAGUA_NCCL_CHECK(ncclGroupStart());
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    BAGUA_NCCL_CHECK(ncclSend(in, bytesPerRank, ncclUint8, peer, comm_, stream_));
    BAGUA_NCCL_CHECK(ncclRecv(bytesAt(out, bytesPerRank * static_cast<size_t>(peer)),
                              bytesPerRank, ncclUint8, peer, comm_, stream_));
  }
  BAGUA_NCCL_CHECK(ncclGroupEnd());
}

void NcclCommunicator::enqueueAlltoall(const void* in, void* out, size_t bytesPerRank) {
  BAGUA_NCCL_CHECK(ncclGroupStart());
  for (int peer = 0; peer < size_; ++peer) {
    const size_t offset = bytesPerRank * static_cast<size_t>(peer);
    BAGUA_NCCL_CHECK(ncclSend(bytesAt(in, offset), bytesPerRank, ncclUint8, peer, comm_, stream_));
    BAGUA_NCCL_CHECK(ncclRecv(bytesAt(out, offset), bytesPerRank, ncclUint8, peer, comm_, stream_));
  }
  BAGUA_NCCL_CHECK(ncclGroupEnd());
}

void NcclCommunicator::enqueueBitwise(Collect how, const void* in, void* out, size_t count,
                                      DType dtype, ReduceOp op, int root) {
  checkElementCount("bitwise reduction", count, dtype, size_);
  const size_t sliceBytes = count * dtypeSize(dtype);
  if (sliceBytes == 0) return;
  const bool reduces = how != Collect::kGatherToRoot || rank_ == root;
  DeviceScope scope(device_);
  // Stream-ordered scratch: freed on the stream after the kernel read it.
  void* slices = nullptr;
  if (reduces) BAGUA_CUDA_CHECK(cudaMallocAsync(&slices, sliceBytes * size_, stream_));
  switch (how) {
    case Collect::kAllgather:
      BAGUA_NCCL_CHECK(ncclAllGather(in, slices, sliceBytes, ncclUint8, comm_, stream_));
      break;
    case Collect::kGatherToRoot:
      enqueueGather(in, slices, sliceBytes, root);
      break;
    case Collect::kAlltoall:
      enqueueAlltoall(in, slices, sliceBytes);
      break;
  }
  if (!reduces) return;
  BAGUA_CUDA_CHECK(kernels::reduceSlices(dtype, op, slices, count, size_, out, stream_));
  BAGUA_CUDA_CHECK(cudaFreeAsync(slices, stream_));
}

}  // namespace bagua
