#!/bin/bash
# call TR (2026-12-02, stop 55): where 8 B all_reduce time goes, from BAGUA_NET_TRACE (hop_trace.py),
# 4 and 8 ranks, Tree LL (NCCL's choice) and, at 8 ranks, Ring LL forced; socket beside it.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
TP=$PWD/.device/plugin_trace/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rTR; rm -rf $R /tmp/tr_*; mkdir -p $R /tmp/tr_4 /tmp/tr_8 /tmp/tr_8ring /tmp/tr_4_64
SIZES="-b 8 -e 8" ITERS="-n 3000 -w 200" REPS=1 RANKS=4 \
  CONFIGS="bagua tr=NCCL_NET_PLUGIN=$TP,BAGUA_NET_TRACE=/tmp/tr_4 socket" \
  timeout 120 bash bench/gpu/net_defaults.sh $R/t4 > $OUT/t4.txt 2>&1
echo "== t4 ($SECONDS s)"; grep -A3 "^| size" $OUT/t4.txt | grep "^|"
python3 bench/gpu/hop_trace.py /tmp/tr_4 | tee $OUT/hop4.txt
SIZES="-b 8 -e 8" ITERS="-n 3000 -w 200" REPS=1 RANKS=8 \
  CONFIGS="bagua tr=NCCL_NET_PLUGIN=$TP,BAGUA_NET_TRACE=/tmp/tr_8 socket trring=NCCL_NET_PLUGIN=$TP,BAGUA_NET_TRACE=/tmp/tr_8ring,NCCL_ALGO=Ring,NCCL_PROTO=LL socketring=NCCL_ALGO=Ring,NCCL_PROTO=LL" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/t8 > $OUT/t8.txt 2>&1
echo "== t8 ($SECONDS s)"; grep -A3 "^| size" $OUT/t8.txt | grep "^|"
python3 bench/gpu/hop_trace.py /tmp/tr_8 | tee $OUT/hop8.txt
python3 bench/gpu/hop_trace.py /tmp/tr_8ring | tee $OUT/hop8ring.txt
grep -h "socketring\|trring" $OUT/t8.txt | head -3
mkdir -p $OUT/traces && for d in /tmp/tr_4 /tmp/tr_8; do tar czf $OUT/traces/$(basename $d).tgz -C $d .; done
ls -la /tmp/tr_4 | head
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawTR.tgz -C $R .
