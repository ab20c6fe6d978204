#!/bin/bash
# call W (2026-12-02, stop 53): 8 ranks, 8-512 B: which algorithm and protocol NCCL picks for
# Bagua-Net and for socket (the TUNING log), and both with the same one forced.
cd "$(dirname "$0")/.." && . .device/common.sh
build_nt || exit 1
export PLUGIN=$PWD/.device/plugin/libnccl-net-bagua.so LIMIT_STREAMS=""
R=/tmp/rW; rm -rf $R; mkdir -p $R
T=NCCL_ALGO=Tree,NCCL_PROTO=LL; G=NCCL_ALGO=Ring,NCCL_PROTO=LL
SIZES="-b 8 -e 4K -f 8" ITERS="-n 300 -w 30" REPS=2 RANKS=8 \
  CONFIGS="bagua socket bagua_tree=$T socket_tree=$T bagua_ring=$G socket_ring=$G" \
  timeout 200 bash bench/gpu/net_defaults.sh $R/w8 > $OUT/w8.txt 2>&1
echo "== w8 ($SECONDS s)"; grep -A9 "^| size" $OUT/w8.txt | grep "^|"
for c in bagua socket; do
  echo "== $c: NCCL's choices (rank 0 logs of rep 1)"
  f=$(ls $R/w8/*__${c}__r8_1.nccl.*.log | head -1)
  grep -o "AllReduce: [0-9]* Bytes -> Algo [A-Za-z_]* proto [A-Za-z0-9_]* channel{Lo..Hi}={[0-9]*..[0-9]*}" $f | sort | uniq -c
done
find $R -name "*.nccl.*.log" -delete; tar czf $OUT/rawW.tgz -C $R .
