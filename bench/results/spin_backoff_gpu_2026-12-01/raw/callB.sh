#!/bin/bash
# call B: why is this host's 4-rank small-message time 3x socket's? spin, engine, threads, topology
cd "$(dirname "$0")/.." && . .device/common.sh
lscpu > $OUT/lscpu.txt 2>&1; cat /proc/cpuinfo | grep -m1 "model name" >> $OUT/lscpu.txt
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
R=/tmp/rB; rm -rf $R; mkdir -p $R
SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=3 RANKS="4" \
  CONFIGS="bagua s0=BAGUA_NET_SPIN_US=0 epoll=BAGUA_NET_ENGINE=epoll inline=BAGUA_NET_ENGINE=inline t4=BAGUA_NET_THREADS=4 socket" \
  timeout 280 bash bench/gpu/net_defaults.sh $R/small4 > $OUT/small4.txt 2>&1
SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=2 RANKS="2" \
  CONFIGS="bagua s0=BAGUA_NET_SPIN_US=0 socket" \
  timeout 100 bash bench/gpu/net_defaults.sh $R/small2 > $OUT/small2.txt 2>&1
find $R -name "*.nccl.*.log" ! -name "*_1.nccl.*" -delete; tar czf $OUT/rawB.tgz -C $R .
grep -E "Thread|Core|Socket|Model name|NUMA" $OUT/lscpu.txt; tail -n 22 $OUT/small4.txt; tail -n 14 $OUT/small2.txt
