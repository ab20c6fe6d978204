#!/bin/bash
# call V3 (2026-12-04): two constants of the small-message path, paired in one experimental build
# (.device/x_knobs.patch: env overrides, not shipped): the caller stream's share where workers
# spin (BAGUA_NET_X_QUIET, main 512 B) and the caller engine's poll throttle (BAGUA_NET_X_POLL_NS,
# main 1000 ns); "bagua" = the same build without them = main. 4 and 8 ranks, 8 B - 64 KiB.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_x/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum $PLUGIN | cut -c1-16 > $OUT/plugin.txt
R=/tmp/rV3; rm -rf $R; mkdir -p $R
S=8,64,512,1024,4096,32768,65536
run() { # np reps configs cap
  SIZES="-b 8 -e 64K -f 2" ITERS="-n 300 -w 30" REPS=$2 RANKS=$1 CONFIGS="$3" \
    timeout $4 bash bench/gpu/net_defaults.sh $R/c$1 > $R/c$1.txt 2>&1
  echo "c$1 rc=$?"
  python3 bench/gpu/per_run_medians.py --sizes $S $R/c$1 $R/c$1.per_run.txt | tail -6
}
run 4 6 "bagua q1k=BAGUA_NET_X_QUIET=1024 q2k=BAGUA_NET_X_QUIET=2048 p0=BAGUA_NET_X_POLL_NS=0 socket" 260
run 8 4 "bagua p0=BAGUA_NET_X_POLL_NS=0 socket" 170
grep -h "#wrong\|Out of bounds" $R/*/all_reduce__*.log | sort | uniq -c | head
find $R -name "*.nccl.*.log" -delete; cp $OUT/plugin.txt .device/x_knobs.patch $R/; tar czf $OUT/v3.tgz -C $R .
