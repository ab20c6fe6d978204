#!/bin/bash
# call TR2 (2026-12-02, stop 55): BAGUA_NET_TRACE with the caller engine's polls, 8 B all_reduce,
# 4 and 8 ranks (Tree LL, NCCL's choice); socket and the untraced plugin beside it.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
TP=$PWD/.device/plugin_trace/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rTR; rm -rf $R /tmp/tr_*; mkdir -p $R /tmp/tr_4 /tmp/tr_8
for np in 4 8; do
  SIZES="-b 8 -e 8" ITERS="-n 2000 -w 200" REPS=1 RANKS=$np \
    CONFIGS="bagua tr=NCCL_NET_PLUGIN=$TP,BAGUA_NET_TRACE=/tmp/tr_$np socket" \
    timeout 120 bash bench/gpu/net_defaults.sh $R/t$np > $R/t$np.txt 2>&1
  echo "== t$np ($SECONDS s)"; grep -A3 "^| size" $R/t$np.txt | grep "^|"
  python3 bench/gpu/hop_trace.py /tmp/tr_$np | tee $OUT/hop$np.txt
done
find $R -name "*.nccl.*.log" -delete; cp -r /tmp/tr_4 /tmp/tr_8 $R/; tar czf $OUT/rawTR2.tgz -C $R .
