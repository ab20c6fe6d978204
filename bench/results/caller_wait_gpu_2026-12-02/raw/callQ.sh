#!/bin/bash
# call Q: the final build (42452ae) against 5691fc8 at 4 ranks, quiet, ABBA, 3 reps
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rQ; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
SAME=BAGUA_NET_SPIN_BACKOFF=1
SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=3 RANKS=4 CONFIGS="bagua old=$OP old_b=$OP bagua_b=$SAME" \
  timeout 150 bash bench/gpu/net_defaults.sh $R/small4 > $OUT/small4.txt 2>&1
grep -A9 "^| size" $OUT/small4.txt | grep "^|"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawQ.tgz -C $R .
