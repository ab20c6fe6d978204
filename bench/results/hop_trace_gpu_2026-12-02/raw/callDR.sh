#!/bin/bash
# call DR (2026-12-02, stop 55): the caller engine's receive after a drain (no EAGAIN recv after
# each message) against main's build, 4 and 8 ranks, 8 B-4 KiB, ABBA; a trace of it at 4 ranks;
# 8 ranks 1-16 MiB for bulk.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
D=NCCL_NET_PLUGIN=$PWD/.device/plugin_drain/libnccl-net-bagua.so
TP=$PWD/.device/plugin_trace/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rDR; rm -rf $R /tmp/tr_*; mkdir -p $R /tmp/tr_4
C="bagua drain=$D socket socket_b=BAGUA_ORDER_TAG=b drain_b=$D,BAGUA_ORDER_TAG=b bagua_b=BAGUA_NET_SPIN_BACKOFF=1"
SIZES="-b 8 -e 4K -f 8" ITERS="-n 1000 -w 100" REPS=3 RANKS=4 CONFIGS="$C" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/d4 > $R/d4.txt 2>&1
echo "== d4 ($SECONDS s)"; grep -A6 "^| size" $R/d4.txt | grep "^|"
SIZES="-b 8 -e 4K -f 8" ITERS="-n 1000 -w 100" REPS=2 RANKS=8 CONFIGS="$C" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/d8 > $R/d8.txt 2>&1
echo "== d8 ($SECONDS s)"; grep -A6 "^| size" $R/d8.txt | grep "^|"
for d in d4 d8; do
  for f in $R/$d/all_reduce__*__r?_?.log; do
    printf "%s %s %s %s %s\n" "$(basename $f .log)" "$(awk '$1==8 && $2==2 {print $6; exit}' $f)" \
      "$(awk '$1==64 && $2==16 {print $6; exit}' $f)" "$(awk '$1==512 && $2==128 {print $6; exit}' $f)" \
      "$(awk '$1==4096 && $2==1024 {print $6; exit}' $f)"
  done | sort > $OUT/$d.per_run.txt
done
SIZES="-b 8 -e 8" ITERS="-n 2000 -w 200" REPS=1 RANKS=4 CONFIGS="tr=NCCL_NET_PLUGIN=$TP,BAGUA_NET_TRACE=/tmp/tr_4" \
  timeout 60 bash bench/gpu/net_defaults.sh $R/t4 > $R/t4.txt 2>&1
python3 bench/gpu/hop_trace.py /tmp/tr_4 | tee $OUT/hop4_drain.txt
SIZES="-b 1M -e 16M -f 4" ITERS="-n 20 -w 5" REPS=1 RANKS=8 CONFIGS="bagua drain=$D" \
  timeout 120 bash bench/gpu/net_defaults.sh $R/b8 > $R/b8.txt 2>&1
echo "== b8 ($SECONDS s)"; grep -A5 "^| size" $R/b8.txt | grep "^|"
find $R -name "*.nccl.*.log" -delete; cp -r /tmp/tr_4 $R/; tar czf $OUT/rawDR.tgz -C $R .
