#!/usr/bin/env bash
# Bagua-Net on loopback (no link: measures copies and CPU per byte): the
# plugin with io_uring and with epoll, limited to one stream, and one plain
# blocking TCP socket per direction, interleaved in one run; bandwidth for
# one direction and both at once, and ping-pong latency for small messages.
#
# Usage: bench/cpu/loopback_bench.sh OUT_DIR
#   REPS=3, SIZES="-b 64K -e 64M -f 4", LAT_SIZES="-b 8 -e 64K -f 8",
#   CONFIGS (bagua-net-perf --configs; default: defaults, io_uring, epoll, one
#   stream; the default engine is epoll below 4 CPUs, io_uring from 4),
#   PATTERNS=uni,ring, LATENCY=1 (0 skips the ping-pong run)
set -euo pipefail
OUT=${1:?usage: loopback_bench.sh OUT_DIR}
REPS=${REPS:-3}
SIZES=${SIZES:-"-b 64K -e 64M -f 4"}
LAT_SIZES=${LAT_SIZES:-"-b 8 -e 64K -f 8"}
HERE=$(cd "$(dirname "$0")" && pwd)
PERF=${PERF:-$HERE/../../build/tools/bagua-net-perf}
PLUGIN=${PLUGIN:-$HERE/../../build/net_plugin/libnccl-net-bagua.so}
CONFIGS=${CONFIGS:-"bagua=;bagua-io_uring=BAGUA_NET_ENGINE=io_uring;bagua-epoll=BAGUA_NET_ENGINE=epoll;bagua-1-stream=BAGUA_NET_STREAMS=1"}
PATTERNS=${PATTERNS:-uni,ring}
LATENCY=${LATENCY:-1}
mkdir -p "$OUT"
export NCCL_SOCKET_IFNAME==lo
# shellcheck disable=SC2086
"$PERF" --plugin "$PLUGIN" --ranks 2 --pattern "$PATTERNS" $SIZES --reps "$REPS" --baseline \
  --configs "$CONFIGS" --json "$OUT/loopback_bw.json" | tee "$OUT/loopback_bw.txt"
if [ "$LATENCY" = 1 ]; then
  # shellcheck disable=SC2086
  "$PERF" --plugin "$PLUGIN" --ranks 2 --pattern pingpong $LAT_SIZES -n 500 --reps "$REPS" \
    --baseline --configs "$CONFIGS" --json "$OUT/loopback_lat.json" | tee "$OUT/loopback_lat.txt"
fi
python3 "$HERE/report.py" --title "Loopback ($(nproc) CPUs)" "$OUT" "$OUT"/loopback_*.json
