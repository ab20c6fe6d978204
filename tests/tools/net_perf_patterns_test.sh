#!/usr/bin/env bash
# bagua-net-perf's patterns through the shipped plugin and its TCP baseline,
# with the data check on: every pattern must finish (exit 0: no wrong byte,
# no size error) and print its table; tree on 4 ranks has a rank with both a
# parent and a child (rank 1: parent 0, child 3).
#
# Usage: net_perf_patterns_test.sh PERF_BIN PLUGIN_SO
set -u
PERF=$1
PLUGIN=$2
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$out"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
export NCCL_SOCKET_IFNAME="=lo"

for case in "ring 3" "uni 2" "pingpong 2" "tree 4" "tree 3"; do
  read -r pattern ranks <<<"$case"
  "$PERF" --plugin "$PLUGIN" --ranks "$ranks" --pattern "$pattern" -b 8 -e 64K -f 64 -n 20 -w 4 \
    --baseline --timeout 30 >"$out" 2>&1
  rc=$?
  [ "$rc" = 0 ] || fail "$pattern on $ranks ranks: exit $rc"
  grep -q "^# $pattern: $ranks ranks" "$out" || fail "$pattern on $ranks ranks: no table"
  # A row per size for both configurations (a wrong byte makes the exit code 3).
  rows=$(grep -cE "^ +(8|512|32K) +plugin|^ +tcp " "$out")
  [ "$rows" -ge 6 ] || fail "$pattern on $ranks ranks: $rows rows, expected 6"
done

"$PERF" --plugin "$PLUGIN" --pattern trees >"$out" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "exit $rc (want 2) for an unknown pattern"
grep -q "ring, uni, pingpong or tree" "$out" || fail "the usage error does not list the patterns"
echo "PASS"
