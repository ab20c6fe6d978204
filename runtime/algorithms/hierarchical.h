// Hierarchical communication (Bagua's hierarchical=True): a bucket is first
// reduced inside the node onto its leader (local rank 0) over the intra-node
// communicator, then the wrapped algorithm runs among the node leaders only
// (one rank per node) over the inter-node communicator, and the leader's
// result is broadcast back inside the node. Ranks other than the leaders
// never touch the inter-node network.
//
// The Reducer hands this algorithm the intra-node communicator and its ops;
// the leaders also hold the inter-node communicator and its ops. The three
// phases are ordered across the two communicators with waitFor() (CUDA: the
// streams wait for each other's events; CPU: the worker threads wait), so
// the host never blocks. Nodes must have the same number of ranks for the
// intra-node average of the average to be the global average (torchrun's
// homogeneous nodes; the caller checks).
#pragma once

#include <memory>
#include <vector>

#include "runtime/algorithms/algorithm.h"

namespace bagua {

class Hierarchical final : public Algorithm {
 public:
  // `inter`/`interOps`: the leaders' communicator among the nodes (null on
  // other ranks); `nodes`: the number of nodes; `intraOp`: how a node's
  // ranks combine (kAvg, or kSum for algorithms that sum).
  Hierarchical(std::shared_ptr<Algorithm> inner, std::shared_ptr<Communicator> inter,
               std::shared_ptr<DeviceOps> interOps, int nodes, ReduceOp intraOp);

  const char* name() const override { return inner_->name(); }
  size_t bucketAlignment(int worldSize) const override;
  bool copiesBackAtWait() const override { return inner_->copiesBackAtWait(); }
  void setup(const std::vector<BucketLayout>& buckets, Communicator& comm, DeviceOps& ops) override;
  std::shared_ptr<Work> communicate(BucketContext& bucket) override;
  // The leaders' inner algorithm's (same bucket layouts; its buffers are
  // zeroed when allocated, so the Reducer's copies on the intra-node stream
  // need no ordering with the inter-node one); none on the other ranks.
  DeviceBuffer* elementState(size_t bucket) override {
    return inter_ ? inner_->elementState(bucket) : nullptr;
  }

 private:
  std::shared_ptr<Algorithm> inner_;
  std::shared_ptr<Communicator> inter_;
  std::shared_ptr<DeviceOps> interOps_;
  int nodes_;
  ReduceOp intraOp_;
};

}  // namespace bagua
