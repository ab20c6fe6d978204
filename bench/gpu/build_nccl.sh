#!/usr/bin/env bash
# Builds an NCCL source tree for sm_90 (H100/H200) only, with NCCL's own
# Makefile, into OUT_DIR: OUT_DIR/lib/libnccl.so.2 and OUT_DIR/include/.
# Fetches nothing: SRC_DIR is a tree you brought (e.g. NVIDIA/nccl at its
# newest tag, unpacked with `git archive`); nothing of it is committed here.
#
# Usage: bash bench/gpu/build_nccl.sh SRC_DIR OUT_DIR
#   JOBS=N        make's parallelism (default: nproc)
#   ONLY_FUNCS=.. NCCL's own switch to build the device code of some
#                 collectives only, e.g. "AllReduce Sum f32" (default: all;
#                 the full sm_90 build takes several minutes on 16 cores)
# make is incremental: run it again with the same OUT_DIR to finish a build
# cut short. Last line: "built NCCL <version> in <s> s: OUT_DIR/lib/libnccl.so.2".
set -euo pipefail
SRC=${1:?usage: build_nccl.sh SRC_DIR OUT_DIR}
OUT=${2:?usage: build_nccl.sh SRC_DIR OUT_DIR}
if [ ! -f "$SRC/makefiles/common.mk" ] || [ ! -f "$SRC/src/Makefile" ]; then
  echo "build_nccl.sh: $SRC is not an NCCL source tree (no makefiles/common.mk, src/Makefile)" >&2
  exit 2
fi
SRC=$(cd "$SRC" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || { echo "build_nccl.sh: no nvcc on PATH or in /usr/local/cuda/bin" >&2; exit 2; }
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$NVCC")")")}
JOBS=${JOBS:-$(nproc)}

t0=$SECONDS
make -C "$SRC" -j"$JOBS" src.build BUILDDIR="$OUT" CUDA_HOME="$CUDA_HOME" \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" ${ONLY_FUNCS:+ONLY_FUNCS="$ONLY_FUNCS"}
lib=$OUT/lib/libnccl.so.2
[ -e "$lib" ] || { echo "build_nccl.sh: make ended without $lib" >&2; exit 1; }
# nccl.h's NCCL_MAJOR/MINOR/PATCH, as "2.30.7".
version=$(awk '/^#define NCCL_(MAJOR|MINOR|PATCH) /{v = v (v ? "." : "") $3} END {print v}' \
  "$OUT/include/nccl.h")
echo "built NCCL $version in $((SECONDS - t0)) s: $lib"
