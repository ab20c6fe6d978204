#!/bin/bash
# call F: the shipped default (spin governor + caller stream for <= 512 B, all small messages once a spin lost its CPU) against the old default (old: BAGUA_NET_SPIN_BACKOFF=0,BAGUA_NET_CALLER_STREAM=0), no spin and socket
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum $P/*.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rF; rm -rf $R; mkdir -p $R
small() {  # NAME RANKS REPS HOGS
  local pids=""
  for i in $(seq 1 $4); do sh -c 'while :; do :; done' & pids="$pids $!"; done
  SIZES="-b 8 -e 512K -f 8" ITERS="-n 200 -w 20" REPS=$3 RANKS="$2" \
    CONFIGS="bagua old=BAGUA_NET_SPIN_BACKOFF=0,BAGUA_NET_CALLER_STREAM=0 s0=BAGUA_NET_SPIN_US=0 socket" \
    timeout 200 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  [ -n "$pids" ] && kill $pids; wait 2>/dev/null
}
small small4 4 3 0
small small4_hogs8 4 3 8
small small2 2 2 0
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=3 RANKS="2 4" LIMIT_GPU_STREAMS="2 4" \
  CONFIGS="bagua socket socket_tuned" \
  timeout 300 bash bench/gpu/net_defaults.sh $R/large > $OUT/large.txt 2>&1
for d in $R/*; do echo "$(basename $d): $(cat $d/*bagua__*.nccl.*.log 2>/dev/null | grep -c 'lost its CPU') of $(ls $d/*bagua__*.nccl.*.log 2>/dev/null | wc -l) bagua rank logs say lost its CPU"; done > $OUT/lost_lines.txt
grep -h "lost its CPU" $R/*/*.nccl.*.log | sed 's/^[^ ]* [^ ]* //' | head -5 >> $OUT/lost_lines.txt
find $R -name "*.nccl.*.log" ! -name "*_1.nccl.*" -delete; tar czf $OUT/rawF.tgz -C $R .
cat $OUT/lost_lines.txt; for f in small4 small4_hogs8 small2 large; do echo "== $f"; grep -A12 "^| size" $OUT/$f.txt | grep "^|"; done; grep -h "limit" $OUT/large.txt | tail -8
