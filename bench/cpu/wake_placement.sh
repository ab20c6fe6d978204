#!/usr/bin/env bash
# Where the scheduler puts a plugin worker that the caller wakes, against
# small-message latency: for each run of bagua-net-perf's ping-pong under
# `taskset -c CPUS`, the share of caller -> worker wake-ups (the task posted by
# isend) that land on the waker's own CPU, and the run's p50. On 2 CPUs this
# is what separates io_uring's slow ping-pong runs from its fast ones.
#
# Usage: (root, perf on PATH: bench/gpu/pack_tools.sh packs one)
#   bench/cpu/wake_placement.sh OUT_DIR [CPUS]      CPUS default 0-1
#   REPS=5, SIZE=8, ITERS=20000,
#   CONFIGS (bagua-net-perf --configs; default: io_uring and epoll, one run each per rep)
# Writes OUT_DIR/placement.txt, one line per run.
set -euo pipefail
OUT=${1:?usage: wake_placement.sh OUT_DIR [CPUS]}
CPUS=${2:-0-1}
REPS=${REPS:-5}
SIZE=${SIZE:-8}
ITERS=${ITERS:-20000}
CONFIGS=${CONFIGS:-"io_uring=BAGUA_NET_ENGINE=io_uring;epoll=BAGUA_NET_ENGINE=epoll"}
HERE=$(cd "$(dirname "$0")" && pwd)
PERF_TOOL=${PERF_TOOL:-$HERE/../../build/tools/bagua-net-perf}
PLUGIN=${PLUGIN:-$HERE/../../build/net_plugin/libnccl-net-bagua.so}
command -v perf >/dev/null || { echo "wake_placement.sh: no perf on PATH" >&2; exit 1; }
[ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
mkdir -p "$OUT"
export NCCL_SOCKET_IFNAME==lo
IFS=';' read -r -a configs <<<"$CONFIGS"
for rep in $(seq 1 "$REPS"); do
  for cfg in "${configs[@]}"; do
    name=${cfg%%=*}
    perf record -q -a -C "$CPUS" -e sched:sched_wakeup -o "$OUT/wakeups.data" \
      taskset -c "$CPUS" "$PERF_TOOL" --plugin "$PLUGIN" --ranks 2 --pattern pingpong \
      -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 1000 --reps 1 --configs "$cfg" >"$OUT/run.txt" 2>&1
    p50=$(grep -A1 "^#     size" "$OUT/run.txt" | tail -1 | awk '{print $5}')
    # Waker comm "bagua-net-perf" is a rank's calling thread; the plugin's
    # workers are named bagua-net-N.
    perf script -i "$OUT/wakeups.data" -F comm,pid,cpu,event,trace 2>/dev/null |
      sed -E 's/^ *([^ ]+) +[0-9]+ +\[0*([0-9]+)\] sched:sched_wakeup: comm=([^ ]+) pid=[0-9]+ .*target_cpu=0*([0-9]+)/\1 \2 \3 \4/' |
      awk -v n="$name" -v rep="$rep" -v p50="$p50" '
        $1 == "bagua-net-perf" && $3 ~ /^bagua-net-[0-9]/ { total++; if ($2 == $4) same++ }
        END { printf "%s rep %d: p50 %s us, caller->worker wake-ups %d, on the waker'"'"'s CPU %d (%.0f%%)\n",
                     n, rep, p50, total, same, total ? 100 * same / total : 0 }' |
      tee -a "$OUT/placement.txt"
    rm -f "$OUT/wakeups.data" "$OUT/wakeups.data.old"  # perf keeps the previous file as .old
  done
done
rm -f "$OUT/run.txt"
