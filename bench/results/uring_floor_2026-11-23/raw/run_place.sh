#!/usr/bin/env bash
# Wake-up placement against ping-pong latency, 2 CPUs: per run, how many wake-ups land on the waker's CPU.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
P=$D/../perf/bin/perf
R=$OUT/r; mkdir -p $R
[ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
for rep in 1 2 3 4 5; do
for cfg in "uring=" "epoll=BAGUA_NET_ENGINE=epoll"; do
  n=${cfg%%=*}
  NCCL_SOCKET_IFNAME==lo timeout 100 $P record -q -a -C 0-1 -e sched:sched_wakeup -o $R/wk.data taskset -c 0-1 $D/bagua-net-perf --plugin $D/libnccl-net-bagua.so --ranks 2 --pattern pingpong -b 8 -e 8 -n 20000 -w 1000 --reps 1 --configs "$cfg" > $R/pp.txt 2>&1
  lat=$(grep -A1 "^#     size" $R/pp.txt | tail -1 | awk '{print $5}')
  $P script -i $R/wk.data -F comm,pid,cpu,event,trace 2>/dev/null | sed -E 's/^ *([^ ]+) +([0-9]+) +\[0*([0-9]+)\] sched:sched_wakeup: comm=([^ ]+) pid=([0-9]+) .*target_cpu=0*([0-9]+)/\1 \3 \4 \6/' | awk -v n=$n -v rep=$rep -v lat=$lat '$1=="bagua-net-perf" && $3 ~ /^bagua-net-[0-9]/ {t++; if ($2==$4) s++} END{printf "%s rep %d: p50 %s us, caller->worker wake-ups %d, on the waker'"'"'s CPU %d (%.0f%%)\n", n, rep, lat, t, s, 100*s/t}' >> $R/place.txt
  rm -f $R/wk.data
done
done
rm -f $R/pp.txt
cd $OUT && tar czf all.tgz r && rm -rf r
