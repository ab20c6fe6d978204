// Low-precision decentralized SGD (Bagua's LowPrecisionDecentralizedAlgorithm,
// DCD-PSGD, arXiv 1803.06443) on a ring: rank r's neighbours are r-1 and
// r+1; the mixing weights are 1/3 each for itself and its two neighbours.
//
// Every rank keeps, per bucket, three replicas that start as the (broadcast,
// identical) initial weights: x̂_self, and its view of its neighbours x̂_L and
// x̂_R. After each optimizer step (the bucket holds x = x̂_self - lr g):
//   d = x + x̂_L/3 + x̂_R/3 - 5/3 x̂_self      (= mix(x̂) - lr g - x̂_self)
//   Q(d): MinMaxUInt8 with one chunk per bucket (kernels/minmax_uint8.h)
//   Q(d) goes to both neighbours; Q(d_L), Q(d_R) come back (one alltoallv)
//   x̂_L += deq(Q(d_L)), x̂_R += deq(Q(d_R)), x̂_self += deq(Q(d)); x <- x̂_self
// Invariant (exact, tested): rank r's x̂_self equals its left neighbour's
// x̂_R and its right neighbour's x̂_L bit for bit: they add the same decoded
// bytes to the same starting values.
//
// The first communicate() (step 0) only records the initial weights in the
// replicas: the caller runs it once right after the weights were broadcast.
// Two ranks: both neighbours are the one peer (one block each way, applied
// to both views). One rank: x̂_self follows the weights, nothing is sent.
#pragma once

#include <memory>
#include <vector>

#include "runtime/algorithms/algorithm.h"
#include "runtime/algorithms/registry.h"

namespace bagua {

class LowPrecisionDecentralized final : public Algorithm {
 public:
  const char* name() const override { return "low_precision_decentralized"; }
  void setup(const std::vector<BucketLayout>& buckets, Communicator& comm, DeviceOps& ops) override;
  std::shared_ptr<Work> communicate(BucketContext& bucket) override;

  // A bucket's replica, for tests and diagnostics (device memory).
  enum class Replica { kSelf, kLeft, kRight };
  const void* replica(size_t bucket, Replica which) const;

 private:
  struct Replicas {
    std::unique_ptr<DeviceBuffer> self, left, right;
    std::unique_ptr<DeviceBuffer> scratch;         // d, then each decoded difference
    std::unique_ptr<DeviceBuffer> sent, received;  // codes: one chunk; two chunks
  };
  std::vector<Replicas> replicas_;
};

// Its registry entry ("low_precision_decentralized").
AlgorithmInfo lowPrecisionDecentralizedInfo();

}  // namespace bagua
