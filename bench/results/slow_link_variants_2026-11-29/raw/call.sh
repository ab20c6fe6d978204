#!/bin/bash
# call 5: the slow link (10 Gbit/s, 1 ms each way, MTU 65000) with TCP_INFO sampled every second:
# Bagua-Net at defaults against socket, one stream per connection, 512 KiB chunks.
cd "$(dirname "$0")/.." && . .device/common.sh
export PATH=$PWD/.device/tools/bin:$PATH
P=$PWD/.device/plugin
R=${R:-/tmp/r5}; rm -rf $R; mkdir -p $R
env TCP_CC=${TCP_CC:-} DDP_GAP_MS=${DDP_GAP_MS:-0} EMU_MTU=65000 LINK=tun EMU=$PWD/.device/bench-link-emulator EMU_CPUS=14-15 RATE_GBIT=10 DELAY_MS=1 \
  QUEUE_MS=50 PLUGIN=$P/libnccl-net-bagua.so EMU_REALTIME=0 TCP_INFO_EVERY=1 CAP_S=90 REPS=${REPS:-2} \
  CONFIGS="${SLOW_CONFIGS:-bagua socket s1=BAGUA_NET_STREAMS=1,BAGUA_NET_ADAPTIVE_STREAMS=0 c512=BAGUA_NET_CHUNK_BYTES=524288}" \
  timeout 540 bash bench/gpu/slow_link.sh $R/slow > $OUT/slow.txt 2>&1
tar czf $OUT/raw.tgz -C $R .
tail -40 $OUT/slow.txt; cat $R/slow/tcp_info_summary.md; grep -h "streams (widened" $R/slow/*.log | sort | uniq -c | head
