#!/bin/bash
# call V4 (2026-12-04): main's plugin ("bagua") against the candidate with the caller stream
# taking up to 2 KiB where workers spin ("new", kCallerStreamBytesWhileSpinning 512 -> 2048),
# and socket defaults, 4 ranks (the only rank count the constant reaches on this host).
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_main/libnccl-net-bagua.so LIMIT_STREAMS=""
NEW=$PWD/.device/plugin_new/libnccl-net-bagua.so
sha256sum .device/plugin_main/*.so .device/plugin_new/*.so | cut -c1-16,65- > $OUT/plugin.txt
R=/tmp/rV4; rm -rf $R; mkdir -p $R
SIZES="-b 8 -e 16K -f 2" ITERS="-n 500 -w 50" REPS=8 RANKS=4 CONFIGS="bagua new=NCCL_NET_PLUGIN=$NEW socket" \
  timeout 250 bash bench/gpu/net_defaults.sh $R/small4 > $R/small4.txt 2>&1; echo "small4 rc=$?"
python3 bench/gpu/per_run_medians.py --sizes 8,64,512,1024,2048,4096,16384 $R/small4 $R/small4.per_run.txt | tail -3
SIZES="-b 32K -e 1M -f 2" ITERS="-n 200 -w 20" REPS=3 RANKS=4 CONFIGS="bagua new=NCCL_NET_PLUGIN=$NEW" \
  timeout 100 bash bench/gpu/net_defaults.sh $R/mid4 > $R/mid4.txt 2>&1; echo "mid4 rc=$?"
python3 bench/gpu/per_run_medians.py --sizes 32768,131072,262144,1048576 $R/mid4 $R/mid4.per_run.txt | tail -2
grep -h "#wrong\|Out of bounds" $R/*/all_reduce__*.log | sort | uniq -c | head
grep -h "NET/Plugin\|Using network" $R/small4/*.nccl.*.log 2>/dev/null | sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | sort -rn | head -8 > $R/nccl_lines.txt
find $R -name "*.nccl.*.log" -delete; cp $OUT/plugin.txt $R/; tar czf $OUT/v4.tgz -C $R .
