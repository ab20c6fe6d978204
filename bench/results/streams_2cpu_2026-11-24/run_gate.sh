#!/usr/bin/env bash
# Session 8 call 2: the new small-machine stream default (2, up to 4 while window-bound) against
# 4 streams (the old default) on 2 CPUs: loopback, 8 Gbit/s tbf link, 1 ms RTT delay line.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export PATH=$D/../iproute/bin:/opt/torch/.venv/bin:$PATH
mkdir -p $OUT/r
NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME==lo taskset -c 0-1 $D/bagua-net-info 2>&1 | grep -i "engine" | head -2
echo "=== loopback CPUs 0-1"
NCCL_SOCKET_IFNAME==lo taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern ring,uni \
  -b 1M -e 64M -f 4 -n 20 -w 3 --reps 10 --baseline \
  --configs "default=;streams-4=BAGUA_NET_STREAMS=4" \
  --json $OUT/r/loop_0-1.json 2>/dev/null | grep -v "^#   "
(cd $OUT && tar czf all.tgz r)
echo "=== 1 ms RTT, CPUs 0-1, emulator 2-3"
NCCL_DEBUG=INFO PERF=$D/bagua-net-perf PLUGIN=$D/libnccl-net-bagua.so EMU=$D/bench-link-emulator EMU_PRIO= EMU_CPUS=2-3 \
  RATE_MBIT=2000 CAP=128K REPS=3 PATTERNS=ring,uni SIZES="-b 1M -e 4M -f 4 -n 100 -w 20" \
  EXTRA_CONFIGS="streams-4=BAGUA_NET_STREAMS=4" \
  taskset -c 0-1 bash bench/cpu/delay_bench.sh $OUT/r/delay 1 2>$OUT/r/err_delay.txt | grep -v "^#   " | grep -v "^\s*$"
echo "ended-on lines (delay):"; grep -o "ended on [0-9]* of [0-9]* streams (widened [0-9]*, narrowed [0-9]*" $OUT/r/err_delay.txt | sort | uniq -c
(cd $OUT && find . -name '*.png' -delete; tar czf all.tgz r)
echo "=== 8 Gbit/s tbf, CPUs 0-1"
PERF=$D/bagua-net-perf PLUGIN=$D/libnccl-net-bagua.so REPS=3 SIZES="-b 4M -e 64M -f 4 -n 30 -w 5" \
  CONFIGS="bagua=;streams-4=BAGUA_NET_STREAMS=4;bagua-1-stream=BAGUA_NET_STREAMS=1" \
  taskset -c 0-1 bash bench/cpu/link_bench.sh $OUT/r/link8 8 2>>$OUT/r/err_link.txt | grep -v "^#   "
find $OUT -name '*.png' -delete; cd $OUT && tar czf all.tgz r && rm -rf r
