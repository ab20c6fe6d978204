#!/bin/bash
# call G: final build (2 ranks: no caller stream while quiet) against the old default, quiet 2 and 4 ranks, 4 ranks with 8 busy loops
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum $P/*.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rG; rm -rf $R; mkdir -p $R
small() {  # NAME RANKS REPS HOGS CONFIGS
  local pids=""
  for i in $(seq 1 $4); do sh -c 'while :; do :; done' & pids="$pids $!"; done
  SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=$3 RANKS="$2" CONFIGS="$5" \
    timeout 100 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  [ -n "$pids" ] && kill $pids; wait 2>/dev/null
}
OLD=old=BAGUA_NET_SPIN_BACKOFF=0,BAGUA_NET_CALLER_STREAM=0
small small2 2 2 0 "bagua $OLD socket"
small small4 4 2 0 "bagua $OLD socket"
small small4_hogs8 4 2 8 "bagua s0=BAGUA_NET_SPIN_US=0 socket"
find $R -name "*.nccl.*.log" ! -name "*_1.nccl.*" -delete; tar czf $OUT/rawG.tgz -C $R .
for f in small2 small4 small4_hogs8; do echo "== $f"; grep -A9 "^| size" $OUT/$f.txt | grep "^|"; done
