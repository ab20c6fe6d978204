#!/bin/bash
# call T1 (2026-12-04): the README's table again with this stop's plugin (main at dff37cf): all_reduce
# busbw 16 / 64 / 256 MiB at 2 and 4 ranks (the targets name these), Bagua-Net vs socket defaults vs hand-tuned socket,
# 3 interleaved repetitions, and the staged-TCP ceiling (tcp_limit.py --gpu, 2 and 4 sockets).
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_new/libnccl-net-bagua.so
sha256sum $PLUGIN | cut -c1-16 > $OUT/plugin.txt
R=/tmp/rT1; rm -rf $R; mkdir -p $R
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=3 RANKS="2 4" LIMIT_STREAMS="" LIMIT_GPU_STREAMS="2 4" \
  CONFIGS="bagua socket socket_tuned" timeout 380 bash bench/gpu/net_defaults.sh $R/big > $R/big.txt 2>&1
echo "big rc=$?"
sed -n '/^## /,$p' $R/big.txt | head -70
grep -h "#wrong\|Out of bounds" $R/big/all_reduce__*.log | sort | uniq -c | head
find $R -name "*.nccl.*.log" -delete; cp $OUT/plugin.txt $R/; tar czf $OUT/t1.tgz -C $R .
