// The body of one rank process for one run (pattern x configuration x
// repetition): apply the configuration's environment, load the transport,
// run every size, and leave a RankReport in the run's store.
#pragma once

#include <cstdint>

#include <string>

#include "tools/bagua_net_perf/options.h"

namespace bagua::net_perf {

struct RankTask {
  Pattern pattern = Pattern::kRing;
  const Config* config = nullptr;
  int rank = 0;
  int world = 2;
  std::string storeDir;  // this run's directory
  std::string label;     // "bagua rep 1/3", for progress lines
  uint64_t commId = 0;
};

// Runs in a freshly forked process; returns its exit code (kExitOk,
// kExitMismatch or kExitError, with the reason on stderr and in the store).
int runRank(const Options& options, const RankTask& task);

}  // namespace bagua::net_perf
