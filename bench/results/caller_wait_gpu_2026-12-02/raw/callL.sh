#!/bin/bash
# call L: the caller-wait signal alone (stash and short-read rule reverted) against 5691fc8 (old):
# quiet 4 and 2 ranks in ABBA order, 4 and 2 ranks with 8 busy loops, 2- and 4-rank bandwidth
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rL; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
SAME=BAGUA_NET_SPIN_BACKOFF=1  # the default: a second name for the same configuration
run() {  # NAME RANKS REPS HOGS TIMEOUT SIZES ITERS CONFIGS
  local pids=""
  for i in $(seq 1 $4); do sh -c 'while :; do :; done' & pids="$pids $!"; done
  SIZES="$6" ITERS="$7" REPS=$3 RANKS="$2" CONFIGS="$8" \
    timeout $5 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  [ -n "$pids" ] && kill $pids; wait 2>/dev/null
  echo "== $1 ($((SECONDS)) s)"; grep -A9 "^| size" $OUT/$1.txt | grep "^|"
  grep -h "callers' wait" $R/$1/*.nccl.*.log 2>/dev/null | sed 's/^.*NET\/Bagua //' | sort | uniq -c | sort -rn | head -3
}
S="-b 8 -e 512K -f 8"; I="-n 200 -w 20"; L="-b 16M -e 256M -f 4"; LI="-n 10 -w 3"
run small4 4 3 0 120 "$S" "$I" "bagua old=$OP old_b=$OP bagua_b=$SAME socket"
run small4_hogs8 4 3 8 140 "$S" "$I" "bagua old=$OP s0=BAGUA_NET_SPIN_US=0 socket"
run small2 2 2 0 80 "$S" "$I" "bagua old=$OP old_b=$OP bagua_b=$SAME socket"
run small2_hogs8 2 2 8 80 "$S" "$I" "bagua old=$OP socket"
run large2 2 2 0 90 "$L" "$LI" "bagua old=$OP old_b=$OP bagua_b=$SAME"
run large4 4 1 0 90 "$L" "$LI" "bagua old=$OP old_b=$OP bagua_b=$SAME"
find $R -name "*.nccl.*.log" -size +1M -delete; tar czf $OUT/rawL.tgz -C $R .
