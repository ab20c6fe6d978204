#!/bin/bash
# call A: 4-rank small messages by algorithm (Ring/Tree) for Bagua-Net and socket; 2-rank 16-64 MiB channel bytes; kernels test
cd "$(dirname "$0")/.." && . .device/common.sh
( timeout 60 .device/bin/kernels_gpu_test 2>&1 | tail -25 ) > $OUT/kernels_gpu_test.txt
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS="" NULL_NET=$PWD/build/bench/gpu/null_net.so
sha256sum $P/*.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rA; rm -rf $R; mkdir -p $R
SIZES="-b 8 -e 512K -f 4" ITERS="-n 200 -w 20" REPS=3 RANKS="4" \
  CONFIGS="bagua bring=NCCL_ALGO=Ring btree=NCCL_ALGO=Tree socket socket_ring=NCCL_ALGO=Ring socket_tree=NCCL_ALGO=Tree" \
  timeout 300 bash bench/gpu/net_defaults.sh $R/small4 > $OUT/small4.txt 2>&1
for d in $R/small4; do for c in bagua bring btree socket socket_ring socket_tree; do
  echo "== $c"; cat $d/all_reduce__${c}__r4_1.nccl.*.log 2>/dev/null | grep -o "AllReduce: [0-9]* Bytes -> Algo .*" | sort | uniq -c | sort -k3n | head -12
done; done > $OUT/algos4.txt
SIZES="-b 16M -e 64M -f 4" ITERS="-n 20 -w 3" REPS=2 RANKS="2" LIMIT_GPU_STREAMS="4" \
  CONFIGS="bagua cb2m=BAGUA_NET_TUNER_CHANNEL_BYTES=2M cb32=BAGUA_NET_TUNER_CHANNEL_BYTES=512K,BAGUA_NET_TUNER_CHANNELS=32 socket" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/large2 > $OUT/large2.txt 2>&1
grep -h "tuner\|Loaded net plugin" $R/*/*bagua*r4_1*.nccl.*.log 2>/dev/null | sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | sort -rn | head -20 > $OUT/tuner_lines.txt
find $R -name "*.nccl.*.log" ! -name "*_1.nccl.*" -delete; tar czf $OUT/rawA.tgz -C $R .
cat $OUT/kernels_gpu_test.txt | tail -3; tail -n 45 $OUT/small4.txt; cat $OUT/algos4.txt | head -80; tail -n 25 $OUT/large2.txt
