#!/bin/bash
# call C8 (stop 57): the tuner's channel floor at 2 and 4 ranks, main's plugin: 16 (2 ranks'
# default; 4 ranks get 4) against BAGUA_NET_TUNER_CHANNELS=6/8/12 (the tuner stays on and
# gives each collective ceil(MiB) within [2, floor]), socket defaults and tuned, 4 ABBA reps,
# the GPU-staged TCP ceiling before/after.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_main/libnccl-net-bagua.so LIMIT_STREAMS="" LIMIT_GPU_STREAMS="4"
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rC8; rm -rf $R; mkdir -p $R
C="bagua f8=BAGUA_NET_TUNER_CHANNELS=8 f6=BAGUA_NET_TUNER_CHANNELS=6 f12=BAGUA_NET_TUNER_CHANNELS=12 socket socket_tuned"
SIZES="-b 4M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=4 RANKS="2 4" CONFIGS="$C" \
  timeout 520 bash bench/gpu/net_defaults.sh $R/b > $R/b.txt 2>&1
cp $R/b.txt $OUT/bulk.txt
grep -h "wrong\|Out of bounds" $R/b/*.log | sort | uniq -c > $OUT/wrong.txt
cd $R/b && for f in all_reduce__*.log; do case $f in *.nccl.*) continue;; esac
  echo "$f $(awk '$1 ~ /^[0-9]+$/ && NF>10 {printf "%s ", $8}' $f)"; done > $OUT/per_run.txt; cd - >/dev/null
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawC8.tgz -C $R .
