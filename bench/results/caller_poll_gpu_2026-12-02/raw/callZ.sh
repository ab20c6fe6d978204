#!/bin/bash
# call Z (2026-12-02, stop 53): bulk at 8 and 4 ranks, where the caller stream carries whole
# messages up to BAGUA_NET_MIN_SPLIT_BYTES (8 ranks) or every <= 64 KiB one on a busy host:
# this stop's build against main's, ABBA, 2 repetitions; then 2 ranks with socket tuned.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rZ; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
C="bagua old=$OP old_b=$OP bagua_b=BAGUA_NET_SPIN_BACKOFF=1"
for r in 8 4; do
  SIZES="-b 4M -e 64M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS=$r CONFIGS="$C" \
    timeout 150 bash bench/gpu/net_defaults.sh $R/bulk$r > $OUT/bulk$r.txt 2>&1
  echo "== bulk$r ($SECONDS s)"; grep -A6 "^| size" $OUT/bulk$r.txt | grep "^|"
done
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS=2 \
  CONFIGS="bagua old=$OP socket_tuned old_b=$OP bagua_b=BAGUA_NET_SPIN_BACKOFF=1" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/large2 > $OUT/large2.txt 2>&1
echo "== large2 ($SECONDS s)"; grep -A6 "^| size" $OUT/large2.txt | grep "^|"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawZ.tgz -C $R .
