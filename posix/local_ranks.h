// A multi-rank job on this machine without a launcher: one forked process
// per rank, all sharing a fresh temporary directory (for a FileStore
// rendezvous), as the examples, benchmarks and multi-rank tests run.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace bagua::posix {

// How one rank ended.
struct RankOutcome {
  int exitCode = -1;    // ChildProcess::exitCode(): 0 success, 128+signal, -1 hung (killed)
  std::string message;  // what the rank threw ("" when it returned)
};

// Calls `body(rank, dir)` in `ranks` child processes (rank 0..ranks-1); a
// rank's exit code is its return value (ChildProcess::kThrewExit when it
// throws). Waits up to `timeout` (milliseconds::max(): for ever), killing
// ranks still running then, and removes the directory.
std::vector<RankOutcome> runLocalRanks(
    int ranks, const std::function<int(int rank, const std::string& dir)>& body,
    std::chrono::milliseconds timeout = std::chrono::milliseconds::max());

// "rank 1: exit 3: <message>" lines for every rank that did not exit with 0;
// "" when all did.
std::string describeFailures(const std::vector<RankOutcome>& outcomes);

// For a main(): prints describeFailures() to stderr and returns 0 when every
// rank exited with 0, else 1.
int mainExitCode(const std::vector<RankOutcome>& outcomes);

}  // namespace bagua::posix
