#!/usr/bin/env bash
# The measurements of this folder, in the order of the README's sections.
# Run from the repository root after ninja -C build, on a 2-CPU machine (or
# under taskset -c 0-1). "before" is BAGUA_NET_TEST_YIELD=0 (test() returns
# at once, as every build before this one); "after" the defaults.
# Usage: run.sh OUT
set -euo pipefail
OUT=${1:?usage: run.sh OUT}
mkdir -p "$OUT"
# 1 and 2: one connection, one way, sender and receiver in two processes,
# driven by bench-abi-client (depth 4; test() spun, or yielded), against one
# blocking TCP socket; 20 and 40 interleaved rounds.
CONFIGS="before:spin:BAGUA_NET_TEST_YIELD=0 after:spin before_yieldpoll:yield:BAGUA_NET_TEST_YIELD=0 after_yieldpoll:yield" \
  bash bench/cpu/abi_client_bench.sh "$OUT/abi_client" 20
CONFIGS="before:spin:BAGUA_NET_TEST_YIELD=0 after:spin" \
  bash bench/cpu/abi_client_bench.sh "$OUT/abi_client_40" 40
# 3: bagua-net-perf (its poll yields when a pass found nothing, as NCCL's
# proxy does), both patterns, against TCP, 20 rounds; then ping-pong.
export NCCL_SOCKET_IFNAME="=lo"
build/tools/bagua-net-perf --pattern uni,ring -b 1M -e 64M -f 4 -n 10 -w 2 --reps 20 --baseline \
  --configs "before=BAGUA_NET_TEST_YIELD=0;after=" --compare-to before \
  --json "$OUT/perf_bw.json" >"$OUT/perf_bw.txt"
build/tools/bagua-net-perf --pattern pingpong -b 8 -e 64K -f 8 -n 1000 -w 100 --reps 20 --baseline \
  --configs "before=BAGUA_NET_TEST_YIELD=0;after=" --compare-to before \
  --json "$OUT/perf_lat.json" >"$OUT/perf_lat.txt"
