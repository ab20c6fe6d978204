#!/bin/bash
# call J: where the small-message time of call I went. bagua = stash + short-read rule + caller-wait
# sampled every 64th test(); nodrain = the same without the short-read rule; old = 5691fc8;
# *0 = BAGUA_NET_SPIN_BACKOFF=0 (no governor, no sampling)
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
P=$PWD/.device/plugin
export PLUGIN=$P/libnccl-net-bagua.so LIMIT_STREAMS=""
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
cat /sys/devices/system/clocksource/clocksource0/current_clocksource > $OUT/clocksource.txt
R=/tmp/rJ; rm -rf $R; mkdir -p $R
OP=NCCL_NET_PLUGIN=$PWD/.device/plugin_old/libnccl-net-bagua.so
ND=NCCL_NET_PLUGIN=$PWD/.device/plugin_nodrain/libnccl-net-bagua.so
run() {  # NAME RANKS REPS HOGS TIMEOUT SIZES ITERS CONFIGS
  local pids=""
  for i in $(seq 1 $4); do sh -c 'while :; do :; done' & pids="$pids $!"; done
  SIZES="$6" ITERS="$7" REPS=$3 RANKS="$2" CONFIGS="$8" \
    timeout $5 bash bench/gpu/net_defaults.sh $R/$1 > $OUT/$1.txt 2>&1
  [ -n "$pids" ] && kill $pids; wait 2>/dev/null
  echo "== $1 ($((SECONDS)) s)"; grep -A9 "^| size" $OUT/$1.txt | grep "^|"
  grep -h "callers' wait" $R/$1/*.nccl.*.log 2>/dev/null | sed 's/^.*NET\/Bagua //' | sort | uniq -c | sort -rn | head -4
}
S="-b 8 -e 512K -f 8"; I="-n 200 -w 20"
run small4 4 3 0 150 "$S" "$I" "bagua old=$OP nodrain=$ND bagua0=BAGUA_NET_SPIN_BACKOFF=0 old0=$OP,BAGUA_NET_SPIN_BACKOFF=0 socket"
run small2 2 3 0 100 "$S" "$I" "bagua old=$OP nodrain=$ND bagua0=BAGUA_NET_SPIN_BACKOFF=0 old0=$OP,BAGUA_NET_SPIN_BACKOFF=0 socket"
run small8 8 2 0 120 "$S" "$I" "bagua old=$OP nodrain=$ND socket"
run large2 2 2 0 80 "-b 16M -e 256M -f 4" "-n 10 -w 3" "bagua old=$OP"
find $R -name "*.nccl.*.log" -size +2M -delete; tar czf $OUT/rawJ.tgz -C $R .
