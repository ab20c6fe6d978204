#!/bin/bash
# Builds this tree's wheel on the GPU machine (cp312) and runs run_api_gpu.sh's steps.
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-deps --no-index --find-links .device/wheels meson-python pyproject-metadata meson ninja nanobind packaging 2>&1 | tail -2
t0=$SECONDS
python3 -m pip wheel -q --no-build-isolation --no-deps . -w /tmp/w -Csetup-args=-Dgpu_archs=9.0 > $OUT/wheel.log 2>&1 || { tail -30 $OUT/wheel.log; exit 1; }
echo "wheel built in $((SECONDS - t0)) s"
WHEEL=$(ls /tmp/w/*.whl) timeout ${API_TIMEOUT:-420} bash bench/gpu/run_api_gpu.sh $OUT/api ${STEPS:-comm autotune_ef demo}
