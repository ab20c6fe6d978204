#!/bin/bash
# call N: 8 ranks, small messages: does test()'s yield (auto at a share of <= 2 CPUs) cost latency?
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rN; rm -rf $R; mkdir -p $R
run() {  # NAME RANKS REPS TIMEOUT CONFIGS
  SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=$3 RANKS="$2" CONFIGS="$5" \
    timeout $4 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  echo "== $1 ($((SECONDS)) s)"; grep -A9 "^| size" $OUT/$1.txt | grep "^|"
}
run small8 8 2 200 "bagua ty0=BAGUA_NET_TEST_YIELD=0 inline=BAGUA_NET_ENGINE=inline inl_ty0=BAGUA_NET_ENGINE=inline,BAGUA_NET_TEST_YIELD=0 socket"
run small4 4 2 120 "bagua ty1=BAGUA_NET_TEST_YIELD=1 socket"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawN.tgz -C $R .
