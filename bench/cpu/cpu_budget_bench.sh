#!/usr/bin/env bash
# Loopback under a narrowed affinity mask: how the plugin behaves when the
# process may use only some of the host's CPUs (taskset, cpuset cgroups,
# Slurm/Kubernetes CPU binding), each CPU list in its own run of
# loopback_bench.sh (bandwidth one way and both ways, ping-pong latency,
# against one plain TCP socket per direction).
#
# Usage: bench/cpu/cpu_budget_bench.sh OUT CPULIST [CPULIST ...]   e.g. 0-1 0-3
#   CONFIGS: bagua-net-perf --configs (default: a grid of BAGUA_NET_THREADS
#   2/4/8/16 x BAGUA_NET_SPIN_US 0/50, and this build's automatic choice);
#   BEFORE=PATH adds "before" (another build of the plugin, at its defaults)
#   and makes the default CONFIGS "before" against this build's defaults.
#   REPS=3, SIZES="-b 64K -e 64M -f 4 -n 20 -w 3", LAT_SIZES="-b 8 -e 32K -f 8",
#   PERF and PLUGIN as in loopback_bench.sh.
set -euo pipefail
OUT=${1:?usage: cpu_budget_bench.sh OUT CPULIST [CPULIST ...]}
shift
[ $# -gt 0 ] || { echo "name at least one CPU list (taskset -c syntax)" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "${CONFIGS:-}" ]; then
  if [ -n "${BEFORE:-}" ]; then
    CONFIGS="before=plugin=$BEFORE;after="
  else
    CONFIGS="auto="
    for t in 2 4 8 16; do for s in 0 50; do
      CONFIGS+=";t${t}s${s}=BAGUA_NET_THREADS=$t,BAGUA_NET_SPIN_US=$s"
    done; done
  fi
fi
echo "## host: $(nproc) CPUs allowed here, $(getconf _NPROCESSORS_ONLN) online, $(uname -r)"
for cpus in "$@"; do
  echo "### taskset -c $cpus"
  CONFIGS="$CONFIGS" REPS=${REPS:-3} SIZES=${SIZES:-"-b 64K -e 64M -f 4 -n 20 -w 3"} \
    LAT_SIZES=${LAT_SIZES:-"-b 8 -e 32K -f 8"} \
    taskset -c "$cpus" bash "$HERE/loopback_bench.sh" "$OUT/cpus_$cpus"
done
