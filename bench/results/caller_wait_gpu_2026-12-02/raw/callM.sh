#!/bin/bash
# call M: bandwidth, the final build against 5691fc8 (old), ABBA; *0 = BAGUA_NET_SPIN_BACKOFF=0 (no sampling, no signal)
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rM; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
SAME=BAGUA_NET_SPIN_BACKOFF=1  # the default: a second name for the same configuration
run() {  # NAME RANKS REPS TIMEOUT CONFIGS
  SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=$3 RANKS="$2" CONFIGS="$5" \
    timeout $4 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  echo "== $1 ($((SECONDS)) s)"; grep -A5 "^| size" $OUT/$1.txt | grep "^|"
}
run large2 2 3 200 "bagua old=$OP bagua0=BAGUA_NET_SPIN_BACKOFF=0 old_b=$OP bagua_b=$SAME"
run large4 4 2 200 "bagua old=$OP old_b=$OP bagua_b=$SAME"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawM.tgz -C $R .
