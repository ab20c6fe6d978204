#!/usr/bin/env bash
# The main job, run by `./setup.sh demo` once the build is done:
#   (a) Bagua-Net against plain TCP on loopback (build/tools/bagua-net-demo);
#   (b) every algorithm of the runtime's registry training scikit-learn's
#       digits in 2-4 processes (python -m bagua.demo, from .venv; installed
#       with ./setup.sh python when missing): progress bars, one table, a PNG.
# Usage: scripts/demo.sh [--quick] [--ranks N] [python -m bagua.demo options]
# --quick: a short Bagua-Net sweep (to 1 MiB, one repetition) and 6 epochs.
# The package in .venv is used as installed: after changing the code, run
# ./setup.sh python again.
set -euo pipefail
cd "$(dirname "$0")/.."
net_args=()
py_args=()
while (($#)); do
  case $1 in
    --quick) net_args+=(-e 1M --reps 1); py_args+=(--quick) ;;
    --ranks) net_args+=(--ranks "${2:?--ranks needs a value}"); py_args+=(--ranks "$2"); shift ;;
    *) py_args+=("$1") ;;
  esac
  shift
done
echo "== (a) Bagua-Net against plain TCP on loopback"
build/tools/bagua-net-demo "${net_args[@]}"
venv=${BAGUA_VENV:-.venv}
if ! "$venv/bin/python" -c "import bagua._C" 2>/dev/null; then
  ./setup.sh python
fi
echo
echo "== (b) Bagua's algorithms training scikit-learn's digits"
exec "$venv/bin/python" -m bagua.demo --out build/demo "${py_args[@]}"
