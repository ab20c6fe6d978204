#!/usr/bin/env bash
# A user's DDP job (ddp_train.py: 50M-parameter MLP, torchrun) through
# Bagua-Net at defaults (tuner on), Bagua-Net with BAGUA_NET_TUNER=0, and
# NCCL's socket transport at defaults and hand-tuned, N ranks on ONE GPU, each
# its own NCCL host (NCCL_HOSTID, MPS), interleaved REPS times. Prints one
# line per run and a median table of steps/s.
#
# Usage: [PLUGIN=...] [RANKS="2 4"] [REPS=2] bash bench/gpu/ddp_defaults.sh OUT_DIR
set -uo pipefail
OUT=${1:?usage: ddp_defaults.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PLUGIN=$(readlink -f "${PLUGIN:-$ROOT/build/net_plugin/libnccl-net-bagua.so}")
RANKS=${RANKS:-"2 4"}
REPS=${REPS:-2}
STEPS=${STEPS:-60}
CAP_S=${CAP_S:-90}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && trap 'echo quit | nvidia-cuda-mps-control' EXIT
export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0
declare -A ENVS=(
  [bagua]="NCCL_NET_PLUGIN=$PLUGIN NCCL_NET=Bagua"
  [bagua_tuner_off]="NCCL_NET_PLUGIN=$PLUGIN NCCL_NET=Bagua BAGUA_NET_TUNER=0"
  [socket]="NCCL_NET_PLUGIN=none NCCL_NET=Socket"
  [socket_tuned]="NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_MIN_NCHANNELS=8 NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2"
)
for np in $RANKS; do
  for rep in $(seq 1 "$REPS"); do
    order="bagua socket socket_tuned bagua_tuner_off"
    # Every second repetition in reverse: the first of a repetition can lose
    # 15-25% on the GPU host (bench/results/caller_wait_gpu_2026-12-02).
    [ $((rep % 2)) = 0 ] && order="bagua_tuner_off socket_tuned socket bagua"
    for config in $order; do
      log=$OUT/ddp_${config}_r${np}_$rep.log
      # shellcheck disable=SC2086
      env ${ENVS[$config]} timeout "$CAP_S" python3 -m torch.distributed.run --standalone \
        --nproc_per_node "$np" --no-python bash -c \
        'export NCCL_HOSTID=ddp-host-$RANK LOCAL_RANK=0; exec python3 "$0" "$@"' \
        "$HERE/ddp_train.py" --steps "$STEPS" --label "$config" >"$log" 2>&1
      echo "$config ranks $np rep $rep: rc=$? $(grep -o 'steps_per_s=[0-9.]*' "$log" | head -n 1)"
    done
  done
done | tee "$OUT/runs.txt"
python3 - "$OUT/runs.txt" <<'PY'
import collections, re, statistics, sys
vals = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) ranks (\d+) rep \d+: rc=0 steps_per_s=([0-9.]+)", line)
    if m:
        vals[(int(m.group(2)), m.group(1))].append(float(m.group(3)))
print("\n| ranks | bagua (defaults) | bagua, tuner off | socket | socket tuned |\n|---|---|---|---|---|")
for np in sorted({k[0] for k in vals}):
    cells = [f"{statistics.median(vals[(np, c)]):.2f}" if vals[(np, c)] else "-"
             for c in ("bagua", "bagua_tuner_off", "socket", "socket_tuned")]
    print(f"| {np} | " + " | ".join(cells) + " |")
PY
