// How many CPUs this process may really use, for sizing the engine's worker
// pool and deciding whether workers spin. sysconf(_SC_NPROCESSORS_ONLN)
// counts the whole host, while ML jobs commonly run bound to a few of its
// CPUs: taskset, cpuset cgroups (docker --cpuset-cpus, Kubernetes static CPU
// manager, Slurm's task binding) shrink the affinity mask, and a CFS
// bandwidth quota (cgroup v2 cpu.max: docker --cpus, Kubernetes CPU limits)
// caps the CPU time. Sizing by the host would start 8 spinning workers inside
// a 2-CPU container. cgroup v1 quotas are not read.
#pragma once

#include <string>
#include <string_view>

#include "net_plugin/core/params.h"

namespace bagua::net {

// CPUs in this process's affinity mask, bounded by the cgroup v2 CPU quota
// (rounded up) of its cgroup and every ancestor. At least 1.
int usableCpuCount();

// Below this many usable CPUs the engine takes its small-machine settings:
// 2 workers and epoll (see autoWorkerThreads and autoEngineKind).
constexpr int kFewCpus = 4;

// The engine's worker threads for `usableCpus` when BAGUA_NET_THREADS is
// auto: twice the CPUs from 4 up, at most 16; 2 below 4.
int autoWorkerThreads(int usableCpus);

// Microseconds workers spin when BAGUA_NET_SPIN_US is auto: 50 from 8 usable
// CPUs up, else 0.
int autoSpinUs(int usableCpus);

// The engine BAGUA_NET_ENGINE=auto starts with `usableCpus`: epoll below 4
// CPUs (unless zero-copy sends, which need io_uring, are asked for), else
// kAuto (io_uring, falling back to epoll where it is unavailable).
EngineKind autoEngineKind(int usableCpus, ZeroCopyMode zeroCopy);

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

}  // namespace bagua::net
