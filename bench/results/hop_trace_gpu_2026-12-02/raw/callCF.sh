#!/bin/bash
# call CF (2026-12-02, stop 55): the drain build (HEAD) against main's previous build and socket,
# 8 B-4 KiB at 2, 4 and 8 ranks, 4 ABBA reps (8 sweeps per transport); 16-256 MiB at 2 and 4 ranks.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
D=NCCL_NET_PLUGIN=$PWD/.device/plugin_drain/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rCF; rm -rf $R; mkdir -p $R
C="bagua drain=$D socket socket_b=BAGUA_ORDER_TAG=b drain_b=$D,BAGUA_ORDER_TAG=b bagua_b=BAGUA_NET_SPIN_BACKOFF=1"
for np in 4 8 2; do
  SIZES="-b 8 -e 4K -f 8" ITERS="-n 1000 -w 100" REPS=4 RANKS=$np CONFIGS="$C" \
    timeout 200 bash bench/gpu/net_defaults.sh $R/c$np > $R/c$np.txt 2>&1
  echo "== c$np ($SECONDS s)"
  for f in $R/c$np/all_reduce__*__r?_?.log; do
    printf "%s %s %s %s %s\n" "$(basename $f .log)" "$(awk '$1==8 && $2==2 {print $6; exit}' $f)" \
      "$(awk '$1==64 && $2==16 {print $6; exit}' $f)" "$(awk '$1==512 && $2==128 {print $6; exit}' $f)" \
      "$(awk '$1==4096 && $2==1024 {print $6; exit}' $f)"
  done | sort > $OUT/c$np.per_run.txt
  python3 - $OUT/c$np.per_run.txt <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    p = l.split(); d[p[0].split('__')[1].replace('_b', '')].append([float(x) for x in p[1:]])
for k, v in sorted(d.items()):
    print(k, len(v), 'median 8B/64B/512B/4K:', [round(statistics.median(c), 1) for c in zip(*v)])
PY
done
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=1 RANKS="2 4" CONFIGS="bagua drain=$D socket_tuned" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/big > $R/big.txt 2>&1
echo "== big ($SECONDS s)"; grep -B1 -A5 "^| size" $R/big.txt | grep "^|\|ranks"
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawCF.tgz -C $R .
