// ByteGrad: compressed scatter-reduce then compressed allgather.
#include "runtime/algorithms/bytegrad.h"

#include "kernels/minmax_uint4.h"
#include "kernels/minmax_uint8.h"
#include "runtime/common/error.h"

namespace bagua {

size_t ByteGrad::compressedBytes(size_t elems) const {
  return options_.codec == Options::Codec::kMinMaxUInt4 ? kernels::compressedChunkBytes4(elems)
                                                        : kernels::compressedChunkBytes(elems);
}

void ByteGrad::compress(DeviceOps& ops, DType dtype, const void* src, size_t chunk, int n,
                        int target, uint8_t* dst) const {
  if (options_.codec == Options::Codec::kMinMaxUInt4) {
    ops.compress4(dtype, src, chunk, n, target, dst);
  } else {
    ops.compress(dtype, src, chunk, n, target, dst);
  }
}

void ByteGrad::decompress(DeviceOps& ops, DType dtype, const uint8_t* src, size_t chunk, int n,
                          void* dst) const {
  if (options_.codec == Options::Codec::kMinMaxUInt4) {
    ops.decompress4(dtype, src, chunk, n, dst);
  } else {
    ops.decompress(dtype, src, chunk, n, dst);
  }
}

DeviceBuffer* ByteGrad::residual(size_t bucket) {
  BAGUA_ENFORCE(bucket < scratch_.size(), "bytegrad: no bucket " + std::to_string(bucket));
  return scratch_[bucket].residual.get();
}

void ByteGrad::setup(const std::vector<BucketLayout>& buckets, Communicator& comm, DeviceOps& ops) {
  size_t n = static_cast<size_t>(comm.size());
  scratch_.clear();
  for (const BucketLayout& b : buckets) {
    BAGUA_ENFORCE(b.paddedNumel % n == 0, "bytegrad: bucket of " + std::to_string(b.paddedNumel) +
                                              " elements is not a multiple of the world size " +
                                              std::to_string(n));
    size_t stride = compressedBytes(b.paddedNumel / n);
    Scratch s;
    s.send = ops.allocate(stride * n);
    s.recv = ops.allocate(stride * n);
    s.own = ops.allocate(stride);
    s.gathered = ops.allocate(stride * n);
    if (options_.errorFeedback) {
      s.residual = ops.allocate(b.bytes());
      s.decoded = ops.allocate(b.bytes());
    }
    scratch_.push_back(std::move(s));
  }
}

std::shared_ptr<Work> ByteGrad::communicate(BucketContext& bucket) {
  BAGUA_ENFORCE(bucket.index < scratch_.size(), "bytegrad: communicate() before setup()");
  Scratch& s = scratch_[bucket.index];
  Communicator& comm = *bucket.comm;
  DeviceOps& ops = *bucket.ops;
  const DType dtype = bucket.layout->dtype;
  const int n = comm.size();
  const size_t numel = bucket.layout->paddedNumel;
  const size_t chunk = numel / static_cast<size_t>(n);
  const size_t stride = compressedBytes(chunk);
  auto* send = static_cast<uint8_t*>(s.send->data());
  auto* recv = static_cast<uint8_t*>(s.recv->data());
  auto* own = static_cast<uint8_t*>(s.own->data());
  auto* gathered = static_cast<uint8_t*>(s.gathered->data());
  if (n == 1) {
    // The average of one rank is its gradient: compressing would send
    // nothing and only add two rounds of 8-bit error (the leaders'
    // communicator of hierarchical ByteGrad or QAdam on one node).
    return ops.fence("bytegrad of bucket " + std::to_string(bucket.index) + " (one rank)");
  }

  if (options_.errorFeedback) {
    ops.addScaled(dtype, bucket.data, bucket.data, s.residual->data(), numel, 1.0f);
  }
  compress(ops, dtype, bucket.data, chunk, n, -1, send);
  if (options_.errorFeedback) {
    // residual = what this rank meant to send minus what the codes say; 0
    // where a chunk held an Inf or NaN (decoded as NaN): carried on, one
    // overflowing step would make every later one NaN.
    decompress(ops, dtype, send, chunk, n, s.decoded->data());
    ops.residual(dtype, s.residual->data(), bucket.data, s.decoded->data(), numel);
  }
  comm.alltoall(send, recv, stride);
  decompress(ops, dtype, recv, chunk, n, bucket.data);
  ops.reduceChunks(dtype, bucket.data, chunk, n, comm.rank(), options_.average);
  compress(ops, dtype, bucket.data, chunk, n, comm.rank(), own);
  comm.allgather(own, gathered, stride);
  decompress(ops, dtype, gathered, chunk, n, bucket.data);
  return ops.fence("bytegrad of bucket " + std::to_string(bucket.index) + " (" +
                   std::to_string(numel) + " " + dtypeName(dtype) + ")");
}

AlgorithmInfo byteGradInfo() {
  AlgorithmInfo info;
  info.name = "bytegrad";
  info.description = "gradients averaged in 8 bits (min-max quantized scatter-reduce, allgather)";
  info.communicates = Communicates::kGradients;
  info.trigger = Trigger::kTensorReady;
  info.options = {
      {"hierarchical", true, "reduce inside a node first, then among node leaders"},
      {"average", true, "mean over ranks (false: sum)"},
      {"error_feedback", false, "carry the quantization error into the next step (new)"},
  };
  info.factory = [](const OptionMap& o) {
    ByteGrad::Options options;
    options.average = optionBool(o, "average");
    options.errorFeedback = optionBool(o, "error_feedback");
    return std::make_shared<ByteGrad>(options);
  };
  return info;
}

}  // namespace bagua
