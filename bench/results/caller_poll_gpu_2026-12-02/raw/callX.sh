#!/bin/bash
# call X (2026-12-02, stop 53): 8 ranks, 8-64 B (NCCL picks Tree LL, 1 channel, for both
# transports: call W), -n 1000: which part of Bagua-Net's test() costs the ~10 us. ABBA.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
R=/tmp/rX; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
SIZES="-b 8 -e 64 -f 8" ITERS="-n 1000 -w 100" REPS=2 RANKS=8 \
  CONFIGS="bagua socket y0=BAGUA_NET_TEST_YIELD=0 s1=BAGUA_NET_STREAMS=1 inl=BAGUA_NET_ENGINE=inline old=$OP old_b=$OP inl_b=BAGUA_NET_ENGINE=inline,BAGUA_ORDER_TAG=b s1_b=BAGUA_NET_STREAMS=1,BAGUA_ORDER_TAG=b y0_b=BAGUA_NET_TEST_YIELD=0,BAGUA_ORDER_TAG=b socket_b=BAGUA_ORDER_TAG=b bagua_b=BAGUA_NET_SPIN_BACKOFF=1" \
  timeout 280 bash bench/gpu/net_defaults.sh $R/x8 > $OUT/x8.txt 2>&1
echo "== x8 ($SECONDS s)"; grep -A9 "^| size" $OUT/x8.txt | grep "^|"
for f in $R/x8/all_reduce__*__r8_?.log; do
  printf "%s %s %s\n" "$(basename $f .log)" "$(awk '$1==8 && $2==2 {print $6; exit}' $f)" "$(awk '$1==64 && $2==16 {print $6; exit}' $f)"
done
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawX.tgz -C $R .
