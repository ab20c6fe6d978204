// Command line of bagua-net-perf: the nccl-tests flags (-b -e -f -n -w -c),
// the process model (--ranks, or --rank/--world/--store by hand), the
// configurations to compare (--configs, --baseline) and the outputs.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace bagua::net_perf {

enum class Pattern {
  kRing,      // every rank sends to rank+1 and receives from rank-1 at once
  kUni,       // rank 0 sends to rank 1 only
  kPingPong,  // rank 0 sends, rank 1 echoes back
  kTree,      // a small all-reduce's tree: up to rank 0 and back down, one round at a time
};

const char* patternName(Pattern pattern);

// One configuration measured in fresh processes: a plugin library plus
// environment variables set before it is loaded, or the plain-TCP baseline.
struct Config {
  std::string name;
  bool tcpBaseline = false;
  std::string plugin;  // library path; empty for the baseline
  std::vector<std::pair<std::string, std::string>> env;
};

struct Options {
  std::vector<Pattern> patterns{Pattern::kRing};
  std::string plugin;              // --plugin, resolved to the default when not given
  int ranks = 2;                   // --ranks: rank processes forked on this machine
  int rank = -1;                   // --rank: run only this rank (manual mode)
  int world = 0;                   // --world (manual mode)
  std::string store;               // --store: rendezvous directory (manual mode)
  std::vector<std::string> netns;  // --netns: network namespace of each rank (launcher mode)
  size_t minBytes = 8;
  size_t maxBytes = size_t{64} << 20;
  size_t factor = 2;
  int iters = 20;
  int warmup = 5;
  int depth = 4;
  bool check = true;
  int reps = 1;
  std::vector<Config> configs;
  bool baseline = false;
  bool baselineOnly = false;  // --baseline-only: no plugin configuration at all
  std::string baselineIf;     // interface of the TCP baseline ("" = from NCCL_SOCKET_IFNAME or lo)
  std::string compareTo;      // --compare-to: the reference of the ratio column ("" = tcp)
  std::string jsonPath;
  std::chrono::seconds timeout{60};  // --timeout: bound on every wait
  int dev = 0;                       // plugin device index
  int abi = 0;           // --abi: 0 = newest table found, else exactly ncclNetPlugin_v<abi>
  int flowsPerPeer = 0;  // > 0: call v11 setNetAttr with this many flows per peer

  bool manual() const { return rank >= 0; }
  int worldSize() const { return manual() ? world : ranks; }
};

// Parses argv; throws UsageError naming the bad value. Returns false when
// --help was asked for (the text is then already printed).
bool parseOptions(int argc, char** argv, Options* options);

// Index of the configuration the others are compared with: --compare-to's,
// else the TCP baseline's; configs.size() when there is none (or only it).
size_t referenceConfig(const Options& options);

// "64M" -> 67108864 (K, M, G are powers of 1024, as in nccl-tests).
size_t parseSize(const std::string& text);

// The message sizes of a sweep: min, min*f, ... up to max (0 is followed by 1).
std::vector<size_t> sweepSizes(const Options& options);

// Short human form: 8, 32K, 1M, 1.5G.
std::string formatSize(size_t bytes);

}  // namespace bagua::net_perf
