#!/usr/bin/env bash
# The automatic engine choice on 2 CPUs (epoll) against io_uring and epoll named, and on 16 CPUs (io_uring).
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
R=$OUT/r; mkdir -p $R
C="default=;io_uring=BAGUA_NET_ENGINE=io_uring;epoll=BAGUA_NET_ENGINE=epoll"
for cpus in 0-1 0-15; do
  NCCL_SOCKET_IFNAME==lo taskset -c $cpus $D/bagua-net-info --plugin $D/libnccl-net-bagua.so > $R/info_$cpus.txt 2>&1
done
NCCL_SOCKET_IFNAME==lo timeout 200 taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern pingpong -b 8 -e 32K -f 8 -n 5000 -w 500 --reps 5 --baseline --configs "$C" > $R/pingpong_0-1.txt 2>&1
NCCL_SOCKET_IFNAME==lo timeout 280 taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern ring,uni -b 1M -e 64M -f 4 -n 20 -w 3 --reps 5 --baseline --configs "$C" > $R/bw_0-1.txt 2>&1
PATH=$D/../perf/bin:$PATH REPS=3 PERF_TOOL=$D/bagua-net-perf PLUGIN=$D/libnccl-net-bagua.so timeout 120 bash bench/cpu/wake_placement.sh $R/placement 0-1 > /dev/null 2>$R/placement_err.txt
cd $OUT && tar czf all.tgz r && rm -rf r
