#!/bin/bash
# call 2: the slow link (10 Gbit/s, 1 ms each way) with the emulator's realtime threads and deep TUN ring
cd "$(dirname "$0")/.." && . .device/common.sh
export PATH=$PWD/.device/tools/bin:$PATH
P=$PWD/.device/plugin
R=/tmp/r2; mkdir -p $R
COMMON=(EMU_MTU=${EMU_MTU:-9000} LINK=tun EMU=$PWD/.device/bench-link-emulator EMU_CPUS=14-15 RATE_GBIT=10 DELAY_MS=1 QUEUE_MS=50 PLUGIN=$P/libnccl-net-bagua.so)
# probes only, the emulator as before (no realtime; the deep TUN ring is in the binary)
[ -n "$PROBE0" ] && env "${COMMON[@]}" EMU_MTU=$PROBE0 EMU_REALTIME=0 REPS=0 CONFIGS="" timeout 80 bash bench/gpu/slow_link.sh $R/probe_rt0 > $OUT/probe_rt0.txt 2>&1
env "${COMMON[@]}" EMU_REALTIME=1 REPS=${REPS:-2} CONFIGS="${SLOW_CONFIGS:-bagua socket socket_tuned inline=BAGUA_NET_ENGINE=inline}" \
  timeout 420 bash bench/gpu/slow_link.sh $R/tun_rt > $OUT/tun_rt.txt 2>&1
tar czf $OUT/raw2.tgz -C $R .
cat $R/probe_rt0/env.txt | grep Gbit; cat $R/tun_rt/env.txt; cat $OUT/tun_rt.txt | tail -40; cat $R/tun_rt/emulator.txt
