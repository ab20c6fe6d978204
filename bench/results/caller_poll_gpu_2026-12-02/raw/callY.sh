#!/bin/bash
# call Y (2026-12-02, stop 53): the small-message headline with the spread in view: Bagua-Net
# (this stop's build) and socket, each under two names, ABBA, 6 repetitions, at 8, 4 and 2
# ranks; per-run 8 B / 64 B / 512 B times printed for every sweep.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rY; rm -rf $R; mkdir -p $R
run() {  # NAME RANKS TIMEOUT
  SIZES="-b 8 -e 512 -f 8" ITERS="-n 500 -w 50" REPS=6 RANKS="$2" \
    CONFIGS="bagua socket socket_b=BAGUA_ORDER_TAG=b bagua_b=BAGUA_NET_SPIN_BACKOFF=1" \
    timeout $3 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  echo "== $1 ($SECONDS s)"; grep -A5 "^| size" $OUT/$1.txt | grep "^|"
  for f in $R/$1/all_reduce__*__r*_?.log; do
    printf "%s %s %s %s\n" "$(basename $f .log)" "$(awk '$1==8 && $2==2 {print $6; exit}' $f)" \
      "$(awk '$1==64 && $2==16 {print $6; exit}' $f)" "$(awk '$1==512 && $2==128 {print $6; exit}' $f)"
  done > $OUT/$1.per_run.txt
}
run small8 8 200
run small4 4 160
run small2 2 140
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawY.tgz -C $R .
