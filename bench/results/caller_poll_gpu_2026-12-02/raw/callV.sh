#!/bin/bash
# call V (2026-12-02, stop 53): the same at 4 ranks, then bandwidth at 2 ranks (no loss where
# worker streams carry the bytes), against main's build and socket tuned.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rV; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
CONFIGS="bagua old=$OP socket socket_b=BAGUA_ORDER_TAG=b old_b=$OP bagua_b=BAGUA_NET_SPIN_BACKOFF=1"
SIZES="-b 8 -e 256K -f 8" ITERS="-n 300 -w 30" REPS=3 RANKS=4 CONFIGS="$CONFIGS" \
  timeout 260 bash bench/gpu/net_defaults.sh $R/small4 > $OUT/small4.txt 2>&1
echo "== small4 ($SECONDS s)"; grep -A9 "^| size" $OUT/small4.txt | grep "^|"
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS=2 LIMIT_STREAMS="16" \
  CONFIGS="bagua old=$OP socket_tuned old_b=$OP bagua_b=BAGUA_NET_SPIN_BACKOFF=1" \
  timeout 230 bash bench/gpu/net_defaults.sh $R/large2 > $OUT/large2.txt 2>&1
echo "== large2 ($SECONDS s)"; grep -A8 "^| size" $OUT/large2.txt | grep "^|"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawV.tgz -C $R .
