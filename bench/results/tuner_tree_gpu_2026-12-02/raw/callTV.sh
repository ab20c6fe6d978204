#!/bin/bash
# call TV (stop 56): the tuner's Tree LL rule (all_reduce <= 16 B on 2 ranks on 2 nodes), built
# into .device/plugin_tree/, against HEAD 551f6ca (.device/plugin_drain/) and socket: 2 ranks,
# 8 B-4 KiB, 4 ABBA reps (8 sweeps each); the algorithms NCCL ran and the tuner's log line.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_drain/libnccl-net-bagua.so LIMIT_STREAMS=""
X=NCCL_NET_PLUGIN=$PWD/.device/plugin_tree/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rTV; rm -rf $R; mkdir -p $R
C="bagua tree=$X socket socket_b=BAGUA_ORDER_TAG=b tree_b=$X,BAGUA_ORDER_TAG=b bagua_b=BAGUA_ORDER_TAG=b"
S=8,16,32,64,512,4096
SIZES="-b 8 -e 4K -f 2" ITERS="-n 1000 -w 100" REPS=4 RANKS=2 CONFIGS="$C" \
  timeout 300 bash bench/gpu/net_defaults.sh $R/c2 > $R/c2.txt 2>&1
python3 bench/gpu/per_run_medians.py --sizes $S $R/c2 $OUT/c2.per_run.txt
for c in bagua tree socket; do
  f=$(ls $R/c2/all_reduce__${c}__r2_1.nccl.*.log | head -1); echo "== $c"
  grep "tuner" $f
  grep -o "AllReduce: [0-9]* Bytes -> Algo [A-Z]* proto [A-Z0-9]*" $f | sort -u -k2n
done > $OUT/algos.txt
grep -h "wrong\|Out of bounds" $R/c2/*.log | sort | uniq -c > $OUT/wrong.txt
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawTV.tgz -C $R .
