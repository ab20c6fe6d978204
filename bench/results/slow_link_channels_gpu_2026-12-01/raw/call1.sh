#!/bin/bash
# call 1: slow link diagnostics (socket-like Bagua, more channels) + kernels GPU test
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
N=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
export LD_LIBRARY_PATH=$N/lib:${LD_LIBRARY_PATH:-}
export PATH=$PWD/.device/tools/bin:$PATH
( timeout 60 .device/bin/kernels_gpu_test 2>&1 | tail -25 ) > $OUT/kernels_gpu_test.txt
P=$PWD/.device/plugin
R=/tmp/r1; rm -rf $R; mkdir -p $R
env EMU_MTU=65000 LINK=tun EMU=$PWD/.device/bin/bench-link-emulator EMU_CPUS=14-15 RATE_GBIT=10 DELAY_MS=1 \
  QUEUE_MS=50 PLUGIN=$P/libnccl-net-bagua.so EMU_REALTIME=0 CAP_S=80 REPS=${REPS:-2} \
  CONFIGS="${SLOW_CONFIGS}" timeout ${SLOW_TIMEOUT:-480} bash bench/gpu/slow_link.sh $R/slow > $OUT/slow.txt 2>&1
grep -h "streams (widened\|NCCL INFO Channel 0\|tuner\|engine" $R/slow/*rank0.log | sed 's/.*NCCL INFO//' | sort | uniq -c | head -30 > $OUT/plugin_lines.txt
tar czf $OUT/raw.tgz -C $R .
tail -30 $OUT/slow.txt; cat $OUT/kernels_gpu_test.txt | tail -5
