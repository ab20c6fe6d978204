#!/usr/bin/env bash
# The GPU part of "Python and Lightning": builds and installs this project's
# wheel on the GPU machine (it binds torch's NCCL at run time), then runs lightning_strategy_bench.py
# for each strategy over NCCL's default transport and forced through
# Bagua-Net. Usage: PLUGIN=<libnccl-net-bagua.so> bash run_lightning.sh OUT
set -uo pipefail
OUT=${1:?usage: run_lightning.sh OUT}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE/../..
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
echo "== building the wheel"
start=$SECONDS
python3 -m pip install -q --no-deps --no-index --find-links "$ROOT/.device/wheels" meson-python pyproject-metadata 2>&1 | tail -n 2
echo "meson: $(python3 -m mesonbuild.mesonmain --version 2>&1 | head -n 1)"
python3 -m pip install -q --no-build-isolation --no-deps "$ROOT" \
  -Csetup-args=-Dgpu_archs=9.0 >"$OUT/wheel_build.log" 2>&1 ||
  { tail -n 30 "$OUT/wheel_build.log"; exit 1; }
echo "built in $((SECONDS - start)) s; has_nccl: $(python3 -c 'import bagua._C as c; print(c.has_nccl())')"
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NET_PLUGIN=$PLUGIN NCCL_NET=Bagua"
run() {  # run LABEL ENV... -- ARGS...
  local label=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  mkdir -p "$OUT/nccl_$label"
  env "${envs[@]}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_DEBUG_FILE="$OUT/nccl_$label/%p.log" \
    timeout 110 python3 "$HERE/lightning_strategy_bench.py" "$@" >"$OUT/$label.log" 2>&1
  echo "$label rc=$? $(grep RESULT "$OUT/$label.log" | tail -n 1)"
}
for s in ddp bagua bagua:bytegrad; do
  run "digits_${s/:/_}_default" PYTHONUNBUFFERED=1 -- --task digits --strategy "$s"
done
for s in bagua bagua:bytegrad; do
  # shellcheck disable=SC2086
  run "digits_${s/:/_}_baguanet" $NET -- --task digits --strategy "$s"
done
for s in ddp bagua bagua:bytegrad; do
  # shellcheck disable=SC2086
  run "mlp_${s/:/_}_baguanet" $NET -- --task mlp --strategy "$s"
done
