#!/usr/bin/env bash
# Bagua-Net over an emulated link on one machine: two network namespaces
# ("hosts") joined by a veth pair, each end shaped with tc tbf at RATE Gbit/s
# (full duplex, like a NIC). bagua-net-perf runs one rank in each namespace
# and measures, interleaved in the same run, the plugin at its defaults, the
# plugin limited to one stream, and one plain blocking TCP socket per
# direction. Namespaces are created and deleted by this script.
#
# Usage (root; iproute2): bench/cpu/link_bench.sh OUT_DIR [RATE_GBIT ...]
#   defaults: rates 2 5 8; REPS=3, SIZES="-b 64K -e 64M -f 4", PATTERNS=uni,ring,
#   CONFIGS (bagua-net-perf --configs; default: defaults and one stream)
set -euo pipefail
OUT=${1:?usage: link_bench.sh OUT_DIR [RATE_GBIT ...]}
shift
RATES=${*:-2 5 8}
REPS=${REPS:-3}
SIZES=${SIZES:-"-b 64K -e 64M -f 4"}
PATTERNS=${PATTERNS:-uni,ring}
CONFIGS=${CONFIGS:-"bagua=;bagua-1-stream=BAGUA_NET_STREAMS=1"}
HERE=$(cd "$(dirname "$0")" && pwd)
PERF=${PERF:-$HERE/../../build/tools/bagua-net-perf}
PLUGIN=${PLUGIN:-$HERE/../../build/net_plugin/libnccl-net-bagua.so}
mkdir -p "$OUT"

A=bgnlink-a-$$
B=bgnlink-b-$$
IF=bnlink  # the same name in both namespaces, so one NCCL_SOCKET_IFNAME serves both ranks
teardown() {
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
}
trap teardown EXIT

setup() {  # setup RATE_GBIT
  teardown
  ip netns add "$A"
  ip netns add "$B"
  ip link add bnl-a-$$ type veth peer name bnl-b-$$
  ip link set bnl-a-$$ netns "$A"
  ip link set bnl-b-$$ netns "$B"
  ip -n "$A" link set bnl-a-$$ name $IF
  ip -n "$B" link set bnl-b-$$ name $IF
  ip -n "$A" addr add 10.232.0.1/24 dev $IF
  ip -n "$B" addr add 10.232.0.2/24 dev $IF
  for ns in "$A" "$B"; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set $IF up
    # burst: enough for ~1.6 ms at 10 Gbit/s; latency bounds the queue.
    tc -n "$ns" qdisc add dev $IF root tbf rate "$1"gbit burst 2mb latency 5ms
  done
}

for rate in $RATES; do
  echo "== link ${rate} Gbit/s (tbf on both veth ends)" >&2
  setup "$rate"
  # shellcheck disable=SC2086
  NCCL_SOCKET_IFNAME="=$IF" "$PERF" --plugin "$PLUGIN" --ranks 2 --netns "$A,$B" \
    --pattern "$PATTERNS" $SIZES --reps "$REPS" --baseline --baseline-if $IF \
    --configs "$CONFIGS" \
    --json "$OUT/link_${rate}gbit.json" | tee "$OUT/link_${rate}gbit.txt"
done
teardown
python3 "$HERE/report.py" --title "Emulated link (veth + tbf)" "$OUT" "$OUT"/link_*gbit.json
