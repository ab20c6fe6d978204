#!/usr/bin/env bash
# Profiles of 64 MiB both ways on 2 CPUs (io_uring and epoll, 3 runs each): where the cycles go in slow and fast runs.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
P=$D/../perf/bin/perf
R=$OUT/r; mkdir -p $R
for rep in 1 2 3; do
for cfg in "uring=BAGUA_NET_ENGINE=io_uring" "epoll=BAGUA_NET_ENGINE=epoll" "tcp="; do
  n=${cfg%%=*}
  extra="--configs $cfg"; [ $n = tcp ] && extra="--baseline-only"
  NCCL_SOCKET_IFNAME==lo timeout 100 $P record -q -a -C 0-1 -g -F 2999 -o $R/p.data taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern ring -b 64M -e 64M -n 20 -w 3 --reps 1 $extra > $R/run_${n}_$rep.txt 2>&1
  $P report -i $R/p.data --no-children --sort sym --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -40 > $R/prof_${n}_$rep.txt
  $P report -i $R/p.data --no-children --sort comm --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -12 > $R/comm_${n}_$rep.txt
  rm -f $R/p.data $R/p.data.old
done
done
cd $OUT && tar czf all.tgz r && rm -rf r
