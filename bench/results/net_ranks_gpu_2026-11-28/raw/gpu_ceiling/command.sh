#!/usr/bin/env bash
# part 1's machine-limit clause: the ring ceiling through the GPU (tcp_limit --gpu) beside loopback TCP, with the transports in the same run
set -u
t0=$SECONDS
source .device/common.sh
echo "build: $((SECONDS - t0)) s"
O=$OUT/gpu_ceiling; mkdir -p $O
SIZES="-b 16M -e 256M -f 4" ITERS="-n 10 -w 3" REPS=2 RANKS="2 4" LIMIT_STREAMS="4" LIMIT_GPU_STREAMS="4 8" \
  CONFIGS="bagua socket socket_tuned" timeout 380 bash bench/gpu/net_defaults.sh $O > $OUT/gpu_ceiling.md 2>&1
echo "rc=$? total $((SECONDS - t0)) s"
tail -40 $OUT/gpu_ceiling.md
cd $OUT && tar czf gpu_ceiling_logs.tgz gpu_ceiling && rm -rf gpu_ceiling/*.nccl.*.log
