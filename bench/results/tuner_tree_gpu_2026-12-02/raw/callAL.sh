#!/bin/bash
# call AL (stop 56): which algorithm/protocol NCCL picks at 2 ranks for 8 B and 64 B with Bagua-Net
# (HEAD 551f6ca) and socket (the tuning table each prints at init), and both with Ring / Tree
# forced: is 2 ranks' 8 B gap (64 B is even) a choice of NCCL's or the transport's?
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_drain/libnccl-net-bagua.so LIMIT_STREAMS=""
R=/tmp/rAL; rm -rf $R; mkdir -p $R
C="bagua socket bagua_ring=NCCL_ALGO=Ring socket_ring=NCCL_ALGO=Ring bagua_tree=NCCL_ALGO=Tree socket_tree=NCCL_ALGO=Tree"
SIZES="-b 8 -e 64 -f 8" ITERS="-n 2000 -w 200" REPS=4 RANKS=2 CONFIGS="$C" \
  timeout 300 bash bench/gpu/net_defaults.sh $R/c2 > $R/c2.txt 2>&1
python3 bench/gpu/per_run_medians.py $R/c2 $OUT/c2.per_run.txt
for f in $(ls $R/c2/all_reduce__bagua__r2_1.nccl.*.log | head -1) $(ls $R/c2/all_reduce__socket__r2_1.nccl.*.log | head -1); do
  echo "== $f"; grep -iE "tuning|latency|algo|proto|channels|Using network|NET/" $f | head -60
done > $OUT/tuning.txt 2>&1
ls $R/c2 | head -50 >> $OUT/tuning.txt
tar czf $OUT/rawAL.tgz -C $R .
