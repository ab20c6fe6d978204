#!/bin/bash
# call K: the same builds as call J in ABBA order (position-balanced): bagua (this build), old (5691fc8), nodrain
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rK; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
ND=NCCL_NET_PLUGIN=$PWD/.device/plugin_nodrain/libnccl-net-bagua.so
SAME=BAGUA_NET_SPIN_BACKOFF=1  # the default: a second name for the same configuration
run() {  # NAME RANKS REPS TIMEOUT CONFIGS
  SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=$3 RANKS="$2" CONFIGS="$5" \
    timeout $4 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  echo "== $1 ($((SECONDS)) s)"; grep -A9 "^| size" $OUT/$1.txt | grep "^|"
}
run small2 2 3 100 "bagua old=$OP old_b=$OP bagua_b=$SAME"
run small4 4 3 120 "bagua old=$OP old_b=$OP bagua_b=$SAME"
run small8 8 2 150 "bagua nodrain=$ND old=$OP old_b=$OP nodrain_b=$ND bagua_b=$SAME"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawK.tgz -C $R .
