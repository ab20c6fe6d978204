#!/bin/bash
# call S2: why call S1's "off" (BAGUA_NET_RECV_STASH=0) sweeps never finished: 4 ranks, logs
# kept, thread states dumped 30 s in; then the stash build (default) against main's plugin and
# socket at 4/8/2 ranks, small messages. DIAG_ONLY=1: the first part only (call S3).
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_stash/libnccl-net-bagua.so LIMIT_STREAMS="" CAP_S=45
MAIN=NCCL_NET_PLUGIN=$PWD/.device/plugin_main/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
command -v gdb > $OUT/gdb.txt 2>&1
watch_dump() {  # $1: file; after 30 s, every all_reduce_perf's threads
  sleep 30
  for p in $(pgrep all_reduce_perf); do
    echo "== pid $p"; for t in /proc/$p/task/*; do echo "$(cat $t/comm) $(cat $t/wchan) $(cut -d' ' -f3 $t/stat)"; done
    command -v gdb >/dev/null && timeout 20 gdb -batch -p $p -ex "thread apply all bt 12" 2>&1 | grep -E "^#|^Thread" | head -150
  done > $1 2>&1
}
D=$OUT/diag; mkdir -p $D
for cfg in off=BAGUA_NET_RECV_STASH=0 main=$MAIN bagua; do
  n=${cfg%%=*}; watch_dump $D/$n.threads.txt & w=$!
  SIZES="-b 8 -e 1M -f 8" ITERS="-n 500 -w 50" REPS=1 RANKS=4 CONFIGS="$cfg" \
    bash bench/gpu/net_defaults.sh $D/$n > $D/$n.txt 2>&1
  kill $w 2>/dev/null; grep "rc=" $D/$n.txt
done
R=$OUT/meas; mkdir -p $R
[ "${DIAG_ONLY:-0}" = 1 ] ||
for np in 4 8 2; do
  SIZES="-b 8 -e 1M -f 8" ITERS="-n 300 -w 30" REPS=3 RANKS=$np CONFIGS="bagua main=$MAIN socket" \
    timeout 130 bash bench/gpu/net_defaults.sh $R/c$np > $R/c$np.txt 2>&1
  grep "rc=" $R/c$np.txt | tr '\n' ' '; echo
  python3 bench/gpu/per_run_medians.py --sizes 8,64,512,4096,32768,262144 $R/c$np $R/c$np.per_run.txt
done
find $OUT -name "*.nccl.*.log" -size +200k -delete
