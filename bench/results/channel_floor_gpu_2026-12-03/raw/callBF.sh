#!/bin/bash
# call BF (stop 57): bulk at 2 and 4 ranks, main's plugin at defaults against channel and
# NCCL_BUFFSIZE variants, socket defaults and tuned, the GPU-staged TCP ceiling before/after.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_main/libnccl-net-bagua.so LIMIT_STREAMS="" LIMIT_GPU_STREAMS="2 4"
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rBF; rm -rf $R; mkdir -p $R
C="bagua ch8=NCCL_MIN_NCHANNELS=8,NCCL_MAX_NCHANNELS=8 ch32=NCCL_MIN_NCHANNELS=32,NCCL_MAX_NCHANNELS=32 buf1=NCCL_BUFFSIZE=1048576 buf16=NCCL_BUFFSIZE=16777216 socket socket_tuned"
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=3 RANKS="2 4" CONFIGS="$C" \
  timeout 500 bash bench/gpu/net_defaults.sh $R/b > $R/b.txt 2>&1
cp $R/b.txt $OUT/bulk.txt
grep -h "wrong\|Out of bounds" $R/b/*.log | sort | uniq -c > $OUT/wrong.txt
f=$(ls $R/b/all_reduce__bagua__r2_1.nccl.*.log | head -1); grep -i "tuner\|Bagua" $f | head -20 > $OUT/bagua_log.txt
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawBF.tgz -C $R .
