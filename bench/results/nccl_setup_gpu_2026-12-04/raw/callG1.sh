#!/bin/bash
# call G1 (2026-12-04): runtime_gpu_test (built here with -Dcuda=enabled, carried with the
# shared libraries the device lacks) on the one GPU: the new NcclSetup test (a rank that never
# joins) and the 1-rank collectives, against torch's NCCL.
cd "$(dirname "$0")/.." || exit 1
export LD_LIBRARY_PATH=$PWD/.device/gt/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BAGUA_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')/lib/libnccl.so.2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ldd .device/gt/tests/runtime/runtime_gpu_test | grep "not found"
time timeout 240 .device/gt/tests/runtime/runtime_gpu_test 2>&1 | tail -40
