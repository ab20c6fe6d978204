#!/usr/bin/env bash
# A peer *host* that vanishes without FIN or RST (its link goes down mid-
# transfer): the surviving rank's pending requests must fail, not hang, within
# about BAGUA_NET_PEER_TIMEOUT_SEC (TCP_USER_TIMEOUT and keepalive). Two
# network namespaces joined by a veth pair stand in for two hosts; the ranks
# are bagua-net-perf processes driving the shipped plugin through its ABI.
# Needs root and iproute2; exits 77 (skipped) otherwise.
#
# Usage: dead_host_test.sh PERF_BIN PLUGIN_SO
set -u
PERF=$1
PLUGIN=$2
TIMEOUT_SEC=3  # BAGUA_NET_PEER_TIMEOUT_SEC for both ranks
BOUND_SEC=12   # the error must come within this long after the link drops

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
  echo "SKIP: needs root and iproute2 (network namespaces)"
  exit 77
fi
tag=$$
A=bgndh-a-$tag
B=bgndh-b-$tag
VA=bda$tag
VB=bdb$tag
STORE=$(mktemp -d)
cleanup() {
  kill "${pids[@]}" 2>/dev/null
  ip netns del "$A" 2>/dev/null
  ip netns del "$B" 2>/dev/null
  rm -rf "$STORE"
}
pids=()
trap cleanup EXIT

if ! { ip netns add "$A" && ip netns add "$B" && ip link add "$VA" type veth peer name "$VB"; }; then
  echo "SKIP: cannot create network namespaces or veth here"
  exit 77
fi
ip link set "$VA" netns "$A"
ip link set "$VB" netns "$B"
ip -n "$A" addr add 10.231.7.1/24 dev "$VA"
ip -n "$B" addr add 10.231.7.2/24 dev "$VB"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "$VA" up
ip -n "$B" link set "$VB" up

# Rank 1 (in B) receives, rank 0 (in A) sends 64 MiB messages for a long time.
run_rank() {  # run_rank NS IFACE RANK
  ip netns exec "$1" env NCCL_SOCKET_IFNAME="=$2" BAGUA_NET_PEER_TIMEOUT_SEC=$TIMEOUT_SEC \
    "$PERF" --plugin "$PLUGIN" --rank "$3" --world 2 --store "$STORE" --pattern uni \
    -b 64M -e 64M -n 1000000 -w 1 -c 0 --timeout 120 >"$STORE/rank$3.log" 2>&1
}
run_rank "$B" "$VB" 1 &
pids+=($!)
run_rank "$A" "$VA" 0 &
sender=$!
pids+=($sender)

sleep 4
if ! kill -0 "$sender" 2>/dev/null; then
  echo "FAIL: the sender ended before the link went down"
  cat "$STORE"/rank*.log
  exit 1
fi
echo "dropping the link of rank 1's host"
ip -n "$B" link set "$VB" down
start=$SECONDS
wait "$sender"
rc=$?
elapsed=$((SECONDS - start))
echo "sender exited with $rc after $elapsed s"
tail -n 5 "$STORE/rank0.log"
if [ "$rc" = 0 ]; then
  echo "FAIL: the sender reported success although its peer vanished"
  exit 1
fi
if [ "$elapsed" -gt "$BOUND_SEC" ]; then
  echo "FAIL: the error took $elapsed s (bound $BOUND_SEC s)"
  exit 1
fi
if ! grep -qE "ncclRemoteError|ncclSystemError" "$STORE/rank0.log"; then
  echo "FAIL: the sender's error is not a plugin error from test()"
  exit 1
fi
echo "PASS: the dead host was detected in $elapsed s"
