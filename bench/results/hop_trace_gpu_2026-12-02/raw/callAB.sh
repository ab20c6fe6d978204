#!/bin/bash
# call AB (2026-12-02, stop 53): 8 ranks, 8-512 B (Tree LL): is the caller engine's 1 us poll
# throttle (a test() within 1 us of the process's last poll skips it) the tree's loss? t0 = this
# stop's build with kCallerPollIntervalNs = 0 (not committed); y0 = BAGUA_NET_TEST_YIELD=0. ABBA.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rAB; rm -rf $R; mkdir -p $R
T0=NCCL_NET_PLUGIN=$PWD/.device/plugin_t0/libnccl-net-bagua.so
SIZES="-b 8 -e 512 -f 8" ITERS="-n 500 -w 50" REPS=2 RANKS=8 \
  CONFIGS="bagua t0=$T0 t0y0=$T0,BAGUA_NET_TEST_YIELD=0 socket socket_b=BAGUA_ORDER_TAG=b t0y0_b=$T0,BAGUA_NET_TEST_YIELD=0,BAGUA_ORDER_TAG=b t0_b=$T0,BAGUA_ORDER_TAG=b bagua_b=BAGUA_NET_SPIN_BACKOFF=1" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/ab8 > $OUT/ab8.txt 2>&1
echo "== ab8 ($SECONDS s)"; grep -A5 "^| size" $OUT/ab8.txt | grep "^|"
for f in $R/ab8/all_reduce__*__r8_?.log; do
  printf "%s %s %s %s\n" "$(basename $f .log)" "$(awk '$1==8 && $2==2 {print $6; exit}' $f)" \
    "$(awk '$1==64 && $2==16 {print $6; exit}' $f)" "$(awk '$1==512 && $2==128 {print $6; exit}' $f)"
done | tee $OUT/ab8.per_run.txt
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawAB.tgz -C $R .
SIZES="-b 8 -e 512 -f 8" ITERS="-n 500 -w 50" REPS=2 RANKS=4 \
  CONFIGS="bagua t0=$T0 socket socket_b=BAGUA_ORDER_TAG=b t0_b=$T0,BAGUA_ORDER_TAG=b bagua_b=BAGUA_NET_SPIN_BACKOFF=1" \
  timeout 150 bash bench/gpu/net_defaults.sh $R/ab4 > $OUT/ab4.txt 2>&1
echo "== ab4 ($SECONDS s)"; grep -A5 "^| size" $OUT/ab4.txt | grep "^|"
for f in $R/ab4/all_reduce__*__r4_?.log; do
  printf "%s %s %s %s\n" "$(basename $f .log)" "$(awk '$1==8 && $2==2 {print $6; exit}' $f)" \
    "$(awk '$1==64 && $2==16 {print $6; exit}' $f)" "$(awk '$1==512 && $2==128 {print $6; exit}' $f)"
done | tee $OUT/ab4.per_run.txt
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawAB.tgz -C $R .
