#!/bin/bash
# call S1: the caller stream's receive stash (one receive per small message), paired in one
# plugin by BAGUA_NET_RECV_STASH (0 off = main's behaviour, 1 caller stream, 2 every stream),
# against socket defaults; small messages at 4/8/2 ranks, then 2-rank bulk for 2.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_stash/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rS1; rm -rf $R; mkdir -p $R
C="bagua off=BAGUA_NET_RECV_STASH=0 all=BAGUA_NET_RECV_STASH=2 socket"
for np in 4 8 2; do
  SIZES="-b 8 -e 1M -f 8" ITERS="-n 500 -w 50" REPS=4 RANKS=$np CONFIGS="$C" \
    timeout 170 bash bench/gpu/net_defaults.sh $R/c$np > $R/c$np.txt 2>&1
  python3 bench/gpu/per_run_medians.py --sizes 8,64,512,4096,32768,262144 $R/c$np $OUT/c$np.per_run.txt
  cat $OUT/c$np.per_run.txt
done
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS=2 CONFIGS="bagua all=BAGUA_NET_RECV_STASH=2 off=BAGUA_NET_RECV_STASH=0" \
  timeout 100 bash bench/gpu/net_defaults.sh $R/big2 > $R/big2.txt 2>&1
grep -A6 "^| size" $R/big2.txt | grep "|"
grep -h "#wrong\|Out of bounds" $R/*/all_reduce__*.log | sort | uniq -c | head
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawS1.tgz -C $R .
