#!/usr/bin/env bash
# Real NCCL over an emulated slow link on the GPU machine: two network
# namespaces ("hosts") joined by a veth pair, each end shaped with tc (tbf at
# RATE_GBIT, netem DELAY_MS one way: RTT 2 x DELAY_MS), one rank in each, both
# on the one GPU (NCCL_HOSTID, MPS). slow_link_bench.py measures all_reduce
# (busbw, exact-checked) and a DDP step rate through Bagua-Net at defaults,
# NCCL's socket transport at defaults and hand-tuned, interleaved REPS times.
# Namespaces are created and deleted here.
#
# Usage (root; ip and tc on PATH, e.g. bench/gpu/pack_tools.sh's; python3
#        with torch): bench/gpu/slow_link.sh OUT_DIR
#   RATE_GBIT=10 DELAY_MS=1 REPS=2 CONFIGS="bagua socket socket_tuned"
#   PLUGIN=<libnccl-net-bagua.so> CAP_S=120 (one run of both ranks)
# Prints the summary table (slow_link_summary.py) and writes OUT_DIR/results.jsonl,
# OUT_DIR/<config>_<rep>.rank<R>.log, OUT_DIR/qdisc.txt (tc -s after the runs).
set -uo pipefail
OUT=${1:?usage: slow_link.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RATE_GBIT=${RATE_GBIT:-10}
DELAY_MS=${DELAY_MS:-1}
REPS=${REPS:-2}
CONFIGS=${CONFIGS:-"bagua socket socket_tuned"}
PLUGIN=$(readlink -f "${PLUGIN:-$ROOT/build/net_plugin/libnccl-net-bagua.so}")
CAP_S=${CAP_S:-120}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

A=bslow-a-$$
B=bslow-b-$$
IF=bslow  # one name in both namespaces: one NCCL_SOCKET_IFNAME serves both ranks
teardown() {
  ip netns del "$A" 2>/dev/null
  ip netns del "$B" 2>/dev/null
  return 0
}
trap 'teardown; echo quit | nvidia-cuda-mps-control 2>/dev/null' EXIT

teardown
ip netns add "$A" && ip netns add "$B" || { echo "slow_link.sh: cannot create namespaces" >&2; exit 2; }
ip link add bsa-$$ type veth peer name bsb-$$
ip link set bsa-$$ netns "$A"
ip link set bsb-$$ netns "$B"
ip -n "$A" link set bsa-$$ name $IF
ip -n "$B" link set bsb-$$ name $IF
ip -n "$A" addr add 10.233.0.1/24 dev $IF
ip -n "$B" addr add 10.233.0.2/24 dev $IF
for ns in "$A" "$B"; do
  ip -n "$ns" link set lo up
  ip -n "$ns" link set $IF up
  # tbf at the root (the line rate), netem below it (the propagation delay).
  tc -n "$ns" qdisc add dev $IF root handle 1: tbf rate "${RATE_GBIT}gbit" burst 4mb latency 50ms ||
    { echo "slow_link.sh: tc tbf failed (sch_tbf missing?)" >&2; exit 2; }
  if [ "$DELAY_MS" != 0 ]; then
    tc -n "$ns" qdisc add dev $IF parent 1:1 handle 10: netem delay "${DELAY_MS}ms" limit 100000 ||
      { echo "slow_link.sh: tc netem failed (sch_netem missing?)" >&2; exit 2; }
  fi
done

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "cpus: $(nproc)"
  python3 -c 'import torch; print("torch", torch.__version__, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))'
  echo "plugin: $PLUGIN (sha256 $(sha256sum "$PLUGIN" | cut -c1-16))"
  echo "link: veth, tbf ${RATE_GBIT} Gbit/s + netem ${DELAY_MS} ms each way; reps $REPS; configs $CONFIGS"
  tc -n "$A" qdisc show dev $IF
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d

config_env() {  # the transport's variables, as env arguments
  case $1 in
    bagua) echo "NCCL_NET_PLUGIN=$PLUGIN NCCL_NET=Bagua" ;;
    socket) echo "NCCL_NET_PLUGIN=none NCCL_NET=Socket" ;;
    socket_tuned) echo "NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_MIN_NCHANNELS=8 NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2" ;;
    *=*) echo "NCCL_NET_PLUGIN=$PLUGIN NCCL_NET=Bagua ${1#*=}" | tr ',' ' ' ;;
    *) echo "slow_link.sh: unknown config $1" >&2; return 1 ;;
  esac
}

port=29600
for rep in $(seq 1 "$REPS"); do
  for config in $CONFIGS; do
    name=${config%%=*}
    port=$((port + 1))
    t0=$SECONDS
    pids=()
    for rank in 0 1; do
      ns=$A; [ $rank = 1 ] && ns=$B
      # shellcheck disable=SC2046
      ip netns exec "$ns" env $(config_env "$config") NCCL_SOCKET_IFNAME=$IF NCCL_IB_DISABLE=1 \
        NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO \
        NCCL_DEBUG_SUBSYS=INIT,NET,TUNING \
        timeout "$CAP_S" python3 "$HERE/slow_link_bench.py" --rank $rank --world 2 \
        --master 10.233.0.1:$port --config "$name" --out "$OUT/results.jsonl" \
        >"$OUT/${name}_$rep.rank$rank.log" 2>&1 &
      pids+=($!)
    done
    rc=0
    for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
    echo "$name rep $rep: rc=$rc in $((SECONDS - t0)) s"
  done
done
tc -s -n "$A" qdisc show dev $IF >"$OUT/qdisc.txt" 2>&1
python3 "$HERE/slow_link_summary.py" "$OUT" "$RATE_GBIT" | tee "$OUT/summary.md"
