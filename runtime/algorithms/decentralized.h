// Decentralized SGD, full precision (Bagua's DecentralizedAlgorithm): the
// buckets hold the weights as they were at the start of the step; each is
// replaced by an average with peers, and the Reducer copies the averages
// back into the weights only at wait() (after backward), so the optimizer
// then applies the gradient computed at the old weights:
// x <- avg(x_self, x_peers) - lr g(x_self).
//
//  all       allreduce-average of the bucket: every rank ends with the exact
//            mean of all ranks' weights (bit-identical on every rank).
//  shift_one every step pairs each rank with one peer and both take
//            (x_self + x_peer)/2 (bit-identical within the pair): the ranks
//            split into halves, rank r < h pairs with h + (r + s) mod h, where
//            h = n/2 and s is the step; an odd world adds a virtual rank, and
//            whoever is paired with it keeps its weights that step.
//  World size 1: the weights are left alone.
#pragma once

#include <memory>
#include <vector>

#include "runtime/algorithms/algorithm.h"
#include "runtime/algorithms/registry.h"

namespace bagua {

class Decentralized final : public Algorithm {
 public:
  enum class PeerSelection { kAll, kShiftOne };
  struct Options {
    PeerSelection peers = PeerSelection::kAll;
  };
  explicit Decentralized(Options options) : options_(options) {}

  const char* name() const override { return "decentralized"; }
  bool copiesBackAtWait() const override { return true; }
  void setup(const std::vector<BucketLayout>& buckets, Communicator& comm, DeviceOps& ops) override;
  std::shared_ptr<Work> communicate(BucketContext& bucket) override;

  // shift_one's peer of `rank` among `size` ranks at step `step` (`rank`
  // itself when it sits this step out).
  static int shiftOnePeer(int rank, int size, size_t step);

 private:
  Options options_;
  std::vector<std::unique_ptr<DeviceBuffer>> pair_;  // per bucket: [mine | peer's]
};

// Its registry entry ("decentralized").
AlgorithmInfo decentralizedInfo();

}  // namespace bagua
