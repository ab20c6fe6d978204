#!/usr/bin/env bash
# 4 ranks: fewer streams or channels against the default (the GPU-staged ring peaks at 2 sockets per neighbour)
set -u
source .device/common.sh
O=$OUT/fewer; mkdir -p $O
SIZES="-b 64M -e 256M -f 4" ITERS="-n 8 -w 2" REPS=1 RANKS="4" LIMIT_STREAMS="" \
  CONFIGS="bagua s1=BAGUA_NET_STREAMS=1 ch4=NCCL_MAX_NCHANNELS=4 s2ch8=BAGUA_NET_STREAMS=2,NCCL_MAX_NCHANNELS=8" \
  timeout 110 bash bench/gpu/net_defaults.sh $O > $OUT/fewer.md 2>&1
echo rc=$?
grep -A8 "ranks (median" $OUT/fewer.md; grep channels $OUT/fewer.md
cd $OUT && rm -f fewer/*.nccl.*.log && tar czf fewer_logs.tgz fewer && rm -rf fewer
