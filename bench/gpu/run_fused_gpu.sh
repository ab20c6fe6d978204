#!/usr/bin/env bash
# The fused optimizer on ONE GPU (issue 28, docs/fused_optimizer.md):
# correctness of every path on CUDA against the unfused optimizer and of the
# CUDA kernels against their CPU reference, the step-time benchmark on the
# two parameter sets with torch's implementations and the copy bandwidth in
# the same run, and end to end. Two calls of under 8 minutes each (wheel
# install included; the benchmark is cut at BENCH_TIMEOUT, default 420 s):
#
#   WHEEL=<wheel> bash bench/gpu/run_fused_gpu.sh OUT large,small
#   WHEEL=<wheel> [GTEST=<kernels_gpu_test>] bash bench/gpu/run_fused_gpu.sh OUT correctness,e2e
#
#   PARTS: comma list of correctness,large,small,e2e (default: all of them, ~8-10 min)
#          and lamb (LAMB on the large set: the default, then the persistent kernel by
#          chunk, batch, blocks per SM and lookahead; with our AdamW;
#          LAMB_SWEEP="pack/chunk/batchMi/blocksPerSm/lookahead,..." replaces that grid)
#   KINDS: optimizers of the large and small parts (default adamw,sgd,lion,lamb)
#   GTEST: the kernels' GPU GoogleTest built on the CPU machine
#          (build/tests/kernels/kernels_gpu_test; the CUDA runtime is linked in):
#          its OptimCuda.* tests run first (GPU against the CPU reference).
# Writes OUT/env.txt and, per call, OUT/fused-<parts>.json, .txt (the tables)
# and .log (parts joined by '-'), and OUT/kernels_gpu_test.log.
set -uo pipefail
OUT=${1:?usage: WHEEL=... run_fused_gpu.sh OUT [correctness,large,small,e2e]}
PARTS=${2:-correctness,large,small,e2e}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv,noheader
  echo "cpus: $(nproc)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} >>"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

python3 -m pip install -q --no-deps --force-reinstall "${WHEEL:?WHEEL=<path of the bagua wheel>}" \
  >"$OUT/install.log" 2>&1 || { tail -n 20 "$OUT/install.log"; exit 1; }
python3 -c 'import bagua._C as c; print("has_nccl (CUDA kernels)", c.has_nccl())' | tee -a "$OUT/env.txt"

if [ -n "${GTEST:-}" ]; then
  timeout 60 "$GTEST" --gtest_filter='OptimCuda.*' >"$OUT/kernels_gpu_test.log" 2>&1
  echo "kernels_gpu_test OptimCuda.* rc=$? ($(grep -E 'PASSED|FAILED' "$OUT/kernels_gpu_test.log" | tr '\n' ' '))"
fi

# Run from outside the source tree so that `import bagua` is the installed wheel.
NAME=fused-${PARTS//,/-}
cd "$OUT" && timeout "${BENCH_TIMEOUT:-420}" python3 "$HERE/fused_optimizer_bench.py" \
  --out "$OUT/$NAME.json" --parts "$PARTS" ${KINDS:+--kinds "$KINDS"} 2>&1 | tee "$OUT/$NAME.log"
echo "rc=${PIPESTATUS[0]}"
