// Hierarchical: reduce in the node, the algorithm among leaders, broadcast.
#include "runtime/algorithms/hierarchical.h"

#include "runtime/common/error.h"

namespace bagua {

Hierarchical::Hierarchical(std::shared_ptr<Algorithm> inner, std::shared_ptr<Communicator> inter,
                           std::shared_ptr<DeviceOps> interOps, int nodes, ReduceOp intraOp)
    : inner_(std::move(inner)),
      inter_(std::move(inter)),
      interOps_(std::move(interOps)),
      nodes_(nodes),
      intraOp_(intraOp) {
  BAGUA_ENFORCE(inner_ != nullptr, "hierarchical: no algorithm to wrap");
  BAGUA_ENFORCE(nodes_ >= 1, "hierarchical: " + std::to_string(nodes_) + " nodes");
  BAGUA_ENFORCE((inter_ == nullptr) == (interOps_ == nullptr),
                "hierarchical: the inter-node communicator needs its ops");
  BAGUA_ENFORCE(inter_ == nullptr || inter_->size() == nodes_,
                "hierarchical: the inter-node communicator has " +
                    std::to_string(inter_ ? inter_->size() : 0) + " ranks for " +
                    std::to_string(nodes_) + " nodes");
}

size_t Hierarchical::bucketAlignment(int worldSize) const {
  (void)worldSize;  // the algorithm runs among the nodes
  return inner_->bucketAlignment(nodes_);
}

void Hierarchical::setup(const std::vector<BucketLayout>& buckets, Communicator& comm,
                         DeviceOps& ops) {
  (void)comm;
  (void)ops;
  if (inter_) inner_->setup(buckets, *inter_, *interOps_);
}

std::shared_ptr<Work> Hierarchical::communicate(BucketContext& bucket) {
  Communicator& intra = *bucket.comm;
  DeviceOps& intraOps = *bucket.ops;
  const BucketLayout& layout = *bucket.layout;
  const bool leader = intra.rank() == 0;
  BAGUA_ENFORCE(leader == (inter_ != nullptr),
                "hierarchical: local rank " + std::to_string(intra.rank()) +
                    (leader ? " leads its node but has no" : " does not lead but has an") +
                    " inter-node communicator");
  std::string what = std::string(name()) + " (hierarchical) of bucket " +
                     std::to_string(bucket.index);
  if (intra.size() > 1) {
    intra.reduce(bucket.data, bucket.data, layout.paddedNumel, layout.dtype, intraOp_, 0);
  }
  if (leader) {
    inter_->waitFor(intraOps.fence(what + ": reduced in the node"));
    BucketContext among{bucket.index, bucket.layout, bucket.data, inter_.get(), interOps_.get(),
                        bucket.step};
    intra.waitFor(inner_->communicate(among));
  }
  if (intra.size() > 1) intra.broadcast(bucket.data, layout.bytes(), 0);
  return intraOps.fence(what);
}

}  // namespace bagua
