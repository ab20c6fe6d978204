#!/bin/bash
# call FN (2026-12-02, stop 55): HEAD's wheel (with recvAfterDrain) through the demo (4 ranks) and
# comm (2 ranks); 2-rank 8 B nccl-tests with the plugin's INFO lines kept: do the busy-host signals fire?
cd "$(dirname "$0")/.." && . .device/common.sh
STEPS="comm demo" API_TIMEOUT=240 bash .device/call_api.sh 2>&1 | grep -v "^mismatch"
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_drain/libnccl-net-bagua.so LIMIT_STREAMS=""
R=/tmp/rFN; rm -rf $R; mkdir -p $R
SIZES="-b 8 -e 4K -f 8" ITERS="-n 1000 -w 100" REPS=2 RANKS="2 4" CONFIGS="bagua" \
  timeout 120 bash bench/gpu/net_defaults.sh $R/s > $R/s.txt 2>&1
grep -A6 "^| size" $R/s.txt | grep "^|"
for f in $R/s/*.nccl.*.log; do echo "$(basename $f): $(grep -c . $f) lines"; grep -h -i -E "busy|lost|spin|caller|wait" $f | grep -i bagua | head -4; done 2>&1 | head -40
grep -h -i -E "busy|lost its|waited" $R/s/*.nccl.*.log | sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | sort -rn | head -10
