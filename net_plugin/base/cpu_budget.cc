// CPU budget: affinity mask and cgroup v2 or v1 quota (see cpu_budget.h).
#include "net_plugin/base/cpu_budget.h"

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

// Splits `text` at `sep` into the part before it (returned) and the rest.
std::string_view nextField(std::string_view* text, char sep) {
  size_t at = text->find(sep);
  std::string_view field = text->substr(0, at);
  text->remove_prefix(at == std::string_view::npos ? text->size() : at + 1);
  return field;
}

// A mountinfo field with its octal escapes ("\040" for a space) decoded.
std::string unescapeMountField(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    bool octal = field[i] == '\\' && i + 3 < field.size();
    for (size_t k = 1; octal && k <= 3; ++k) octal = field[i + k] >= '0' && field[i + k] <= '7';
    if (octal) {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                               (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

// True when the comma-separated `list` holds `item` ("rw,cpu,cpuacct" holds "cpu").
bool listHas(std::string_view list, std::string_view item) {
  while (!list.empty()) {
    if (nextField(&list, ',') == item) return true;
  }
  return false;
}

// The smallest positive `cpusIn(dir)` over `path` and its ancestors (dir
// "/a/b", "/a", ""), or 0.
template <typename CpusIn>
int tightestOnPath(std::string dir, CpusIn cpusIn) {
  int limit = 0;
  while (true) {
    int cpus = cpusIn(dir);
    if (cpus > 0 && (limit == 0 || cpus < limit)) limit = cpus;
    size_t slash = dir.find_last_of('/');
    if (slash == std::string::npos) break;
    dir.resize(slash);
  }
  return limit;
}

// Where cgroup `path` of the hierarchy mounted with `fstype` ("cgroup" with
// `controller` among its options, or "cgroup2") is: of its mounts in
// mountinfo ("id parent major:minor root mountpoint options [tags] - fstype
// source superopts"), the one whose root holds `path` most closely (a
// container may see its own cgroup as the mount root; bind mounts may show
// other subtrees). Empty when no mount shows it.
CgroupDir cgroupMountFor(std::string_view mountinfo, std::string_view fstype,
                         std::string_view controller, const std::string& path) {
  CgroupDir best;
  size_t bestRoot = 0;
  bool found = false;
  while (!mountinfo.empty()) {
    std::string_view line = nextField(&mountinfo, '\n');
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::string_view tail = line.substr(dash + 3);
    if (nextField(&tail, ' ') != fstype) continue;
    nextField(&tail, ' ');  // source
    if (!controller.empty() && !listHas(nextField(&tail, ' '), controller)) continue;
    std::string_view head = line.substr(0, dash);
    for (int i = 0; i < 3; ++i) nextField(&head, ' ');
    std::string root = unescapeMountField(nextField(&head, ' '));
    std::string mountPoint = unescapeMountField(nextField(&head, ' '));
    if (root == "/") root.clear();  // so that "/a" below it reads as root + "/a"
    bool below = path.compare(0, root.size(), root) == 0 &&
                 (path.size() == root.size() || path[root.size()] == '/');
    if (!below || (found && root.size() <= bestRoot)) continue;
    best = {mountPoint, path.substr(root.size())};
    bestRoot = root.size();
    found = true;
  }
  if (best.path == "/") best.path.clear();
  return best;
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

int autoSpinUs(int usableCpus, int hostShareCpus) {
  // From 8 CPUs spinning halves small-message latency (11 against 16-21 us)
  // at no cost in bandwidth. On 4 it still halves latency but takes CPU from
  // the copies: 0.4-0.8x the bandwidth at 256 KiB-1 MiB, the sizes NCCL
  // hands the plugin; on 2 it loses both ways (latency 41-75 against 15-24).
  // Those were two processes (sender, receiver) on 2, 4 and 8 CPUs: a rank
  // whose share is 4 of at least 8 (4 ranks on 16 CPUs) spins, and with it
  // NCCL's 4-rank all_reduce took 47-49 us at 8 B against 64 without
  // (bench/results/net_ranks_gpu_2026-11-28).
  return hostShareCpus >= 8 && usableCpus >= 4 ? 50 : 0;
}

size_t minSplitBytesFor(size_t knob, int cpus) {
  if (knob != kAutoBytes) return knob;
  // On 2 CPUs a message sent whole from isend() costs no worker wake-up on
  // the sending side: one connection at 1 MiB moved 1.35-1.48x one TCP socket
  // (the plugin's 4-deep working set) with 4 MiB against 0.87-0.97x with
  // 64 KiB, at half the CPU per byte; 4 MiB messages 1.39-1.46x against
  // 0.94-1.01x; 16-64 MiB level (bench/results/small_cpus_2026-12-01). With
  // more CPUs chunks of one message on several streams are copied in
  // parallel, the many-core figures' design, so there it stays 64 KiB.
  return cpus >= 1 && cpus <= 2 ? kFewCpusMinSplitBytes : kMinSplitBytes;
}

bool autoTestYield(int usableCpus) {
  // Two ranks' callers spinning on test() fill 2 CPUs; the workers then move
  // bytes only when the scheduler preempts a caller for them. Yielding from
  // such a loop lifted one connection under a caller that never yields from
  // 0.39-0.68x one TCP socket to 0.92-1.20x at 1-16 MiB, the level of a
  // caller that yields itself (bench/results/small_cpus_2026-11-25). With
  // more CPUs than callers the workers have CPUs of their own.
  return usableCpus <= 2;
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
  // "/a/b" -> "/a" -> "" (the root, which has no cpu.max)
  return tightestOnPath(path, [&](const std::string& dir) {
    return cpusFromCpuMax(readFile(root + dir + "/cpu.max"));
  });
}

int cpusFromCfsQuota(std::string_view quotaUs, std::string_view periodUs) {
  long long quota = 0;
  long long period = 0;
  // "-1" (no quota) fails parseCount, as does anything else that is not a count.
  if (!parseCount(&quotaUs, &quota) || !parseCount(&periodUs, &period)) return 0;
  if (quota == 0 || period == 0) return 0;
  return static_cast<int>((quota + period - 1) / period);
}

CgroupDir cgroupV1Cpu(std::string_view mountinfo, std::string_view procSelfCgroup) {
  // /proc/self/cgroup: "hierarchy-id:controllers:path", one line per hierarchy.
  while (!procSelfCgroup.empty()) {
    std::string_view line = nextField(&procSelfCgroup, '\n');
    nextField(&line, ':');
    if (listHas(nextField(&line, ':'), "cpu")) {
      return cgroupMountFor(mountinfo, "cgroup", "cpu", std::string(line));
    }
  }
  return {};
}

CgroupDir cgroupV2Dir(std::string_view mountinfo, std::string_view procSelfCgroup) {
  std::string path = cgroupV2Path(procSelfCgroup);
  return path.empty() ? CgroupDir{} : cgroupMountFor(mountinfo, "cgroup2", "", path);
}

int cgroupV1CpuLimit(const std::string& mountPoint, const std::string& path) {
  return tightestOnPath(path, [&](const std::string& dir) {
    std::string at = mountPoint + dir;
    return cpusFromCfsQuota(readFile(at + "/cpu.cfs_quota_us"),
                            readFile(at + "/cpu.cfs_period_us"));
  });
}

CpuBudget readCpuBudget() {
  CpuBudget budget;
  budget.affinityCpus = affinityCpuCount();
  budget.onlineCpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  auto bound = [&budget](int quota) {
    if (quota > 0 && (budget.quotaCpus == 0 || quota < budget.quotaCpus)) budget.quotaCpus = quota;
  };
  std::string procSelfCgroup = readFile("/proc/self/cgroup");
  std::string mountinfo = readFile("/proc/self/mountinfo");
  std::string v2Path = cgroupV2Path(procSelfCgroup);
  CgroupDir v2 = cgroupV2Dir(mountinfo, procSelfCgroup);
  // No cgroup2 mount shows our cgroup (or no mountinfo): the usual place.
  if (v2.mountPoint.empty() && !v2Path.empty()) v2 = {"/sys/fs/cgroup", v2Path};
  if (!v2.mountPoint.empty()) bound(cgroupCpuLimit(v2.mountPoint, v2.path));
  CgroupDir v1 = cgroupV1Cpu(mountinfo, procSelfCgroup);
  if (!v1.mountPoint.empty()) bound(cgroupV1CpuLimit(v1.mountPoint, v1.path));
  return budget;
}

int usableCpus(const CpuBudget& budget, int localRanks) {
  int ranks = std::max(localRanks, 1);
  int cpus = budget.affinityCpus;
  // Affinity masks that cannot be disjoint (each rank's mask times the ranks
  // exceeds the host) are shared: launchers leave every rank the whole host
  // unless told to bind. Masks that fit side by side are taken as a binding
  // (Slurm, mpirun --bind-to core, taskset per rank) and kept whole.
  if (cpus > 0 && budget.onlineCpus > 0 &&
      static_cast<long long>(cpus) * ranks > budget.onlineCpus) {
    cpus /= ranks;
  }
  // A cgroup quota caps the container, and with it every rank inside.
  if (budget.quotaCpus > 0) cpus = std::min(cpus, budget.quotaCpus / ranks);
  return std::max(cpus, 1);
}

int usableCpuCount() { return usableCpus(readCpuBudget(), 1); }

int localRanksFromLauncher(const std::function<const char*(const char*)>& getenv) {
  // torchrun, Open MPI, MPICH/Hydra (and Intel MPI), Slurm's srun (set only
  // with --ntasks-per-node).
  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                           "SLURM_NTASKS_PER_NODE"}) {
    const char* text = getenv(name);
    if (text == nullptr) continue;
    std::string_view rest(text);
    long long n = 0;
    if (parseCount(&rest, &n) && rest.empty() && n >= 1 && n <= 4096) return static_cast<int>(n);
  }
  return 1;
}

}  // namespace bagua::net
