#!/usr/bin/env bash
# Bagua-Net against NCCL's socket transport, defaults and hand-tuned, in ONE
# run: nccl-tests (an MPI build, one process per rank, -g 1; --bind-to none:
# Open MPI binds each of 2 ranks to one core by default, which holds every
# transport to ~2 GB/s). GPUS=1 (default): N ranks on ONE GPU, each its own
# NCCL host (NCCL_HOSTID; shared/BENCHMARKING.md) under an MPS daemon.
# GPUS=G > 1: rank r on GPU r % G, one host. Either way NCCL_P2P_DISABLE=1
# NCCL_SHM_DISABLE=1, so every byte crosses the network transport.
# Configurations are interleaved REPS times, every second repetition in
# reverse order (a configuration run first in each repetition lost 15-25% on
# the GPU host: bench/results/caller_wait_gpu_2026-12-02); each sweep's NCCL
# INFO log gives the channels NCCL chose.
#
# Usage: NCCL_TESTS_BIN=<nccl-tests build, MPI=1> [PLUGIN=...] [RANKS="2 4"] \
#          [REPS=3] [CONFIGS="bagua socket socket_tuned ..."] [GPUS=1] \
#          [COLLECTIVES="all_reduce all_gather reduce_scatter sendrecv"] \
#          bash bench/gpu/net_defaults.sh OUT_DIR
# LIMIT_STREAMS="1 4 16" (default; "" skips): the loopback TCP ceiling per
# rank count, before and after the sweeps, in limit.txt and the summary;
# LIMIT_GPU_STREAMS="4 8" the same through the GPU (tcp_limit.py --gpu).
# A configuration is a name from the table below, or NAME=ENV1=V1,ENV2=V2
# (a Bagua-Net run with those variables, e.g. bagua_ch8=NCCL_MIN_NCHANNELS=8;
# a NAME that starts with "socket" runs NCCL's socket transport with them,
# e.g. socket_ring=NCCL_ALGO=Ring). `null` (and null*=ENV=V,...) runs the
# network that moves nothing (null_net.cc, built as NULL_NET=<so>; protocol
# Simple, since LL's flags never arrive): NCCL's own host-staged path with no
# transport, the ceiling every transport is under (its #wrong is not 0).
# Prints one table (net_defaults_summary.py): busbw per size and config, the
# ratios the issue's targets name, and the channels each config got.
set -uo pipefail
OUT=${1:?usage: NCCL_TESTS_BIN=... net_defaults.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
NCCL_TESTS_BIN=${NCCL_TESTS_BIN:?NCCL_TESTS_BIN=<nccl-tests build folder, built with MPI=1>}
PLUGIN=$(readlink -f "${PLUGIN:-$ROOT/build/net_plugin/libnccl-net-bagua.so}")
NULL_NET=$(readlink -f "${NULL_NET:-$ROOT/build/bench/gpu/null_net.so}")
NCCL_LIB=${NCCL_LIB:-$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')/lib}
RANKS=${RANKS:-"2 4"}
REPS=${REPS:-3}
CONFIGS=${CONFIGS:-"bagua socket socket_tuned"}
SIZES=${SIZES:-"-b 8 -e 512M -f 4"}
ITERS=${ITERS:-"-n 20 -w 5"}
CAP_S=${CAP_S:-120}
GPUS=${GPUS:-1}
COLLECTIVES=${COLLECTIVES:-all_reduce}
# The host's ceiling measured before and after the sweeps (tcp_limit.py: a
# ring of RANKS processes over loopback TCP, K sockets to each neighbour, what
# each rank sends per second = busbw's ceiling); empty skips it.
LIMIT_STREAMS=${LIMIT_STREAMS-"1 4 16"}
# The same ring with every chunk staged through the GPU (tcp_limit.py --gpu:
# GPU -> pinned host -> TCP -> pinned host -> GPU), K sockets per neighbour;
# empty (default) skips it.
LIMIT_GPU_STREAMS=${LIMIT_GPU_STREAMS-""}
# MEM_LIMIT=1: the host's memory-copy bandwidth and the busbw ceiling it sets
# (mem_limit.py: 6 host-memory passes per byte sent), before and after.
MEM_LIMIT=${MEM_LIMIT:-0}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# config_env NAME: the variables of one configuration, one per line.
config_env() {
  case $1 in
    bagua) echo "NCCL_NET_PLUGIN=$PLUGIN"; echo "NCCL_NET=Bagua" ;;
    socket) echo "NCCL_NET_PLUGIN=none"; echo "NCCL_NET=Socket" ;;
    socket_tuned)
      echo "NCCL_NET_PLUGIN=none"; echo "NCCL_NET=Socket"
      echo "NCCL_MIN_NCHANNELS=8"; echo "NCCL_SOCKET_NTHREADS=2"; echo "NCCL_NSOCKS_PERTHREAD=2" ;;
    null | null*=*)
      echo "NCCL_NET_PLUGIN=$NULL_NET"; echo "NCCL_NET=Null"; echo "NCCL_PROTO=Simple"
      [ "$1" = null ] || echo "${1#*=}" | tr ',' '\n' ;;
    socket*=*)
      echo "NCCL_NET_PLUGIN=none"; echo "NCCL_NET=Socket"
      echo "${1#*=}" | tr ',' '\n' ;;
    *=*)
      echo "NCCL_NET_PLUGIN=$PLUGIN"; echo "NCCL_NET=Bagua"
      echo "${1#*=}" | tr ',' '\n' ;;
    *) echo "net_defaults.sh: unknown config $1" >&2; return 1 ;;
  esac
}

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cpus: $(nproc)"
  echo "NCCL library: $NCCL_LIB/libnccl.so.2"
  echo "plugin: $PLUGIN (sha256 $(sha256sum "$PLUGIN" | cut -c1-16))"
  echo "ranks: $RANKS; gpus: $GPUS; collectives: $COLLECTIVES; reps: $REPS; configs: $CONFIGS"
  echo "sizes: $SIZES; iters: $ITERS"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if [ "$GPUS" = 1 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  nvidia-cuda-mps-control -d && trap 'echo quit | nvidia-cuda-mps-control' EXIT
fi

# placement: the lines of a rank's wrapper that choose its GPU (and host).
placement() {
  if [ "$GPUS" = 1 ]; then
    echo 'export NCCL_HOSTID=bagua-host-$rank NCCL_TESTS_DEVICE=0 CUDA_VISIBLE_DEVICES=0'
    echo "export CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY"
  else
    # nccl-tests picks GPU (local rank % visible GPUs) itself.
    echo "export CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((GPUS - 1)))"
  fi
}

# sweep COLLECTIVE RANKS CONFIG REP: one <collective>_perf sweep.
sweep() {
  local coll=$1 np=$2 config=$3 rep=$4
  local name=${config%%=*}
  local tag=${coll}__${name}__r${np}_${rep}
  local wrapper=$OUT/$tag.rank.sh
  {
    echo '#!/usr/bin/env bash'
    echo 'rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:?not started by mpirun}}'
    placement
    echo "export LD_LIBRARY_PATH=$NCCL_LIB\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
    echo 'export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0'
    echo "export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,TUNING NCCL_DEBUG_FILE=$OUT/$tag.nccl.%h.%p.log"
    config_env "$config" | sed 's/^/export /'
    echo 'exec "$@"'
  } >"$wrapper"
  chmod +x "$wrapper"
  local t0=$SECONDS
  # shellcheck disable=SC2086
  timeout "$CAP_S" mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$wrapper" \
    "$NCCL_TESTS_BIN/${coll}_perf" -g 1 $SIZES -c 1 $ITERS >"$OUT/$tag.log" 2>&1
  echo "$tag: rc=$? in $((SECONDS - t0)) s"
}

# limit WHEN: the TCP ring ceiling for every rank count and stream count.
limit() {
  for np in $RANKS; do
    for k in $LIMIT_STREAMS; do
      echo "$1: $(python3 "$HERE/tcp_limit.py" --ranks "$np" --streams "$k" --seconds 5 2>&1 | tail -n 1)"
    done
    for k in $LIMIT_GPU_STREAMS; do
      echo "$1: $(python3 "$HERE/tcp_limit.py" --ranks "$np" --streams "$k" --seconds 5 --gpu 2>&1 | tail -n 1)"
    done
  done | tee -a "$OUT/limit.txt"
  if [ "$MEM_LIMIT" = 1 ]; then
    echo "$1: $(python3 "$HERE/mem_limit.py" --ranks "$RANKS" 2>&1 | tail -n 1)" | tee -a "$OUT/limit.txt"
  fi
}

limit before
REVERSED=$(printf '%s\n' $CONFIGS | tac | tr '\n' ' ')
for np in $RANKS; do
  for rep in $(seq 1 "$REPS"); do
    order=$CONFIGS
    [ $((rep % 2)) = 0 ] && order=$REVERSED
    for coll in $COLLECTIVES; do
      for config in $order; do
        sweep "$coll" "$np" "$config" "$rep"
      done
    done
  done
done
limit after
python3 "$HERE/net_defaults_summary.py" "$OUT" | tee "$OUT/summary.md"
