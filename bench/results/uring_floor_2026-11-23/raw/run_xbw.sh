#!/usr/bin/env bash
# io_uring receive variants (BAGUA_NET_XURING 32: payload >= 64K received alone with MSG_WAITALL; 64: every payload so; 8: sends inline first) against epoll and TCP, 2 CPUs, both ways and one way.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
R=$OUT/r; mkdir -p $R
C="u=;x32=BAGUA_NET_XURING=32;x64=BAGUA_NET_XURING=64;x72=BAGUA_NET_XURING=72;epoll=BAGUA_NET_ENGINE=epoll"
NCCL_SOCKET_IFNAME==lo timeout 280 taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua-x.so --ranks 2 --pattern ring -b 1M -e 64M -f 4 -n 20 -w 3 --reps 7 --baseline --configs "$C" > $R/ring_0-1.txt 2>&1
NCCL_SOCKET_IFNAME==lo timeout 200 taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua-x.so --ranks 2 --pattern uni -b 1M -e 64M -f 4 -n 20 -w 3 --reps 5 --baseline --configs "$C" > $R/uni_0-1.txt 2>&1
cd $OUT && tar czf all.tgz r && rm -rf r
