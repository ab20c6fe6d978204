#!/bin/bash
# call C: one or two spinning workers per rank at 4 ranks
cd "$(dirname "$0")/.." && . .device/common.sh
uname -a > $OUT/uname.txt; cat /proc/cmdline >> $OUT/uname.txt
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
R=/tmp/rC; rm -rf $R; mkdir -p $R
SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=3 RANKS="4" \
  CONFIGS="bagua t1=BAGUA_NET_THREADS=1 t2=BAGUA_NET_THREADS=2 s0=BAGUA_NET_SPIN_US=0 inline=BAGUA_NET_ENGINE=inline socket" \
  timeout 280 bash bench/gpu/net_defaults.sh $R/small4 > $OUT/small4.txt 2>&1
find $R -name "*.nccl.*.log" ! -name "*_1.nccl.*" -delete; tar czf $OUT/rawC.tgz -C $R .
cat $OUT/uname.txt; tail -n 14 $OUT/small4.txt
