#!/usr/bin/env bash
# Per-message chunk size (adaptive_chunks.patch) against the fixed 256 KiB chunk, loopback,
# 2 ranks, one way and both ways, paired per round. Needs a build with the patch applied
# (the knob BAGUA_NET_MAX_CHUNK_BYTES exists only there):
#   git show dfaa864:bench/results/chunks_2026-11-24/adaptive_chunks.patch | git apply && ninja -C build
#   bash bench/results/chunks_2026-11-24/run_chunks.sh OUT 0-7 30
# Usage: run_chunks.sh OUT [CPUS (0-1)] [REPS (20)] [MIN_SIZE (16M)]
set -euo pipefail
OUT=${1:?usage: run_chunks.sh OUT [CPUS] [REPS] [MIN_SIZE]}
CPUS=${2:-0-1}
REPS=${3:-20}
MIN=${4:-16M}
PERF=${PERF:-build/tools/bagua-net-perf}
PLUGIN=${PLUGIN:-build/net_plugin/libnccl-net-bagua.so}
if ! grep -q BAGUA_NET_MAX_CHUNK_BYTES "$PLUGIN"; then
  echo "run_chunks.sh: $PLUGIN has no BAGUA_NET_MAX_CHUNK_BYTES; apply adaptive_chunks.patch (git show dfaa864:bench/results/chunks_2026-11-24/adaptive_chunks.patch) and rebuild" >&2
  exit 2
fi
mkdir -p "$OUT"
export NCCL_SOCKET_IFNAME==lo
taskset -c "$CPUS" "$PERF" --plugin "$PLUGIN" --pattern uni,ring -b "$MIN" -e 64M -f 4 -n 10 -w 2 \
  --reps "$REPS" --compare-to fixed --json "$OUT/chunks_$CPUS.json" \
  --configs "fixed=BAGUA_NET_MAX_CHUNK_BYTES=256K;adaptive=;max512K=BAGUA_NET_MAX_CHUNK_BYTES=512K" \
  | tee "$OUT/chunks_$CPUS.txt"
