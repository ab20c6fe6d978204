// How many CPUs this process may really use, for sizing the engine's worker
// pool and deciding whether workers spin. sysconf(_SC_NPROCESSORS_ONLN)
// counts the whole host, while ML jobs commonly run bound to a few of its
// CPUs: taskset, cpuset cgroups (docker --cpuset-cpus, Kubernetes static CPU
// manager, Slurm's task binding) shrink the affinity mask, and a CFS
// bandwidth quota (cgroup v2 cpu.max: docker --cpus, Kubernetes CPU limits)
// caps the CPU time, as do cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us
// (the same on hosts still on v1 or the hybrid layout). Sizing by the host
// would start 8 spinning workers inside a 2-CPU container.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "net_plugin/base/params.h"

namespace bagua::net {

// What bounds this process's CPUs: its affinity mask, the tightest CPU quota
// (rounded up) of its cgroup and every ancestor, v2 or v1 (0: none), and the
// host's online CPUs.
struct CpuBudget {
  int affinityCpus = 0;
  int quotaCpus = 0;
  int onlineCpus = 0;
};
CpuBudget readCpuBudget();

// The CPUs one of `localRanks` processes of a job on this host may count on:
// its affinity mask, divided among the ranks when the ranks' masks cannot be
// disjoint (mask x ranks > online CPUs: nobody bound them, they share the
// host), and a cgroup quota divided among them (it caps the container they
// share). Eight ranks on a 16-CPU host get 2 each: sized for 16, each started
// 16 workers spinning after every message and all_reduce took 3-4x the
// time of NCCL's socket transport at 8 B-512 KiB (bench/results/net_ranks_gpu_2026-11-28).
// At least 1.
int usableCpus(const CpuBudget& budget, int localRanks);

// usableCpus(readCpuBudget(), 1): CPUs in this process's affinity mask,
// bounded by its cgroup's CPU quota. At least 1.
int usableCpuCount();

// The processes the launcher started on this host, from its variables
// (LOCAL_WORLD_SIZE: torchrun; OMPI_COMM_WORLD_LOCAL_SIZE: Open MPI;
// MPI_LOCALNRANKS: MPICH, Intel MPI; SLURM_NTASKS_PER_NODE: srun), read with
// `getenv`; 1 when none is set or valid.
int localRanksFromLauncher(const std::function<const char*(const char*)>& getenv);

// Below this many usable CPUs the engine takes its small-machine settings:
// 2 workers and epoll (see autoWorkerThreads and autoEngineKind).
constexpr int kFewCpus = 4;

// The engine's worker threads for `usableCpus` when BAGUA_NET_THREADS is
// auto: twice the CPUs from 4 up, at most 16; 2 below 4.
int autoWorkerThreads(int usableCpus);

// Microseconds workers spin when BAGUA_NET_SPIN_US is auto: 50 when this
// rank may count on 4 or more CPUs (`usableCpus`) out of 8 or more that it
// shares with the host's other ranks (`hostShareCpus`: usableCpus with one
// local rank), else 0. With one rank per host: 50 from 8 CPUs up.
int autoSpinUs(int usableCpus, int hostShareCpus);

// The engine BAGUA_NET_ENGINE=auto starts with `usableCpus`: epoll below 4
// CPUs (unless zero-copy sends, which need io_uring, are asked for), else
// kAuto (io_uring, falling back to epoll where it is unavailable).
EngineKind autoEngineKind(int usableCpus, ZeroCopyMode zeroCopy);

// BAGUA_NET_MIN_SPLIT_BYTES as used: the knob's value, or for auto 64 KiB,
// and 4 MiB where the process may use 1 or 2 CPUs (`cpus`; 0: unknown).
inline constexpr size_t kMinSplitBytes = 64 * 1024;
inline constexpr size_t kFewCpusMinSplitBytes = 4u << 20;
size_t minSplitBytesFor(size_t knob, int cpus);

// Whether test() yields the CPU when its request is unfinished, with
// BAGUA_NET_TEST_YIELD auto: with 2 or fewer usable CPUs.
bool autoTestYield(int usableCpus);

// The CPUs a cgroup v2 cpu.max file grants ("200000 100000" -> 2,
// "150000 100000" -> 2, rounded up), or 0 for "max" (no quota) or text that is
// not a quota.
int cpusFromCpuMax(std::string_view cpuMax);

// The cgroup v2 path in /proc/self/cgroup text ("0::/a/b" -> "/a/b"), or ""
// when the process is not in a v2 hierarchy.
std::string cgroupV2Path(std::string_view procSelfCgroup);

// The smallest CPU quota among the cpu.max files of cgroup `path` and its
// ancestors under `root` (e.g. /sys/fs/cgroup), or 0 when none sets one.
int cgroupCpuLimit(const std::string& root, const std::string& path);

// cgroup v1: the CPUs cpu.cfs_quota_us over cpu.cfs_period_us grant
// ("200000", "100000" -> 2, rounded up), or 0 for "-1" (no quota) or text
// that is not a quota.
int cpusFromCfsQuota(std::string_view quotaUs, std::string_view periodUs);

// A cgroup's directory: the mount point of a hierarchy and the cgroup's path
// below it ("" for the mount's own cgroup).
struct CgroupDir {
  std::string mountPoint;  // e.g. /sys/fs/cgroup/cpu,cpuacct
  std::string path;        // e.g. /slurm/job_7
};

// This process's v1 cpu controller directory, from /proc/self/mountinfo and
// /proc/self/cgroup text: the mount of the v1 hierarchy holding "cpu" whose
// root holds the process's cgroup (a container that sees its own cgroup as
// the mount root maps to ""). Empty mountPoint when there is none.
CgroupDir cgroupV1Cpu(std::string_view mountinfo, std::string_view procSelfCgroup);

// The same for the v2 hierarchy (cgroup2 mounts, the "0::" line), so a
// container without its own cgroup namespace finds its cgroup too.
CgroupDir cgroupV2Dir(std::string_view mountinfo, std::string_view procSelfCgroup);

// The smallest v1 CPU quota among the cgroup `path` under `mountPoint` and
// its ancestors up to the mount, or 0 when none sets one.
int cgroupV1CpuLimit(const std::string& mountPoint, const std::string& path);

}  // namespace bagua::net
