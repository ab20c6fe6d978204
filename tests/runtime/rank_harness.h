// Fork-per-rank fixture for runtime tests: runs a function as N processes
// that meet through a FileStore in a fresh temporary directory, and collects
// each rank's outcome. A rank reports failure by throwing (the message comes
// back to the parent) or by returning nonzero; gtest assertions stay in the
// parent. Ranks can be told to die (to test dead-peer handling).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "runtime/store/store.h"

namespace bagua::testing {

struct RankOutcome {
  int exitCode = -1;    // 0 = success; 128+signal when killed; -1 = still running at timeout
  std::string message;  // what the rank reported (exception text, or "")
};

// The function each rank runs: (rank, size, store) -> 0 on success.
using RankFn = std::function<int(int rank, int size, Store& store)>;

// Runs `fn` in `size` forked processes; waits up to `timeout` for all.
std::vector<RankOutcome> runRanks(int size, const RankFn& fn,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(60));

// "rank 1: exit 3: <message>" lines for every rank that did not succeed.
std::string describeFailures(const std::vector<RankOutcome>& outcomes);

}  // namespace bagua::testing
