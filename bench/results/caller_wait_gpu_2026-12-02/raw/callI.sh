#!/bin/bash
# call I: stash + short-read rule + caller-wait signal (new) against 5691fc8 (old), quiet 4/8/2 ranks, 4 ranks with 8 busy loops, 2-rank bandwidth
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum $P/*.so .device/plugin_old/*.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rI; rm -rf $R; mkdir -p $R
OLD=old=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
run() {  # NAME RANKS REPS HOGS TIMEOUT SIZES ITERS CONFIGS
  local pids=""
  for i in $(seq 1 $4); do sh -c 'while :; do :; done' & pids="$pids $!"; done
  SIZES="$6" ITERS="$7" REPS=$3 RANKS="$2" CONFIGS="$8" \
    timeout $5 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  [ -n "$pids" ] && kill $pids; wait 2>/dev/null
  echo "== $1 ($((SECONDS)) s)"; grep -A9 "^| size" $OUT/$1.txt | grep "^|"
  grep -h "callers' wait\|waited for a CPU\|off its CPU" $R/$1/*.nccl.*.log 2>/dev/null | sed 's/^.*NET\/Bagua //' | sort | uniq -c | sort -rn | head -12 > $OUT/$1.wait.txt
  head -12 $OUT/$1.wait.txt
}
S="-b 8 -e 512K -f 8"; I="-n 200 -w 20"
run small4 4 3 0 110 "$S" "$I" "bagua $OLD socket"
run small4_hogs8 4 2 8 110 "$S" "$I" "bagua $OLD s0=BAGUA_NET_SPIN_US=0 socket"
run small8 8 2 0 150 "$S" "$I" "bagua $OLD inline=BAGUA_NET_ENGINE=inline socket"
run small2 2 2 0 60 "$S" "$I" "bagua $OLD socket"
run large2 2 2 0 80 "-b 16M -e 256M -f 4" "-n 10 -w 3" "bagua $OLD"
find $R -name "*.nccl.*.log" -size +2M -delete; tar czf $OUT/rawI.tgz -C $R .
