#!/bin/bash
# call P1 (2026-12-04): where workers spin (4 ranks), a 512 B-2 KiB message that follows another
# on its comm within BAGUA_NET_X_GAP_US goes to the workers (a ring's pieces), the rest to the
# caller stream (a tree's); .device/gap_rule.patch, one build: "bagua" = it without the knob =
# this stop's main; main_old = main before this stop (512 B share); socket defaults. 4 ranks.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_px/libnccl-net-bagua.so LIMIT_STREAMS=""
OLD=$PWD/.device/plugin_main/libnccl-net-bagua.so
sha256sum $PLUGIN $OLD | cut -c1-16,65- > $OUT/plugin.txt
R=/tmp/rP1; rm -rf $R; mkdir -p $R
SIZES="-b 8 -e 16K -f 2" ITERS="-n 300 -w 30" REPS=6 RANKS=4 \
  CONFIGS="bagua g20=BAGUA_NET_X_GAP_US=20 g40=BAGUA_NET_X_GAP_US=40 main_old=NCCL_NET_PLUGIN=$OLD socket" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/small4 > $R/small4.txt 2>&1; echo "small4 rc=$?"
python3 bench/gpu/per_run_medians.py --sizes 64,512,1024,2048,4096,8192 $R/small4 $R/small4.per_run.txt | tail -5
grep -h "#wrong\|Out of bounds" $R/*/all_reduce__*.log | sort | uniq -c | head
find $R -name "*.nccl.*.log" -delete; cp $OUT/plugin.txt .device/gap_rule.patch $R/; tar czf $OUT/p1.tgz -C $R .
