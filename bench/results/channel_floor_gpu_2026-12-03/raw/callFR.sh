#!/bin/bash
# call FR (stop 57): the floor of 8 (.device/plugin_f8) against main's 16 (.device/plugin_main),
# socket defaults and tuned, 2 and 4 ranks, 4-256 MiB, 3 ABBA reps, GPU-staged TCP ceiling
# before/after; then 8 B-1 MiB at SMALL_RANKS (as run: 4, to fit the device time left),
# floor of 8 against socket. The full form, not yet run:
#   SMALL_RANKS="2 4 8" SMALL_TIMEOUT=250 bash .device/callFR.sh
SMALL_RANKS=${SMALL_RANKS:-4} SMALL_TIMEOUT=${SMALL_TIMEOUT:-150}
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_f8/libnccl-net-bagua.so LIMIT_STREAMS=""
OLD=NCCL_NET_PLUGIN=$PWD/.device/plugin_main/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rFR; rm -rf $R; mkdir -p $R
SIZES="-b 4M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=3 RANKS="2 4" LIMIT_GPU_STREAMS="4" \
  CONFIGS="bagua old16=$OLD socket socket_tuned" timeout 200 bash bench/gpu/net_defaults.sh $R/b > $R/b.txt 2>&1
cp $R/b.txt $OUT/bulk.txt
SIZES="-b 8 -e 1M -f 8" ITERS="-n 200 -w 20" REPS=3 RANKS="$SMALL_RANKS" LIMIT_GPU_STREAMS="" \
  CONFIGS="bagua socket" timeout $SMALL_TIMEOUT bash bench/gpu/net_defaults.sh $R/s > $R/s.txt 2>&1
cp $R/s.txt $OUT/small.txt
python3 bench/gpu/per_run_medians.py --sizes 8,64,512,4096,32768,262144 $R/s $R/small.per_run.txt > $R/small.medians.txt
for d in b s; do cd $R/$d && for f in all_reduce__*.log; do case $f in *.nccl.*) continue;; esac
  echo "$f $(awk '$1 ~ /^[0-9]+$/ && NF>10 {printf "%s/%s ", $6, $8}' $f)"; done > $OUT/per_run_$d.txt; cd - >/dev/null; done
grep -h "wrong\|Out of bounds" $R/*/*.log | sort | uniq -c > $OUT/wrong.txt
f=$(ls $R/b/all_reduce__bagua__r2_1.nccl.*.log | head -1); grep "NET/Bagua\|TUNER\|tuner" $f | head > $OUT/bagua_log.txt
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawFR.tgz -C $R .
