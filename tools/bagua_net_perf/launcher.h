// Runs one measurement (pattern x configuration x repetition) in fresh
// processes: forks the local rank(s), waits for them, kills the others as soon
// as one fails, and collects every rank's report from the run's store.
#pragma once

#include <string>
#include <vector>

#include "tools/bagua_net_perf/options.h"
#include "tools/bagua_net_perf/rank_report.h"

namespace bagua::net_perf {

struct RunSpec {
  Pattern pattern = Pattern::kRing;
  const Config* config = nullptr;
  int rep = 0;
  std::string storeRoot;  // this invocation's store; the run gets a subdirectory
};

struct RunOutcome {
  bool ok = false;                // every rank finished (mismatches still count as finished)
  std::string failure;            // why not, when !ok
  std::vector<RankReport> ranks;  // all ranks (empty unless this process hosts rank 0)
};

RunOutcome launchRun(const Options& options, const RunSpec& spec);

}  // namespace bagua::net_perf
