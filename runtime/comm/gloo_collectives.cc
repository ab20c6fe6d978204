// GlooCommunicator's collectives: Gloo's options-based algorithms run on the
// worker thread (enqueue), with the typed element-wise reductions of
// kernels/cpu_reduce.h as their reduce function. Arguments are checked before
// anything is enqueued (a failure inside the worker would fail every later
// operation).
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu_reduce.h"
#include "kernels/float_bits.h"
#include "runtime/comm/gloo_communicator.h"
#include "runtime/comm/op_args.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

using ReduceFn = std::function<void(void*, const void*, const void*, size_t)>;

// Calls fn(T{}) with an unsigned type of dtype's size. Gloo's options take
// the element type only for its size (so segments never split an element);
// the reduce function does the typed arithmetic.
template <typename Fn>
void withElementType(DType dtype, Fn&& fn) {
  switch (dtypeSize(dtype)) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    default:
      return fn(uint64_t{});
  }
}

ReduceFn reduceFunction(DType dtype, ReduceOp op) {
  return [dtype, op](void* out, const void* a, const void* b, size_t n) {
    kernels::reduceElementsCpu(dtype, op, out, a, b, n);
  };
}

uint8_t* bytePtr(const void* p) { return static_cast<uint8_t*>(const_cast<void*>(p)); }

// float16 and bfloat16 averages are taken in fp32 (twice the bytes on the
// wire), each value divided by the ranks before the sum, as NCCL's ncclAvg
// does for floats: their sum overflows where their mean does not (40000 and
// 60000 averaged to inf in float16; bfloat16's range is fp32's).
bool averagesWide(DType dtype, ReduceOp op) {
  return op == ReduceOp::kAvg && (dtype == DType::kFloat16 || dtype == DType::kBFloat16);
}

// `in` in fp32, divided by `ranks`: what the ranks then sum is their mean.
std::vector<float> widenShare(DType dtype, const void* in, size_t n, int ranks) {
  std::vector<float> wide(n);
  const auto* bits = static_cast<const uint16_t*>(in);
  for (size_t i = 0; i < n; ++i) {
    wide[i] = dtype == DType::kFloat16 ? kernels::halfToFloat(bits[i])
                                       : kernels::bf16ToFloat(bits[i]);
  }
  kernels::finishAverageCpu(DType::kFloat32, wide.data(), n, ranks);
  return wide;
}

void narrow(DType dtype, const float* wide, void* out, size_t n) {
  auto* bits = static_cast<uint16_t*>(out);
  for (size_t i = 0; i < n; ++i) {
    bits[i] = dtype == DType::kFloat16 ? kernels::floatToHalf(wide[i])
                                       : kernels::floatToBf16(wide[i]);
  }
}

}  // namespace

std::shared_ptr<Work> GlooCommunicator::allreduce(void* data, size_t count, DType dtype,
                                                  ReduceOp op) {
  requireReduction("allreduce", dtype, op);
  checkElementCount("allreduce", count, dtype, 1);
  return enqueue(describeElements("allreduce", count, dtype), [this, data, count, dtype, op] {
    if (count == 0) return;
    if (averagesWide(dtype, op)) {
      std::vector<float> wide = widenShare(dtype, data, count, size_);
      allreduceNow(wide.data(), count, DType::kFloat32, ReduceOp::kSum);
      narrow(dtype, wide.data(), data, count);
      return;
    }
    allreduceNow(data, count, dtype, op);
  });
}

void GlooCommunicator::allreduceNow(void* data, size_t count, DType dtype, ReduceOp op) {
  gloo::AllreduceOptions opts(context_);
  withElementType(dtype, [&](auto t) { opts.setOutput(static_cast<decltype(t)*>(data), count); });
  opts.setReduceFunction(reduceFunction(dtype, op));
  opts.setTimeout(options_.timeout);
  gloo::allreduce(opts);
  if (op == ReduceOp::kAvg) kernels::finishAverageCpu(dtype, data, count, size_);
}

std::shared_ptr<Work> GlooCommunicator::reduce(const void* in, void* out, size_t count, DType dtype,
                                               ReduceOp op, int root) {
  requireReduction("reduce", dtype, op);
  checkRoot("reduce", root, size_);
  checkElementCount("reduce", count, dtype, 1);
  checkRootBuffer("reduce", "out", out, count, rank_, root);
  return enqueue(describeElements("reduce", count, dtype), [this, in, out, count, dtype, op, root] {
    if (count == 0) return;
    if (averagesWide(dtype, op)) {
      std::vector<float> wide = widenShare(dtype, in, count, size_);
      reduceNow(wide.data(), wide.data(), count, DType::kFloat32, ReduceOp::kSum, root);
      if (rank_ == root) narrow(dtype, wide.data(), out, count);
      return;
    }
    reduceNow(in, out, count, dtype, op, root);
  });
}

void GlooCommunicator::reduceNow(const void* in, void* out, size_t count, DType dtype,
                                 ReduceOp op, int root) {
  // Gloo's ring reduce leaves partial results in `out` on every rank: other
  // ranks reduce into a scratch buffer, so their buffers are not written.
  const bool isRoot = rank_ == root;
  std::vector<uint8_t> scratch(isRoot ? 0 : count * dtypeSize(dtype));
  void* target = isRoot ? out : scratch.data();
  gloo::ReduceOptions opts(context_);
  withElementType(dtype, [&](auto t) {
    using T = decltype(t);
    if (in != target) opts.setInput(static_cast<T*>(const_cast<void*>(in)), count);
    opts.setOutput(static_cast<T*>(target), count);
  });
  opts.setRoot(root);
  opts.setReduceFunction(reduceFunction(dtype, op));
  opts.setTimeout(options_.timeout);
  gloo::reduce(opts);
  if (isRoot && op == ReduceOp::kAvg) kernels::finishAverageCpu(dtype, out, count, size_);
}

std::shared_ptr<Work> GlooCommunicator::reduceScatter(const void* in, void* out,
                                                      size_t countPerRank, DType dtype,
                                                      ReduceOp op) {
  requireReduction("reduceScatter", dtype, op);
  checkElementCount("reduceScatter", countPerRank, dtype, size_);
  // Gloo 0.5 has no options-based reduce-scatter: allreduce a copy of the
  // input and keep this rank's chunk (twice the traffic of a true
  // reduce-scatter; fine for the CPU path).
  return enqueue(describeElements("reduceScatter", countPerRank, dtype),
                 [this, in, out, countPerRank, dtype, op] {
                   if (countPerRank == 0) return;
                   const size_t count = countPerRank * static_cast<size_t>(size_);
                   const size_t first = countPerRank * static_cast<size_t>(rank_);
                   if (averagesWide(dtype, op)) {
                     std::vector<float> wide = widenShare(dtype, in, count, size_);
                     allreduceNow(wide.data(), count, DType::kFloat32, ReduceOp::kSum);
                     narrow(dtype, wide.data() + first, out, countPerRank);
                     return;
                   }
                   const size_t bytes = dtypeSize(dtype);
                   std::vector<uint8_t> all(bytePtr(in), bytePtr(in) + count * bytes);
                   allreduceNow(all.data(), count, dtype, op);
                   std::memcpy(out, all.data() + first * bytes, countPerRank * bytes);
                 });
}

std::shared_ptr<Work> GlooCommunicator::allgather(const void* in, void* out, size_t bytesPerRank) {
  return enqueue(describeBytes("allgather", bytesPerRank), [this, in, out, bytesPerRank] {
    if (bytesPerRank == 0) return;
    gloo::AllgatherOptions opts(context_);
    opts.setInput(bytePtr(in), bytesPerRank);
    opts.setOutput(static_cast<uint8_t*>(out), bytesPerRank * size_);
    opts.setTimeout(options_.timeout);
    gloo::allgather(opts);
  });
}

std::shared_ptr<Work> GlooCommunicator::gather(const void* in, void* out, size_t bytesPerRank,
                                               int root) {
  checkRoot("gather", root, size_);
  checkRootBuffer("gather", "out", out, bytesPerRank, rank_, root);
  return enqueue(describeBytes("gather", bytesPerRank), [this, in, out, bytesPerRank, root] {
    if (bytesPerRank == 0) return;
    gloo::GatherOptions opts(context_);
    opts.setInput(bytePtr(in), bytesPerRank);
    if (rank_ == root) opts.setOutput(static_cast<uint8_t*>(out), bytesPerRank * size_);
    opts.setRoot(root);
    opts.setTimeout(options_.timeout);
    gloo::gather(opts);
  });
}

std::shared_ptr<Work> GlooCommunicator::scatter(const void* in, void* out, size_t bytesPerRank,
                                                int root) {
  checkRoot("scatter", root, size_);
  checkRootBuffer("scatter", "in", in, bytesPerRank, rank_, root);
  return enqueue(describeBytes("scatter", bytesPerRank), [this, in, out, bytesPerRank, root] {
    if (bytesPerRank == 0) return;
    gloo::ScatterOptions opts(context_);
    if (rank_ == root) {
      std::vector<uint8_t*> blocks;
      for (int r = 0; r < size_; ++r) blocks.push_back(bytePtr(in) + bytesPerRank * r);
      opts.setInputs(blocks, bytesPerRank);
    }
    opts.setOutput(static_cast<uint8_t*>(out), bytesPerRank);
    opts.setRoot(root);
    opts.setTimeout(options_.timeout);
    gloo::scatter(opts);
  });
}

std::shared_ptr<Work> GlooCommunicator::alltoall(const void* in, void* out, size_t bytesPerRank) {
  return enqueue(describeBytes("alltoall", bytesPerRank), [this, in, out, bytesPerRank] {
    if (bytesPerRank == 0) return;
    gloo::AlltoallOptions opts(context_);
    opts.setInput(bytePtr(in), bytesPerRank * size_);
    opts.setOutput(static_cast<uint8_t*>(out), bytesPerRank * size_);
    opts.setTimeout(options_.timeout);
    gloo::alltoall(opts);
  });
}

std::shared_ptr<Work> GlooCommunicator::alltoallv(const void* in,
                                                  const std::vector<size_t>& sendBytes,
                                                  const std::vector<size_t>& sendOffsets, void* out,
                                                  const std::vector<size_t>& recvBytes,
                                                  const std::vector<size_t>& recvOffsets) {
  checkAlltoallv(rank_, size_, sendBytes, sendOffsets, recvBytes, recvOffsets);
  const size_t sent = totalBytes(sendBytes);
  const size_t received = totalBytes(recvBytes);
  return enqueue(
      "alltoallv of " + std::to_string(sent) + " bytes out, " + std::to_string(received) + " in",
      [=, this] {
        // Gloo's alltoallv takes blocks packed in rank order: other layouts
        // go through packed copies. Every rank takes part even when all its
        // blocks are empty (its peers expect a message from it).
        const bool packedIn = packedInRankOrder(sendBytes, sendOffsets);
        const bool packedOut = packedInRankOrder(recvBytes, recvOffsets);
        std::vector<uint8_t> inCopy(packedIn ? 0 : sent);
        std::vector<uint8_t> outCopy(packedOut ? 0 : received);
        uint8_t empty = 0;  // a valid address for empty buffers
        uint8_t* src = packedIn ? bytePtr(in) : inCopy.data();
        uint8_t* dst = packedOut ? static_cast<uint8_t*>(out) : outCopy.data();
        if (sent == 0 || src == nullptr) src = &empty;
        if (received == 0 || dst == nullptr) dst = &empty;
        for (size_t r = 0, at = 0; !packedIn && r < sendBytes.size(); at += sendBytes[r++]) {
          if (sendBytes[r] > 0) std::memcpy(src + at, bytePtr(in) + sendOffsets[r], sendBytes[r]);
        }
        gloo::AlltoallvOptions opts(context_);
        opts.setInput(src, std::vector<int64_t>(sendBytes.begin(), sendBytes.end()));
        opts.setOutput(dst, std::vector<int64_t>(recvBytes.begin(), recvBytes.end()));
        opts.setTimeout(options_.timeout);
        gloo::alltoallv(opts);
        for (size_t r = 0, at = 0; !packedOut && r < recvBytes.size(); at += recvBytes[r++]) {
          if (recvBytes[r] > 0) {
            std::memcpy(static_cast<uint8_t*>(out) + recvOffsets[r], dst + at, recvBytes[r]);
          }
        }
      });
}

std::shared_ptr<Work> GlooCommunicator::broadcast(void* data, size_t bytes, int root) {
  checkRoot("broadcast", root, size_);
  return enqueue(describeBytes("broadcast", bytes), [this, data, bytes, root] {
    if (bytes == 0) return;
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(data), bytes);
    opts.setRoot(root);
    opts.setTimeout(options_.timeout);
    gloo::broadcast(opts);
  });
}

std::shared_ptr<Work> GlooCommunicator::barrier() {
  return enqueue("barrier", [this] {
    gloo::BarrierOptions opts(context_);
    opts.setTimeout(options_.timeout);
    gloo::barrier(opts);
  });
}

}  // namespace bagua
