#!/usr/bin/env bash
# bagua-net-info against the shipped plugin: it must report the ABI table and
# the device the environment selects, connect the device to itself, and show
# the plugin's own engine line with the knobs of this environment; a filter
# that matches no interface must fail with exit 1 and name the knob.
#
# Usage: net_info_test.sh INFO_BIN PLUGIN_SO
set -u
INFO=$1
PLUGIN=$2
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$out"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

NCCL_SOCKET_IFNAME="=lo" BAGUA_NET_ENGINE=epoll BAGUA_NET_STREAMS=3 BAGUA_NET_THREADS=3 \
  "$INFO" --plugin "$PLUGIN" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || fail "exit $rc on loopback"
grep -q "exports ncclNetPlugin: v12, v11, v10, v9, v8" "$out" || fail "the tables v12..v8 are not listed"
grep -q "ncclNetPlugin_v12, 1 device(s)" "$out" || fail "no v12 table with one device"
grep -q "\[0\] lo: .*, rail -1, plane -1" "$out" || fail "v12's rail and plane are not undefined (-1)"
grep -q "\[0\] lo: " "$out" || fail "device 0 is not lo"
grep -q "device 0 connected to itself" "$out" || fail "no self-connection"
grep -q "epoll engine, 3 worker threads (spin 0 us), 3 streams per connection" "$out" ||
  fail "the engine line does not show this environment's knobs"

NCCL_SOCKET_IFNAME="=lo" "$INFO" --plugin "$PLUGIN" --abi 8 --no-connect >"$out" 2>&1 ||
  fail "exit $? with --abi 8"
grep -q "ncclNetPlugin_v8, 1 device(s)" "$out" || fail "--abi 8 did not load the v8 table"
if grep -q "connected to itself" "$out"; then fail "--no-connect connected"; fi

NCCL_SOCKET_IFNAME="=no-such-if0" "$INFO" --plugin "$PLUGIN" >"$out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "exit $rc (want 1) when no interface matches"
grep -q "NCCL_SOCKET_IFNAME==no-such-if0" "$out" || fail "the failing knob is not named"

NCCL_SOCKET_IFNAME="=lo" "$INFO" --plugin "$PLUGIN" --abi 11 --no-connect >"$out" 2>&1 ||
  fail "exit $? with --abi 11"
grep -q "ncclNetPlugin_v11, 1 device(s)" "$out" || fail "--abi 11 did not load the v11 table"

for abi in 7 13; do
  "$INFO" --plugin "$PLUGIN" --abi $abi >"$out" 2>&1
  rc=$?
  [ "$rc" = 2 ] || fail "exit $rc (want 2) for --abi $abi"
done
echo "PASS"
