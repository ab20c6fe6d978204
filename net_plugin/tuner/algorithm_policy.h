// Where the tuner changes NCCL's algorithm, not only its channels: the one
// case measured better, as a plain function of the cost table (table in,
// choice out; tests/net_plugin/nccl_tuner_test.cc).
//
// An all_reduce of <= kTreeMostBytes on 2 ranks on 2 nodes goes to Tree LL.
// NCCL's model puts Ring LL and Tree LL within 1% there (16.6 against 16.8 us
// at 2.28) and picks Ring; through Bagua-Net on the GPU machine Tree LL took
// 23.7 / 23.2 us at 8 / 16 B against Ring's 26.1 / 24.6 (socket's Ring: 23.0
// / 23.2), and from 32 B Ring was ahead again (22.3 against 23.4)
// (bench/results/tuner_tree_gpu_2026-12-02). At 4 and 8 ranks NCCL picks
// Tree LL for these sizes itself.
//
// The user's NCCL_ALGO or NCCL_PROTO wins: with either set the table is left
// as NCCL made it (NCCL already rules out what they exclude, as negative
// entries, which are never chosen here either).
#pragma once

#include <cstddef>

#include "net_plugin/nccl/tuner.h"
#include "net_plugin/tuner/channel_policy.h"

namespace bagua::net::tuner {

inline constexpr size_t kTreeMostBytes = 16;

// Whether the algorithm rule can act on this communicator at all (the log
// line says so): on, no NCCL_ALGO/NCCL_PROTO, Bagua-Net is the network, and
// 2 ranks on 2 nodes.
bool picksAlgorithm(const Policy& policy, const CommShape& comm);

// Where the rule applies and NCCL's cheapest entry is Ring LL with Tree LL a
// candidate, makes Tree LL the cheapest (cost 0, as NCCL's example tuner
// does); returns whether it changed the table (numAlgo rows of numProto floats).
bool preferTreeLL(const Policy& policy, const CommShape& comm, ncclFunc_t func, size_t nBytes,
                  float* table, int numAlgo, int numProto);

}  // namespace bagua::net::tuner
