#!/bin/bash
# call SZ (stop 56): 2 ranks, Ring (NCCL's pick at 2 nodes) against Tree forced, Bagua-Net (HEAD
# 551f6ca) and socket, 8 B-1 MiB: where does Tree win, for the tuner's algorithm rule.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_drain/libnccl-net-bagua.so LIMIT_STREAMS=""
R=/tmp/rSZ; rm -rf $R; mkdir -p $R
C="bagua bagua_tree=NCCL_ALGO=Tree socket socket_tree=NCCL_ALGO=Tree"
C="$C socket_tree_b=NCCL_ALGO=Tree,BAGUA_ORDER_TAG=b socket_b=BAGUA_ORDER_TAG=b bagua_tree_b=NCCL_ALGO=Tree,BAGUA_ORDER_TAG=b bagua_b=BAGUA_ORDER_TAG=b"
S=8,16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536,131072,262144,524288,1048576
SIZES="-b 8 -e 1M -f 2" ITERS="-n 500 -w 50" REPS=3 RANKS=2 CONFIGS="$C" \
  timeout 400 bash bench/gpu/net_defaults.sh $R/c2 > $R/c2.txt 2>&1
python3 bench/gpu/per_run_medians.py --sizes $S $R/c2 $OUT/c2.per_run.txt
for c in bagua bagua_tree socket socket_tree; do
  f=$(ls $R/c2/all_reduce__${c}__r2_1.nccl.*.log | head -1); echo "== $c"
  grep -o "AllReduce: [0-9]* Bytes -> Algo [A-Z]* proto [A-Z0-9]*" $f | sort -u -k2n
done > $OUT/algos.txt
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawSZ.tgz -C $R .
