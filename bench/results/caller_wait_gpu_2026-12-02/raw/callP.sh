#!/bin/bash
# call P: the final build (42452ae), 4 ranks quiet and with 8 busy loops, 2 ranks quiet, against socket
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rP; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
run() {  # NAME RANKS REPS HOGS TIMEOUT CONFIGS
  local pids=""
  for i in $(seq 1 $4); do sh -c 'while :; do :; done' & pids="$pids $!"; done
  SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=$3 RANKS="$2" CONFIGS="$6" \
    timeout $5 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  [ -n "$pids" ] && kill $pids; wait 2>/dev/null
  echo "== $1 ($((SECONDS)) s)"; grep -A9 "^| size" $OUT/$1.txt | grep "^|"
  grep -h "callers' wait" $R/$1/*.nccl.*.log 2>/dev/null | sed 's/^.*NET\/Bagua //' | sort | uniq -c | sort -rn | head -3
}
run small4 4 2 0 100 "bagua old=$OP socket"
run small4_hogs8 4 2 8 100 "bagua old=$OP socket"
run small2 2 2 0 60 "bagua socket"
find $R -name "*.nccl.*.log" -size +1M -delete; tar czf $OUT/rawP.tgz -C $R .
