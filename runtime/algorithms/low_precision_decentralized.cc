// LowPrecisionDecentralized: compressed differences around the ring.
#include "runtime/algorithms/low_precision_decentralized.h"

#include "kernels/minmax_uint8.h"
#include "runtime/common/error.h"

namespace bagua {

void LowPrecisionDecentralized::setup(const std::vector<BucketLayout>& buckets,
                                      Communicator& comm, DeviceOps& ops) {
  (void)comm;
  replicas_.clear();
  for (const BucketLayout& b : buckets) {
    size_t codes = kernels::compressedChunkBytes(b.paddedNumel);
    Replicas r;
    r.self = ops.allocate(b.bytes());
    r.left = ops.allocate(b.bytes());
    r.right = ops.allocate(b.bytes());
    r.scratch = ops.allocate(b.bytes());
    r.sent = ops.allocate(codes);
    r.received = ops.allocate(2 * codes);
    replicas_.push_back(std::move(r));
  }
}

std::shared_ptr<Work> LowPrecisionDecentralized::communicate(BucketContext& bucket) {
  BAGUA_ENFORCE(bucket.index < replicas_.size(),
                "low_precision_decentralized: communicate() before setup()");
  Replicas& r = replicas_[bucket.index];
  Communicator& comm = *bucket.comm;
  DeviceOps& ops = *bucket.ops;
  const DType dtype = bucket.layout->dtype;
  const size_t numel = bucket.layout->paddedNumel;
  const size_t bytes = bucket.layout->bytes();
  const std::string what = "low_precision_decentralized of bucket " + std::to_string(bucket.index);
  if (bucket.step == 0 || comm.size() == 1) {
    // The initial weights (identical on every rank), or a world of one.
    ops.copy(r.self->data(), bucket.data, bytes);
    ops.copy(r.left->data(), bucket.data, bytes);
    ops.copy(r.right->data(), bucket.data, bytes);
    return ops.fence(what + (bucket.step == 0 ? ": initial replicas" : ""));
  }
  void* d = r.scratch->data();
  ops.addScaled(dtype, d, bucket.data, r.left->data(), numel, 1.0f / 3.0f);
  ops.addScaled(dtype, d, d, r.right->data(), numel, 1.0f / 3.0f);
  ops.addScaled(dtype, d, d, r.self->data(), numel, -5.0f / 3.0f);
  auto* sent = static_cast<uint8_t*>(r.sent->data());
  auto* received = static_cast<uint8_t*>(r.received->data());
  ops.compress(dtype, d, numel, 1, -1, sent);

  const int n = comm.size();
  const auto left = static_cast<size_t>((comm.rank() + n - 1) % n);
  const auto right = static_cast<size_t>((comm.rank() + 1) % n);
  const size_t codes = kernels::compressedChunkBytes(numel);
  std::vector<size_t> sendBytes(static_cast<size_t>(n), 0), zeros(static_cast<size_t>(n), 0);
  std::vector<size_t> recvBytes(static_cast<size_t>(n), 0), recvAt(static_cast<size_t>(n), 0);
  sendBytes[left] = sendBytes[right] = codes;
  recvBytes[left] = recvBytes[right] = codes;
  recvAt[right] = left == right ? 0 : codes;  // two ranks: one block from the one peer
  comm.alltoallv(sent, sendBytes, zeros, received, recvBytes, recvAt);

  ops.decompress(dtype, received, numel, 1, d);
  ops.addScaled(dtype, r.left->data(), r.left->data(), d, numel, 1.0f);
  if (left != right) ops.decompress(dtype, received + codes, numel, 1, d);
  ops.addScaled(dtype, r.right->data(), r.right->data(), d, numel, 1.0f);
  ops.decompress(dtype, sent, numel, 1, d);
  ops.addScaled(dtype, r.self->data(), r.self->data(), d, numel, 1.0f);
  ops.copy(bucket.data, r.self->data(), bytes);
  return ops.fence(what);
}

const void* LowPrecisionDecentralized::replica(size_t bucket, Replica which) const {
  BAGUA_ENFORCE(bucket < replicas_.size(), "low_precision_decentralized: no bucket " +
                                               std::to_string(bucket));
  const Replicas& r = replicas_[bucket];
  DeviceBuffer& b = which == Replica::kSelf ? *r.self : which == Replica::kLeft ? *r.left : *r.right;
  return b.data();
}

AlgorithmInfo lowPrecisionDecentralizedInfo() {
  AlgorithmInfo info;
  info.name = "low_precision_decentralized";
  info.description =
      "decentralized SGD on a ring, exchanging 8-bit compressed weight differences";
  info.communicates = Communicates::kWeights;
  info.trigger = Trigger::kAfterOptimizerStep;
  info.options = {
      {"hierarchical", true, "average inside a node first, then among node leaders"},
      {"communication_interval", int64_t{1}, "communicate every this many steps"},
  };
  info.validate = [](const OptionMap& o) {
    BAGUA_ENFORCE(optionInt(o, "communication_interval") >= 1,
                  "low_precision_decentralized: communication_interval must be at least 1, got " +
                      std::to_string(optionInt(o, "communication_interval")));
  };
  info.factory = [](const OptionMap&) { return std::make_shared<LowPrecisionDecentralized>(); };
  return info;
}

}  // namespace bagua
