#!/bin/bash
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
R=/tmp/r3; mkdir -p $R
SIZES="-b 8 -e 512K -f 4" ITERS="-n 2000 -w 100" REPS=3 RANKS="4" \
  CONFIGS="bagua w4=BAGUA_NET_THREADS=4 cs1=BAGUA_NET_CALLER_STREAM=1 socket" \
  timeout 150 bash bench/gpu/net_defaults.sh $R/lat4 > $OUT/lat4.txt 2>&1
tar czf $OUT/raw3.tgz -C $R .
grep -v "^all_reduce__" $OUT/lat4.txt | grep "^|"
PROBE0=9000 EMU_MTU=65000 SLOW_CONFIGS="bagua t0=BAGUA_NET_TUNER=0 inline=BAGUA_NET_ENGINE=inline socket" REPS=2 bash .device/call2.sh
