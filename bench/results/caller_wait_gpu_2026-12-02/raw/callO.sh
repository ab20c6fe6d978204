#!/bin/bash
# call O: test()'s yield, ABBA: 4 ranks with it on (auto: off there), 8 ranks with it off (auto: on)
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rO; rm -rf $R; mkdir -p $R
SAME=BAGUA_NET_SPIN_BACKOFF=1  # the default: a second name for the same configuration
run() {  # NAME RANKS REPS TIMEOUT CONFIGS
  SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=$3 RANKS="$2" CONFIGS="$5" \
    timeout $4 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  echo "== $1 ($((SECONDS)) s)"; grep -A9 "^| size" $OUT/$1.txt | grep "^|"
}
run small4 4 3 150 "bagua ty1=BAGUA_NET_TEST_YIELD=1 ty1_b=BAGUA_NET_TEST_YIELD=1 bagua_b=$SAME socket"
run small8 8 2 150 "bagua ty0=BAGUA_NET_TEST_YIELD=0 ty0_b=BAGUA_NET_TEST_YIELD=0 bagua_b=$SAME socket"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawO.tgz -C $R .
