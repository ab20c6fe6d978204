#!/usr/bin/env bash
# The two 2-CPU targets of issue 3 decided by per-round paired ratios and their
# 95% confidence intervals (bagua-net-perf, many interleaved rounds).
# Usage: run_targets.sh OUT [CPUS] [REPS]   (run from the repository root after ninja -C build)
# STEPS="tcp bw lat" picks the parts (default all three).
set -euo pipefail
OUT=${1:?usage: run_targets.sh OUT [CPUS] [REPS]}
CPUS=${2:-0-1}
REPS=${3:-60}
PERF=${PERF:-build/tools/bagua-net-perf}
PROBE=${PROBE:-build/bench/tools/bench-copy-probe}
STEPS=${STEPS:-tcp bw lat}
mkdir -p "$OUT"
step() { [[ " $STEPS " == *" $1 "* ]]; }
export NCCL_SOCKET_IFNAME==lo
first=${CPUS%%[-,]*}
taskset -c "$first" "$PROBE" --seconds 5 --mib 64 > "$OUT/probe_before.txt"
# 1. the defaults against one blocking TCP socket per direction
step tcp && taskset -c "$CPUS" "$PERF" --pattern ring,uni -b 1M -e 64M -f 4 -n 10 -w 2 --reps "$REPS" \
  --baseline --configs "bagua=" --json "$OUT/defaults_vs_tcp.json" > "$OUT/defaults_vs_tcp.txt"
# 2. io_uring against epoll, bandwidth and latency
step bw && taskset -c "$CPUS" "$PERF" --pattern ring,uni -b 64K -e 64M -f 4 -n 10 -w 2 --reps "$REPS" \
  --configs "epoll=BAGUA_NET_ENGINE=epoll;io_uring=BAGUA_NET_ENGINE=io_uring" --compare-to epoll \
  --json "$OUT/uring_vs_epoll_bw.json" > "$OUT/uring_vs_epoll_bw.txt"
step lat && taskset -c "$CPUS" "$PERF" --pattern pingpong -b 8 -e 64K -f 8 -n 2000 -w 200 --reps "$REPS" \
  --baseline --configs "epoll=BAGUA_NET_ENGINE=epoll;io_uring=BAGUA_NET_ENGINE=io_uring" \
  --compare-to epoll --json "$OUT/uring_vs_epoll_lat.json" > "$OUT/uring_vs_epoll_lat.txt"
taskset -c "$first" "$PROBE" --seconds 5 --mib 64 > "$OUT/probe_after.txt"
