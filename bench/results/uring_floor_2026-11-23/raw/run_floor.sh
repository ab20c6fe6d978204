#!/usr/bin/env bash
# Wake-up floor (bench-wake-floor) and the plugin's ping-pong on 2/4/16 CPUs; BBR against CUBIC for 2-CPU loopback both ways.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
R=$OUT/r; mkdir -p $R
{ uname -r; nproc; sysctl net.ipv4.tcp_congestion_control net.core.default_qdisc; for c in 0 1 2 3; do echo "cpu$c siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list) core $(cat /sys/devices/system/cpu/cpu$c/topology/core_id)"; done; lscpu | head -25; } > $R/env.txt 2>&1
for cpus in 0-1 0-3 0-15; do
  for h in "" --handoff; do
    echo "== CPUs $cpus $h" >> $R/floor.txt
    timeout 120 taskset -c $cpus $D/bench-wake-floor --iters 20000 --warmup 2000 --reps 5 $h >> $R/floor.txt 2>&1
  done
done
for cpus in 0-1 0-15; do
  NCCL_SOCKET_IFNAME==lo timeout 200 taskset -c $cpus $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern pingpong -b 8 -e 64K -f 8 -n 5000 -w 500 --reps 5 --baseline --configs "uring=;epoll=BAGUA_NET_ENGINE=epoll" > $R/pingpong_$cpus.txt 2>&1
done
orig=$(sysctl -n net.ipv4.tcp_congestion_control)
for cc in bbr cubic bbr2 cubic2; do
  sysctl -w net.ipv4.tcp_congestion_control=${cc%2} >> $R/env.txt 2>&1 || echo "cannot set ${cc%2}" >> $R/env.txt
  NCCL_SOCKET_IFNAME==lo timeout 200 taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern ring -b 1M -e 64M -f 4 -n 20 -w 3 --reps 5 --baseline --configs "uring=;epoll=BAGUA_NET_ENGINE=epoll" > $R/ring_$cc.txt 2>&1
done
sysctl -w net.ipv4.tcp_congestion_control=$orig >> $R/env.txt 2>&1
cd $OUT && tar czf all.tgz r && rm -rf r
