#!/usr/bin/env bash
# Where a wake-up lands (the waker's CPU or the other) for each engine, 2 CPUs: ping-pong 8 B and both ways 64 MiB.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
P=$D/../perf/bin/perf
R=$OUT/r; mkdir -p $R
{ ls /sys/kernel/tracing 2>&1 | head -3; mount | grep -E "tracefs|debugfs"; cat /proc/sys/kernel/perf_event_paranoid; } > $R/env.txt 2>&1
[ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing >> $R/env.txt 2>&1
$P stat -e task-clock true >> $R/env.txt 2>&1
EV=context-switches,cpu-migrations,sched:sched_wakeup,sched:sched_migrate_task,sched:sched_wake_idle_without_ipi,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry,syscalls:sys_enter_sched_yield
for rep in 1 2; do
for cfg in "uring=" "epoll=BAGUA_NET_ENGINE=epoll"; do
  n=${cfg%%=*}
  NCCL_SOCKET_IFNAME==lo timeout 100 $P stat -a -C 0-1 -x, -e $EV -o $R/stat_pp_${n}_$rep.txt taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern pingpong -b 8 -e 8 -n 30000 -w 1000 --reps 1 --configs "$cfg" > $R/pp_${n}_$rep.txt 2>&1
  NCCL_SOCKET_IFNAME==lo timeout 100 $P stat -a -C 0-1 -x, -e $EV -o $R/stat_ring_${n}_$rep.txt taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern ring -b 64M -e 64M -n 20 -w 3 --reps 1 --configs "$cfg" > $R/ring_${n}_$rep.txt 2>&1
done
done
for cfg in "uring=" "epoll=BAGUA_NET_ENGINE=epoll"; do
  n=${cfg%%=*}
  NCCL_SOCKET_IFNAME==lo timeout 100 $P record -a -C 0-1 -e sched:sched_wakeup -o $R/wk_$n.data taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern pingpong -b 8 -e 8 -n 20000 -w 1000 --reps 1 --configs "$cfg" > $R/wkpp_$n.txt 2>&1
  $P script -i $R/wk_$n.data -F comm,cpu,event,trace 2>/dev/null > $R/wk_$n.txt
  rm -f $R/wk_$n.data
  gzip $R/wk_$n.txt
done
cd $OUT && tar czf all.tgz r && rm -rf r
