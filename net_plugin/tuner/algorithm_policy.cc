#include "net_plugin/tuner/algorithm_policy.h"

namespace bagua::net::tuner {

bool picksAlgorithm(const Policy& policy, const CommShape& comm) {
  return policy.enabled && !policy.userAlgorithm && !policy.otherNetwork && !policy.otherTuner &&
         comm.viaBagua && comm.nRanks == 2 && comm.nNodes == 2;
}

bool preferTreeLL(const Policy& policy, const CommShape& comm, ncclFunc_t func, size_t nBytes,
                  float* table, int numAlgo, int numProto) {
  if (!picksAlgorithm(policy, comm) || func != ncclFuncAllReduce || nBytes > kTreeMostBytes) {
    return false;
  }
  if (table == nullptr || numAlgo <= NCCL_ALGO_RING || numProto <= NCCL_PROTO_LL) return false;
  float& tree = table[NCCL_ALGO_TREE * numProto + NCCL_PROTO_LL];
  const float ring = table[NCCL_ALGO_RING * numProto + NCCL_PROTO_LL];
  if (tree < 0 || ring < 0) return false;
  for (int i = 0; i < numAlgo * numProto; ++i) {
    if (table[i] >= 0 && table[i] < ring) return false;  // NCCL's pick is not Ring LL
  }
  tree = 0;
  return true;
}

}  // namespace bagua::net::tuner
