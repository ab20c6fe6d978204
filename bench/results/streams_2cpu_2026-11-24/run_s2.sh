#!/usr/bin/env bash
# Session 8 call 1: 2 vs 4 streams on 2 CPUs (loopback, epoll auto), machine-speed probe, 1 ms RTT with 2 streams.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export PATH=$D/../iproute/bin:/opt/torch/.venv/bin:$PATH
mkdir -p $OUT/r
nproc; lscpu | grep -E "Model name|Thread|Core|Socket|NUMA|L2|L3" ; cat /sys/kernel/mm/transparent_hugepage/enabled
echo "=== memprobe CPU 0, 8 MiB, idle"; taskset -c 0 $D/memprobe 8 8
echo "=== memprobe CPU 1, 64 MiB, idle"; taskset -c 1 $D/memprobe 8 64
echo "=== loopback CPUs 0-1"
NCCL_SOCKET_IFNAME==lo taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern ring,uni \
  -b 1M -e 64M -f 4 -n 20 -w 3 --reps 8 --baseline \
  --configs "default=;s2=BAGUA_NET_STREAMS=2;s2max4=BAGUA_NET_STREAMS=2,BAGUA_NET_MAX_STREAMS=4" \
  --json $OUT/r/loop_0-1.json 2>/dev/null | grep -v "^#   "
(cd $OUT && tar czf all.tgz r)
echo "=== 1 ms RTT, CPUs 0-1, emulator 2-3"
PERF=$D/bagua-net-perf PLUGIN=$D/libnccl-net-bagua.so EMU=$D/bench-link-emulator EMU_PRIO= EMU_CPUS=2-3 \
  RATE_MBIT=2000 CAP=128K REPS=3 PATTERNS=ring,uni SIZES="-b 1M -e 4M -f 4 -n 100 -w 20" \
  EXTRA_CONFIGS="s2=BAGUA_NET_STREAMS=2;s2max4=BAGUA_NET_STREAMS=2,BAGUA_NET_MAX_STREAMS=4" \
  taskset -c 0-1 bash bench/cpu/delay_bench.sh $OUT/r/delay 1 2>>$OUT/r/err_delay.txt | grep -v "^#   " | grep -v "^\s*$"
find $OUT -name '*.png' -delete; cd $OUT && tar czf all.tgz r && rm -rf r
