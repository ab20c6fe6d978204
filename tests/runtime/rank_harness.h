// Fork-per-rank fixture for runtime tests: runs a function as N processes
// (posix::runLocalRanks) that meet through a FileStore in their shared
// temporary directory, and collects each rank's outcome. A rank reports
// failure by throwing (the message comes back to the parent) or by returning
// nonzero; gtest assertions stay in the parent. A rank still running at the
// timeout is killed.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "posix/local_ranks.h"
#include "runtime/store/store.h"

namespace bagua::testing {

using posix::describeFailures;
using posix::RankOutcome;

// The function each rank runs: (rank, size, store) -> 0 on success.
using RankFn = std::function<int(int rank, int size, Store& store)>;

// A rank's assertion: throws `what` (which comes back to the parent as the
// rank's message) unless `cond` holds.
void check(bool cond, const std::string& what);

// Runs `fn` in `size` forked processes; waits up to `timeout` for all.
std::vector<RankOutcome> runRanks(int size, const RankFn& fn,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace bagua::testing
