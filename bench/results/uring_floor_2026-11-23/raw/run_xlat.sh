#!/usr/bin/env bash
# io_uring engine variants (BAGUA_NET_XURING bits: 1 ring flags 0, 2 COOP_TASKRUN only, 4 wake by read SQE,
# 8 sends inline first, 16 receives inline first) against epoll: ping-pong and both-ways bandwidth.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
R=$OUT/r; mkdir -p $R
X="u=;x1=BAGUA_NET_XURING=1;x2=BAGUA_NET_XURING=2;x4=BAGUA_NET_XURING=4;x8=BAGUA_NET_XURING=8;x16=BAGUA_NET_XURING=16;x12=BAGUA_NET_XURING=12;x24=BAGUA_NET_XURING=24;epoll=BAGUA_NET_ENGINE=epoll"
for cpus in 0-1 0-3; do
  NCCL_SOCKET_IFNAME==lo timeout 250 taskset -c $cpus $D/bagua-net-perf --plugin $D/libnccl-net-bagua-x.so --ranks 2 --pattern pingpong -b 8 -e 32K -f 8 -n 5000 -w 500 --reps 5 --baseline --configs "$X" > $R/pingpong_$cpus.txt 2>&1
done
NCCL_SOCKET_IFNAME==lo timeout 250 taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua-x.so --ranks 2 --pattern ring,uni -b 1M -e 64M -f 4 -n 20 -w 3 --reps 5 --baseline --configs "u=;x8=BAGUA_NET_XURING=8;x12=BAGUA_NET_XURING=12;x24=BAGUA_NET_XURING=24;epoll=BAGUA_NET_ENGINE=epoll" > $R/bw_0-1.txt 2>&1
cd $OUT && tar czf all.tgz r && rm -rf r
