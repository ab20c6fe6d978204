#!/bin/bash
# call RT (stop 56): irecv's caller-engine poll throttled like test()'s (one epoll_wait less per
# posted receive on NCCL's proxy thread; not committed), built into .device/plugin_rt/, against
# the drain build (HEAD 551f6ca) and socket: 8 B-4 KiB at 4/8/2 ranks, 4 ABBA reps (8 sweeps).
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin_drain/libnccl-net-bagua.so LIMIT_STREAMS=""
X=NCCL_NET_PLUGIN=$PWD/.device/plugin_rt/libnccl-net-bagua.so
sha256sum .device/plugin*/libnccl-net-bagua.so | cut -c1-16,65- > $OUT/plugins.txt
R=/tmp/rRT; rm -rf $R; mkdir -p $R
C="bagua rt=$X socket socket_b=BAGUA_ORDER_TAG=b rt_b=$X,BAGUA_ORDER_TAG=b bagua_b=BAGUA_ORDER_TAG=b"
for np in 4 8 2; do
  SIZES="-b 8 -e 4K -f 8" ITERS="-n 1000 -w 100" REPS=4 RANKS=$np CONFIGS="$C" \
    timeout 200 bash bench/gpu/net_defaults.sh $R/c$np > $R/c$np.txt 2>&1
  echo "== $np ranks"; python3 bench/gpu/per_run_medians.py $R/c$np $OUT/c$np.per_run.txt
done
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawRT.tgz -C $R .
