#!/usr/bin/env bash
# Worker count on 2 CPUs: 1 worker per process against the default 2, both engines; both ways, one way, ping-pong.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
R=$OUT/r; mkdir -p $R
C="u=;u1w=BAGUA_NET_THREADS=1;epoll=BAGUA_NET_ENGINE=epoll;e1w=BAGUA_NET_ENGINE=epoll,BAGUA_NET_THREADS=1"
NCCL_SOCKET_IFNAME==lo timeout 250 taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern ring -b 1M -e 64M -f 4 -n 20 -w 3 --reps 7 --baseline --configs "$C" > $R/ring_0-1.txt 2>&1
NCCL_SOCKET_IFNAME==lo timeout 150 taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern uni -b 1M -e 64M -f 4 -n 20 -w 3 --reps 5 --baseline --configs "$C" > $R/uni_0-1.txt 2>&1
NCCL_SOCKET_IFNAME==lo timeout 150 taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern pingpong -b 8 -e 32K -f 8 -n 5000 -w 500 --reps 5 --baseline --configs "$C" > $R/pingpong_0-1.txt 2>&1
cd $OUT && tar czf all.tgz r && rm -rf r
