#!/bin/bash
# call G2 (2026-12-04): the NcclSetup test (rank 1 never joins; rank 0 must fail within its
# 2 s timeout naming rank 1) against this stop's libbagua (gt/) and main's (gt_old/, the same
# test binary; expected: rank 0 waits in ncclCommInitRank until the harness kills it at 90 s).
cd "$(dirname "$0")/.." || exit 1
export LD_LIBRARY_PATH=$PWD/.device/gt/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BAGUA_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')/lib/libnccl.so.2
for v in gt gt_old; do
  echo "== $v (libbagua sha256 $(sha256sum .device/$v/runtime/libbagua.so | cut -c1-16))"
  s=$SECONDS
  timeout 150 .device/$v/tests/runtime/runtime_gpu_test --gtest_filter='NcclSetup.*' 2>&1 | grep -v "^$" | tail -12
  echo "rc=${PIPESTATUS[0]} in $((SECONDS - s)) s"
done
