// Runs a multi-rank job on this machine: one forked process per rank, all
// sharing a fresh temporary directory (for a FileStore rendezvous), as the
// examples and benchmarks do without a launcher.
#pragma once

#include <functional>
#include <string>

namespace bagua::examples {

// Calls `rank(r, dir)` in `ranks` child processes (r = 0..ranks-1); a rank's
// exit status is its return value, 1 if it throws (the message goes to
// stderr). Waits for all, removes the directory (named after `tag` and the
// pid) and returns 0 if every rank returned 0, else 1.
int runLocalRanks(int ranks, const std::string& tag,
                  const std::function<int(int rank, const std::string& dir)>& rank);

}  // namespace bagua::examples
