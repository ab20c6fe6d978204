#!/bin/bash
# call V2 (2026-12-04): main's plugin against NCCL's socket transport at defaults, all_reduce
# 8 B - 1 MiB (every power of two), interleaved ABBA repetitions at 4, 8 and 2 ranks on one GPU;
# at 4 ranks also the tuner off (NCCL's own 2 channels). Everything into $OUT/v2.tgz.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_main/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum $PLUGIN | cut -c1-16 > $OUT/plugin.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/plugin.txt
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' >> $OUT/plugin.txt 2>&1
R=/tmp/rV2; rm -rf $R; mkdir -p $R
S=8,64,512,4096,32768,262144,1048576
run() { # np reps configs cap
  SIZES="-b 8 -e 1M -f 2" ITERS="-n 300 -w 30" REPS=$2 RANKS=$1 CONFIGS="$3" \
    timeout $4 bash bench/gpu/net_defaults.sh $R/c$1 > $R/c$1.txt 2>&1
  echo "c$1 rc=$?"
  python3 bench/gpu/per_run_medians.py --sizes $S $R/c$1 $R/c$1.per_run.txt | tail -4
}
run 4 6 "bagua socket t0=BAGUA_NET_TUNER=0" 230
run 8 6 "bagua socket" 170
run 2 4 "bagua socket" 70
grep -h "#wrong\|Out of bounds" $R/*/all_reduce__*.log | sort | uniq -c | head
grep -h "channels\|NET/\|Using network" $R/c4/*.nccl.*.log 2>/dev/null | sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | sort -rn | head -12 > $R/nccl_lines.txt
find $R -name "*.nccl.*.log" -delete; cp $OUT/plugin.txt $R/; tar czf $OUT/v2.tgz -C $R .
