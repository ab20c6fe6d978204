#!/bin/bash
# call U (2026-12-02, stop 53): the caller stream read by its own comm's test() (one recv, no
# epoll_wait first; the next header's receive left for the next turn) against main's build,
# ABBA (every config under two names), 8 ranks then 2 ranks, 8 B-256 KiB.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rU; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
CONFIGS="bagua old=$OP socket socket_b=BAGUA_ORDER_TAG=b old_b=$OP bagua_b=BAGUA_NET_SPIN_BACKOFF=1"
run() {  # NAME RANKS REPS TIMEOUT
  SIZES="-b 8 -e 256K -f 8" ITERS="-n 300 -w 30" REPS=$3 RANKS="$2" CONFIGS="$CONFIGS" \
    timeout $4 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  echo "== $1 ($((SECONDS)) s)"; grep -A9 "^| size" $OUT/$1.txt | grep "^|"
}
run small8 8 3 280 
run small2 2 3 200
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawU.tgz -C $R .
