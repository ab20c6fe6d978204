// Decentralized: exact average (all) or pairwise average (shift_one).
#include "runtime/algorithms/decentralized.h"

#include "runtime/common/error.h"

namespace bagua {

int Decentralized::shiftOnePeer(int rank, int size, size_t step) {
  if (size <= 1) return rank;
  int slots = size % 2 == 0 ? size : size + 1;  // an odd world gets a virtual rank
  int half = slots / 2;
  int shift = static_cast<int>(step % static_cast<size_t>(half));
  int peer = rank < half ? half + (rank + shift) % half : ((rank - half - shift) % half + half) % half;
  return peer >= size ? rank : peer;
}

void Decentralized::setup(const std::vector<BucketLayout>& buckets, Communicator& comm,
                          DeviceOps& ops) {
  (void)comm;
  pair_.clear();
  if (options_.peers != PeerSelection::kShiftOne) return;
  for (const BucketLayout& b : buckets) pair_.push_back(ops.allocate(2 * b.bytes()));
}

std::shared_ptr<Work> Decentralized::communicate(BucketContext& bucket) {
  Communicator& comm = *bucket.comm;
  DeviceOps& ops = *bucket.ops;
  const BucketLayout& layout = *bucket.layout;
  std::string what = std::string("decentralized ") +
                     (options_.peers == PeerSelection::kAll ? "all" : "shift_one") +
                     " of bucket " + std::to_string(bucket.index);
  if (comm.size() == 1) return ops.fence(what);
  if (options_.peers == PeerSelection::kAll) {
    comm.allreduce(bucket.data, layout.paddedNumel, layout.dtype, ReduceOp::kAvg);
    return ops.fence(what);
  }
  BAGUA_ENFORCE(bucket.index < pair_.size(), "decentralized: communicate() before setup()");
  int peer = shiftOnePeer(comm.rank(), comm.size(), bucket.step);
  const size_t n = static_cast<size_t>(comm.size());
  const size_t bytes = layout.bytes();
  auto* pair = static_cast<uint8_t*>(pair_[bucket.index]->data());
  std::vector<size_t> sendBytes(n, 0), recvBytes(n, 0), zeros(n, 0), recvAt(n, 0);
  if (peer != comm.rank()) {
    sendBytes[static_cast<size_t>(peer)] = bytes;
    recvBytes[static_cast<size_t>(peer)] = bytes;
  }
  // Every rank enters the exchange (a collective on Gloo), even one that
  // sits this step out (odd worlds): it sends and receives nothing.
  comm.alltoallv(bucket.data, sendBytes, zeros, pair + bytes, recvBytes, recvAt);
  if (peer == comm.rank()) return ops.fence(what + " (no peer this step)");
  ops.copy(pair, bucket.data, bytes);
  ops.reduceChunks(layout.dtype, pair, layout.paddedNumel, 2, 0, /*average=*/true);
  ops.copy(bucket.data, pair, bytes);
  return ops.fence(what + " with rank " + std::to_string(peer));
}

AlgorithmInfo decentralizedInfo() {
  AlgorithmInfo info;
  info.name = "decentralized";
  info.description = "decentralized SGD: each rank averages its weights with its peers' each step";
  info.communicates = Communicates::kWeights;
  info.trigger = Trigger::kBeforeForward;
  info.options = {
      {"hierarchical", true, "average inside a node first, then among node leaders"},
      {"peer_selection_mode", std::string("all"), "all (exact average) | shift_one (one peer)"},
      {"communication_interval", int64_t{1}, "communicate every this many steps"},
  };
  info.validate = [](const OptionMap& o) {
    const std::string& mode = optionString(o, "peer_selection_mode");
    BAGUA_ENFORCE(mode == "all" || mode == "shift_one",
                  "decentralized: peer_selection_mode must be 'all' or 'shift_one', got '" + mode +
                      "'");
    BAGUA_ENFORCE(optionInt(o, "communication_interval") >= 1,
                  "decentralized: communication_interval must be at least 1, got " +
                      std::to_string(optionInt(o, "communication_interval")));
  };
  info.factory = [](const OptionMap& o) {
    Decentralized::Options options;
    options.peers = optionString(o, "peer_selection_mode") == "shift_one"
                        ? Decentralized::PeerSelection::kShiftOne
                        : Decentralized::PeerSelection::kAll;
    return std::make_shared<Decentralized>(options);
  };
  return info;
}

}  // namespace bagua
