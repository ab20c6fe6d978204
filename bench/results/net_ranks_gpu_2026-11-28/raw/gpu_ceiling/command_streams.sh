#!/usr/bin/env bash
# the GPU-staged ring ceiling at other stream counts (1, 2, 16), under MPS as in the sweeps
set -u
source .device/common.sh
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe2 CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log2
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
for np in 2 4; do for k in 1 2 16; do
  echo "$(python3 bench/gpu/tcp_limit.py --ranks $np --streams $k --seconds 5 --gpu 2>&1 | tail -n 1)"
done; done | tee $OUT/gpu_ceiling_streams.txt
echo quit | nvidia-cuda-mps-control
