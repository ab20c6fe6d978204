#!/bin/bash
# call P2 (2026-12-04): the shipped rule (caller stream up to 2 KiB where workers spin, 512 B within
# a run of messages 40 us apart), built without knobs ("bagua"), against main before this stop
# (main_old, 512 B) and socket defaults, 4 ranks, 8 B - 16 KiB.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_final/libnccl-net-bagua.so LIMIT_STREAMS=""
OLD=$PWD/.device/plugin_main/libnccl-net-bagua.so
sha256sum $PLUGIN $OLD | cut -c1-16,65- > $OUT/plugin.txt
R=/tmp/rP2; rm -rf $R; mkdir -p $R
SIZES="-b 8 -e 16K -f 2" ITERS="-n 300 -w 30" REPS=4 RANKS=4 \
  CONFIGS="bagua main_old=NCCL_NET_PLUGIN=$OLD socket" \
  timeout 120 bash bench/gpu/net_defaults.sh $R/small4 > $R/small4.txt 2>&1; echo "small4 rc=$?"
python3 bench/gpu/per_run_medians.py --sizes 64,512,1024,2048,4096,8192 $R/small4 $R/small4.per_run.txt | tail -3
grep -h "#wrong\|Out of bounds" $R/*/all_reduce__*.log | sort | uniq -c | head
find $R -name "*.nccl.*.log" -delete; cp $OUT/plugin.txt $R/; tar czf $OUT/p2.tgz -C $R .
