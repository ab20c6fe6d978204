#!/usr/bin/env bash
# Does the polling caller's fair share bound 2-CPU both ways? The same runs with callers that yield (NCCL's way) and that sleep 50 us between polls.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
R=$OUT/r; mkdir -p $R
C="io_uring=BAGUA_NET_ENGINE=io_uring;epoll=BAGUA_NET_ENGINE=epoll"
for mode in yield sleep50 yield2 sleep50b; do
  us=0; case $mode in sleep50*) us=50;; esac
  XPERF_IDLE_SLEEP_US=$us NCCL_SOCKET_IFNAME==lo timeout 200 taskset -c 0-1 $D/bagua-net-perf-x --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern ring -b 1M -e 64M -f 4 -n 20 -w 3 --reps 5 --baseline --configs "$C" > $R/ring_$mode.txt 2>&1
done
for mode in yield sleep50; do
  us=0; case $mode in sleep50*) us=50;; esac
  XPERF_IDLE_SLEEP_US=$us NCCL_SOCKET_IFNAME==lo timeout 100 taskset -c 0-1 $D/bagua-net-perf-x --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern pingpong -b 8 -e 32K -f 8 -n 3000 -w 300 --reps 3 --baseline --configs "$C" > $R/pp_$mode.txt 2>&1
done
cd $OUT && tar czf all.tgz r && rm -rf r
