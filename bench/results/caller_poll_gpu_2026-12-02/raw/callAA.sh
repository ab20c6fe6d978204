#!/bin/bash
# call AA (2026-12-02, stop 53): the build with recvLater only (progressFd dropped) against
# main's: bulk at 8 and 2 ranks (where call Z's progressFd build lost), then 8 ranks 8 B-256 KiB.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rAA; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
C="bagua old=$OP old_b=$OP bagua_b=BAGUA_NET_SPIN_BACKOFF=1"
SIZES="-b 4M -e 64M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS=8 CONFIGS="$C" \
  timeout 120 bash bench/gpu/net_defaults.sh $R/bulk8 > $OUT/bulk8.txt 2>&1
echo "== bulk8 ($SECONDS s)"; grep -A6 "^| size" $OUT/bulk8.txt | grep "^|"
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS=2 \
  CONFIGS="bagua old=$OP socket_tuned old_b=$OP bagua_b=BAGUA_NET_SPIN_BACKOFF=1" \
  timeout 150 bash bench/gpu/net_defaults.sh $R/large2 > $OUT/large2.txt 2>&1
echo "== large2 ($SECONDS s)"; grep -A6 "^| size" $OUT/large2.txt | grep "^|"
SIZES="-b 8 -e 256K -f 8" ITERS="-n 300 -w 30" REPS=3 RANKS=8 \
  CONFIGS="bagua old=$OP socket socket_b=BAGUA_ORDER_TAG=b old_b=$OP bagua_b=BAGUA_NET_SPIN_BACKOFF=1" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/small8 > $OUT/small8.txt 2>&1
echo "== small8 ($SECONDS s)"; grep -A9 "^| size" $OUT/small8.txt | grep "^|"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawAA.tgz -C $R .
