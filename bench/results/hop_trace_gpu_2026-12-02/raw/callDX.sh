#!/bin/bash
# call DX (prepared in stop 55, NOT RUN: no device time left): a receive comm whose last message
# came on its caller stream reads that stream directly in test() (one recv, no epoll_wait over
# every caller stream) before the shared poll: direct_read.patch on f5c60d0, built into
# .device/plugin_direct/ (not committed). Against the drain build (HEAD) and socket, small
# messages at 2/4/8 ranks (4 ABBA reps), and bulk where stop 53's ungated progressFd lost
# (2 ranks 16-256 MiB, 8 ranks 1-16 MiB).
# Setup: git apply direct_read.patch && ninja -C build && cp build/net_plugin/libnccl-net-bagua.so
# .device/plugin_direct/ && git checkout net_plugin && ninja -C build && cp build/... .device/plugin_drain/
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_drain/libnccl-net-bagua.so LIMIT_STREAMS=""
X=NCCL_NET_PLUGIN=$PWD/.device/plugin_direct/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rDX; rm -rf $R /tmp/tr_*; mkdir -p $R /tmp/tr_4
C="bagua direct=$X socket socket_b=BAGUA_ORDER_TAG=b direct_b=$X,BAGUA_ORDER_TAG=b bagua_b=BAGUA_ORDER_TAG=b"
for np in 4 8 2; do
  SIZES="-b 8 -e 4K -f 8" ITERS="-n 1000 -w 100" REPS=4 RANKS=$np CONFIGS="$C" \
    timeout 200 bash bench/gpu/net_defaults.sh $R/c$np > $R/c$np.txt 2>&1
  python3 bench/gpu/per_run_medians.py $R/c$np $OUT/c$np.per_run.txt
done
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS=2 CONFIGS="bagua direct=$X" \
  timeout 150 bash bench/gpu/net_defaults.sh $R/big2 > $R/big2.txt 2>&1
SIZES="-b 1M -e 16M -f 4" ITERS="-n 20 -w 5" REPS=2 RANKS=8 CONFIGS="bagua direct=$X" \
  timeout 150 bash bench/gpu/net_defaults.sh $R/big8 > $R/big8.txt 2>&1
grep -A5 "^| size" $R/big2.txt $R/big8.txt | grep "|"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawDX.tgz -C $R .
