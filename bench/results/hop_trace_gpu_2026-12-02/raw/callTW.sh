#!/bin/bash
# call TW (2026-12-02, stop 55): 2 ranks with the drain build (HEAD): where 8 B time goes
# (BAGUA_NET_TRACE, worker streams), BAGUA_NET_CALLER_STREAM=1 against auto and socket (ABBA),
# and 16-256 MiB against socket tuned and defaults (2 reps).
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_drain/libnccl-net-bagua.so LIMIT_STREAMS="1 4 16"
TP=$PWD/.device/plugin_trace/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rTW; rm -rf $R /tmp/tr_*; mkdir -p $R /tmp/tr_2 /tmp/tr_2cs
SIZES="-b 8 -e 8" ITERS="-n 2000 -w 200" REPS=1 RANKS=2 LIMIT_STREAMS="" \
  CONFIGS="tr=NCCL_NET_PLUGIN=$TP,BAGUA_NET_TRACE=/tmp/tr_2 trcs=NCCL_NET_PLUGIN=$TP,BAGUA_NET_TRACE=/tmp/tr_2cs,BAGUA_NET_CALLER_STREAM=1" \
  timeout 60 bash bench/gpu/net_defaults.sh $R/t2 > $R/t2.txt 2>&1
python3 bench/gpu/hop_trace.py /tmp/tr_2 | tee $OUT/hop2.txt
python3 bench/gpu/hop_trace.py /tmp/tr_2cs | tee $OUT/hop2_cs1.txt
SIZES="-b 8 -e 4K -f 8" ITERS="-n 1000 -w 100" REPS=3 RANKS=2 LIMIT_STREAMS="" \
  CONFIGS="bagua cs1=BAGUA_NET_CALLER_STREAM=1 socket socket_b=BAGUA_ORDER_TAG=b cs1_b=BAGUA_NET_CALLER_STREAM=1,BAGUA_ORDER_TAG=b bagua_b=BAGUA_ORDER_TAG=b" \
  timeout 120 bash bench/gpu/net_defaults.sh $R/s2 > $R/s2.txt 2>&1
echo "== s2 ($SECONDS s)"
for f in $R/s2/all_reduce__*__r?_?.log; do
  printf "%s %s %s %s %s\n" "$(basename $f .log)" "$(awk '$1==8 && $2==2 {print $6; exit}' $f)" \
    "$(awk '$1==64 && $2==16 {print $6; exit}' $f)" "$(awk '$1==512 && $2==128 {print $6; exit}' $f)" \
    "$(awk '$1==4096 && $2==1024 {print $6; exit}' $f)"
done | sort > $OUT/s2.per_run.txt
python3 - $OUT/s2.per_run.txt <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    p = l.split(); d[p[0].split('__')[1].replace('_b', '')].append([float(x) for x in p[1:]])
for k, v in sorted(d.items()):
    print(k, len(v), 'median 8B/64B/512B/4K:', [round(statistics.median(c), 1) for c in zip(*v)])
PY
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS=2 CONFIGS="bagua socket_tuned socket" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/big > $R/big.txt 2>&1
echo "== big ($SECONDS s)"; grep -A5 "^| size" $R/big.txt | grep "^|"; grep -i "limit\|ceiling" $R/big.txt | head -8
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawTW.tgz -C $R .
