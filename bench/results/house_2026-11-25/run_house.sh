#!/usr/bin/env bash
# The "House" refactor's no-behaviour-change check: the plugin built before
# and after, interleaved round by round in one bagua-net-perf run, with the
# per-round ratio new/old and its 95% interval (bench/results/house_2026-11-25).
# Usage: run_house.sh OLD.so NEW.so OUT [CPUS]   (from the repository root after ninja -C build)
set -euo pipefail
OLD=${1:?usage: run_house.sh OLD.so NEW.so OUT [CPUS]}
NEW=${2:?usage: run_house.sh OLD.so NEW.so OUT [CPUS]}
OUT=${3:?usage: run_house.sh OLD.so NEW.so OUT [CPUS]}
CPUS=${4:-0-1}
PERF=${PERF:-build/tools/bagua-net-perf}
mkdir -p "$OUT"
export NCCL_SOCKET_IFNAME==lo
perf() { taskset -c "$CPUS" "$PERF" --compare-to old "$@"; }
old_first="old=plugin=$OLD;new=plugin=$NEW"
new_first="new=plugin=$NEW;old=plugin=$OLD"
# Bandwidth, 1M and 16M, both patterns: 10 rounds, then 60 in each order.
perf --pattern ring,uni -b 1M -e 16M -f 16 -n 10 -w 2 --reps 10 --configs "$old_first" \
  --json "$OUT/bw_r10.json" > "$OUT/bw_r10.txt"
perf --pattern ring,uni -b 1M -e 16M -f 16 -n 10 -w 2 --reps 60 --configs "$old_first" \
  --json "$OUT/bw_r60.json" > "$OUT/bw_r60.txt"
perf --pattern ring,uni -b 1M -e 16M -f 16 -n 10 -w 2 --reps 60 --configs "$new_first" \
  --json "$OUT/bw_r60_swapped.json" > "$OUT/bw_r60_swapped.txt"
# uni 1M again, 100 rounds in each order (its first intervals were the widest).
perf --pattern uni -b 1M -e 1M -n 20 -w 2 --reps 100 --configs "$old_first" \
  --json "$OUT/uni1m_a.json" > "$OUT/uni1m_a.txt"
perf --pattern uni -b 1M -e 1M -n 20 -w 2 --reps 100 --configs "$new_first" \
  --json "$OUT/uni1m_b.json" > "$OUT/uni1m_b.txt"
# Small-message latency.
perf --pattern pingpong -b 8 -e 64K -f 8 -n 2000 -w 200 --reps 20 --configs "$old_first" \
  --json "$OUT/lat_r20.json" > "$OUT/lat_r20.txt"
python3 bench/tools/slim_perf_json.py "$OUT"/*.json
