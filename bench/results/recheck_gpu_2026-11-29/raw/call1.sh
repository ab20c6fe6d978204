#!/bin/bash
# call 1: HEAD (review fixes of stops 49-50) against 87f02a0's plugin; 4-rank small-message variants; tuner INFO lines
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum $P/*.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/r1; mkdir -p $R
SIZES="-b 8 -e 512K -f 4" ITERS="-n 200 -w 20" REPS=3 RANKS="4" \
  CONFIGS="bagua old=NCCL_NET_PLUGIN=$P/p87f.so cs1=BAGUA_NET_CALLER_STREAM=1 cs1s0=BAGUA_NET_CALLER_STREAM=1,BAGUA_NET_SPIN_US=0 socket" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/small4 > $OUT/small4.txt 2>&1
SIZES="-b 8 -e 512K -f 4" ITERS="-n 200 -w 20" REPS=2 RANKS="2 8" \
  CONFIGS="bagua old=NCCL_NET_PLUGIN=$P/p87f.so socket" \
  timeout 150 bash bench/gpu/net_defaults.sh $R/small28 > $OUT/small28.txt 2>&1
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS="2 4" \
  CONFIGS="bagua old=NCCL_NET_PLUGIN=$P/p87f.so socket socket_tuned" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/large > $OUT/large.txt 2>&1
grep -h "tuner\|Loaded net plugin\|Bagua-Net" $R/*/*bagua*.nccl.*.log 2>/dev/null | sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | sort -rn | head -40 > $OUT/tuner_lines.txt
tar czf $OUT/raw1.tgz -C $R .
tail -n 40 $OUT/small4.txt
