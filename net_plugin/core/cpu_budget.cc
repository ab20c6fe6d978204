// CPU budget: affinity mask and cgroup v2 quota (see cpu_budget.h).
#include "net_plugin/core/cpu_budget.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace bagua::net {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Parses a non-negative decimal at the start of `text`, advancing past it.
bool parseCount(std::string_view* text, long long* value) {
  const char* end = text->data() + text->size();
  auto [next, err] = std::from_chars(text->data(), end, *value);
  if (err != std::errc() || *value < 0) return false;
  text->remove_prefix(static_cast<size_t>(next - text->data()));
  return true;
}

// CPUs in the affinity mask; the online CPUs where the mask does not fit a
// cpu_set_t (EINVAL past 1024 CPUs).
int affinityCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  }
  return CPU_COUNT(&set);
}

}  // namespace

int autoWorkerThreads(int usableCpus) {
  // More workers than CPUs from 4 up: a worker inside a long kernel copy for
  // one stream must not hold up another stream that has data (on 4 CPUs 8
  // workers moved 1.2-1.9x what 2 did at 1-16 MiB). Below 4, 2 workers: 4
  // moved less at 64 KiB-1 MiB and more at 16-64 MiB, both within noise
  // (bench/results/cpu_budget_2026-11-23).
  return usableCpus < kFewCpus ? 2 : std::min(2 * usableCpus, 16);
}

int autoSpinUs(int usableCpus) {
  // From 8 CPUs spinning halves small-message latency (11 against 16-21 us)
  // at no cost in bandwidth. On 4 it still halves latency but takes CPU from
  // the copies: 0.4-0.8x the bandwidth at 256 KiB-1 MiB, the sizes NCCL
  // hands the plugin; on 2 it loses both ways (latency 41-75 against 15-24).
  return usableCpus >= 8 ? 50 : 0;
}

EngineKind autoEngineKind(int usableCpus, ZeroCopyMode zeroCopy) {
  // Below 4 CPUs the NCCL proxy thread (polling test() with sched_yield) and
  // the workers share the CPUs, and epoll had the lower small-message
  // latency in 11 of 14 paired runs on 2 CPUs (p50 medians 8.2 against
  // 9.9 us); bandwidth was within the runs' noise. From 4 CPUs the engines
  // tie; bench/results/uring_floor_2026-11-23.
  if (usableCpus < kFewCpus && zeroCopy == ZeroCopyMode::kOff) return EngineKind::kEpoll;
  return EngineKind::kAuto;
}

int cpusFromCpuMax(std::string_view cpuMax) {
  long long quota = 0;
  long long period = 0;
  if (!parseCount(&cpuMax, &quota) || cpuMax.empty() || cpuMax.front() != ' ') return 0;
  cpuMax.remove_prefix(1);
  if (!parseCount(&cpuMax, &period) || quota == 0 || period == 0) return 0;
  return static_cast<int>((quota + period - 1) / period);
}

std::string cgroupV2Path(std::string_view procSelfCgroup) {
  // Each line is "hierarchy-id:controllers:path"; v2 is the line "0::path".
  while (!procSelfCgroup.empty()) {
    size_t eol = procSelfCgroup.find('\n');
    std::string_view line = procSelfCgroup.substr(0, eol);
    if (line.substr(0, 3) == "0::") return std::string(line.substr(3));
    if (eol == std::string_view::npos) break;
    procSelfCgroup.remove_prefix(eol + 1);
  }
  return {};
}

int cgroupCpuLimit(const std::string& root, const std::string& path) {
  int limit = 0;
  std::string dir = path;
  while (true) {
    int cpus = cpusFromCpuMax(readFile(root + dir + "/cpu.max"));
    if (cpus > 0 && (limit == 0 || cpus < limit)) limit = cpus;
    size_t slash = dir.find_last_of('/');
    if (slash == std::string::npos) break;
    dir.resize(slash);  // "/a/b" -> "/a" -> "" (the root, which has no cpu.max)
  }
  return limit;
}

int usableCpuCount() {
  int cpus = affinityCpuCount();
  std::string path = cgroupV2Path(readFile("/proc/self/cgroup"));
  if (!path.empty()) {
    int quota = cgroupCpuLimit("/sys/fs/cgroup", path);
    if (quota > 0 && (cpus == 0 || quota < cpus)) cpus = quota;
  }
  return cpus > 0 ? cpus : 1;
}

}  // namespace bagua::net
