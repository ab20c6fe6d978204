#!/usr/bin/env bash
# Real NCCL over an emulated slow link on the GPU machine: two network
# namespaces ("hosts"), one rank in each, both on the one GPU (NCCL_HOSTID,
# MPS), joined by
#   LINK=veth: a veth pair, each end shaped with tc (tbf at RATE_GBIT, netem
#              DELAY_MS one way: RTT 2 x DELAY_MS; needs sch_netem for a delay);
#   LINK=tun:  bench-link-emulator (bench/cpu/delay_bench.sh's user-space delay
#              line over TUN: DELAY_MS one way, RATE_GBIT each direction, a
#              tail-drop queue of QUEUE_MS at the line rate, MTU 9000), on
#              EMU_CPUS, for kernels without sch_netem. QUEUE_MS=50 (default)
#              is the veth recipe's queue (tbf latency 50ms; its netem child
#              holds 100000 packets); QUEUE_MS=bdp is one bandwidth-delay
#              product (a shallow switch buffer; runs before 2026-11-29).
# Plain TCP measures the link first (env.txt; link_probe.py, 5 s each): one
# stream, one each way at once, PROBE_STREAMS (4) each way at once;
# slow_link_bench.py then measures all_reduce (busbw, exact-checked) and a DDP
# step rate through Bagua-Net at defaults, NCCL's socket transport at defaults
# and hand-tuned, interleaved REPS times. Namespaces are created and deleted here.
#
# Usage (root; ip and tc on PATH, e.g. bench/gpu/pack_tools.sh's; python3
#        with torch): bench/gpu/slow_link.sh OUT_DIR
#   RATE_GBIT=10 DELAY_MS=1 REPS=2 CONFIGS="bagua socket socket_tuned"
#   PLUGIN=<libnccl-net-bagua.so> CAP_S=120 (one run of both ranks)
#   LINK=veth|tun EMU=<bench-link-emulator> EMU_CPUS=14-15 QUEUE_MS=50|bdp (tun)
#   EMU_MTU=9000 (tun: the devices' MTU; 65000 carries the same bytes in 1/7 of the packets,
#   as a NIC's segmentation offload hands the stack 64 KB segments)
#   TCP_INFO_EVERY=S: every S seconds of each run, both namespaces' `ss -tin` (TCP_INFO:
#   busy / rwnd_limited / sndbuf_limited time, cwnd, rtt; needs ss, pack_tools.sh DIR ss) into
#   OUT_DIR/tcp_info.txt, condensed per configuration by bench/cpu/tcp_info_summary.py
#   (OUT_DIR/tcp_info_summary.md)
#   DDP_GAP_MS=<ms> (also DDP steps with the link idle this long between them)
#   SIZES_MIB=1,4,16,64,256 (all_reduce sizes), SECONDS_PER_SIZE=2 (timed seconds per size: a
#   256 MiB op takes 0.2 s on this link, so 2 s times only 6-9 of them)
#   TCP_CC=<name> (the TCP congestion control on the link's routes, e.g. cubic, most distributions'
#   default; unset: the host's, bbr on the GPU host)
#   EMU_REALTIME=1 (tun: the emulator's threads run SCHED_FIFO; 0: as before 2026-11-30)
#   RANK_CPUS=<list> (the ranks and probes are pinned there; LINK=tun's default:
#   every CPU but EMU_CPUS, so the delay line is never preempted by a rank)
# Prints the summary table (slow_link_summary.py) and writes OUT_DIR/results.jsonl,
# OUT_DIR/<config>_<rep>.rank<R>.log, OUT_DIR/tcp_counters.txt (each run's TCP
# resends and timeouts per namespace, tcp_counters.py), OUT_DIR/link_counters.txt (the link
# devices' packets and drops after each run: a drop there is not the emulator's queue),
# OUT_DIR/qdisc.txt (tc -s after the runs; LINK=tun: OUT_DIR/emulator.txt, its counters).
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
LINK=${LINK:-veth}
EMU=${EMU:-$ROOT/build/bench/tools/bench-link-emulator}
EMU_CPUS=${EMU_CPUS:-14-15}
QUEUE_MS=${QUEUE_MS:-50}
EMU_REALTIME=${EMU_REALTIME:-1}
EMU_MTU=${EMU_MTU:-9000}
EMU_PID=
RANK_CPUS=${RANK_CPUS:-}
PROBE_STREAMS=${PROBE_STREAMS:-4}
TCP_CC=${TCP_CC:-}
SIZES_MIB=${SIZES_MIB:-1,4,16,64,256}
SECONDS_PER_SIZE=${SECONDS_PER_SIZE:-2}
if [ "$LINK" = tun ] && [ -z "$RANK_CPUS" ]; then
  RANK_CPUS=$(python3 -c '
import os, sys
emu = set()
for part in sys.argv[1].split(","):
    lo, _, hi = part.partition("-")
    emu.update(range(int(lo), int(hi or lo) + 1))
print(",".join(str(c) for c in sorted(os.sched_getaffinity(0) - emu)))' "$EMU_CPUS")
  # (none left: the ranks share the emulator's CPUs, unpinned)
fi
PIN=()
[ -n "$RANK_CPUS" ] && PIN=(taskset -c "$RANK_CPUS")
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

A=bslow-a-$$
B=bslow-b-$$
IF=bslow  # one name in both namespaces: one NCCL_SOCKET_IFNAME serves both ranks
teardown() {
  if [ -n "$EMU_PID" ]; then  # SIGTERM: it prints its counters and exits
    kill -TERM "$EMU_PID" 2>/dev/null
    wait "$EMU_PID" 2>/dev/null
    EMU_PID=
  fi
  ip netns del "$A" 2>/dev/null
  ip netns del "$B" 2>/dev/null
  return 0
}
trap 'teardown; echo quit | nvidia-cuda-mps-control 2>/dev/null' EXIT

teardown
ip netns add "$A" && ip netns add "$B" || { echo "slow_link.sh: cannot create namespaces" >&2; exit 2; }
if [ "$LINK" = tun ]; then
  [ -x "$EMU" ] || { echo "slow_link.sh: no emulator at $EMU (ninja -C build, or EMU=)" >&2; exit 2; }
  IF=bnlink  # the emulator's name for its TUN device in both namespaces
  READY=$OUT/emulator.ready
  rm -f "$READY"
  delay_us=$(awk -v d="$DELAY_MS" 'BEGIN { printf "%d", d * 1000 }')
  # QUEUE_MS at the line rate (bdp: the round trip, 2 x DELAY_MS), at least 256 KB.
  queue_ms=$QUEUE_MS
  [ "$QUEUE_MS" = bdp ] && queue_ms=$(awk -v d="$DELAY_MS" 'BEGIN { print 2 * d }')
  queue_kb=$(awk -v g="$RATE_GBIT" -v m="$queue_ms" \
    'BEGIN { q = int(g * 1000 * m * 1000 / 8 / 1024 + 1); print (q < 256 ? 256 : q) }')
  taskset -c "$EMU_CPUS" "$EMU" "$A" "$B" "$delay_us" $((RATE_GBIT * 1000)) "$queue_kb" "$EMU_MTU" \
    --spin-us 0 --realtime "$EMU_REALTIME" --ready-file "$READY" >"$OUT/emulator.txt" 2>&1 &
  EMU_PID=$!
  for _ in $(seq 100); do [ -s "$READY" ] && break; sleep 0.05; done
  [ -s "$READY" ] || { cat "$OUT/emulator.txt" >&2; echo "slow_link.sh: emulator did not start" >&2; exit 2; }
  ip -n "$A" addr add 10.233.0.1 peer 10.233.0.2 dev $IF
  ip -n "$B" addr add 10.233.0.2 peer 10.233.0.1 dev $IF
  for ns in "$A" "$B"; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set $IF mtu "$EMU_MTU" up
  done
else
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
fi

if [ -n "$TCP_CC" ]; then
  # Per route (ip route congctl): the namespaces' sysctl is read-only in containers.
  for ns in "$A" "$B"; do
    peer=10.233.0.2; [ "$ns" = "$B" ] && peer=10.233.0.1
    ip -n "$ns" route replace "$peer" dev $IF congctl "$TCP_CC" ||
      { echo "slow_link.sh: cannot set congestion control $TCP_CC" >&2; exit 2; }
  done
fi

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "cpus: $(nproc)"
  python3 -c 'import torch; print("torch", torch.__version__, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))'
  echo "plugin: $PLUGIN (sha256 $(sha256sum "$PLUGIN" | cut -c1-16))"
  if [ "$LINK" = tun ]; then
    echo "link: bench-link-emulator (TUN), ${RATE_GBIT} Gbit/s + ${DELAY_MS} ms each way, queue ${queue_kb} KB (QUEUE_MS=$QUEUE_MS), MTU $EMU_MTU, CPUs $EMU_CPUS, realtime $EMU_REALTIME; reps $REPS; configs $CONFIGS"
  else
    echo "link: veth, tbf ${RATE_GBIT} Gbit/s + netem ${DELAY_MS} ms each way; reps $REPS; configs $CONFIGS"
    tc -n "$A" qdisc show dev $IF
  fi
  [ -n "$RANK_CPUS" ] && echo "ranks and probes on CPUs $RANK_CPUS"
  echo "congestion control: ${TCP_CC:-$(ip netns exec "$A" sysctl -n net.ipv4.tcp_congestion_control)}," \
    "slow start after idle: $(ip netns exec "$A" sysctl -n net.ipv4.tcp_slow_start_after_idle)"
  ip -n "$A" route show
  # Plain TCP across the link, 5 s: one stream, then one each way at once
  # (all_reduce sends both ways): what the link gives one socket.
  probe() {  # probe LABEL FROM_NS TO_NS TO_ADDR PORT STREAMS (link_probe.py, 5 s)
    ip netns exec "$3" "${PIN[@]}" python3 "$HERE/link_probe.py" recv "$4" "$5" "$6" "$1" &
    local receiver=$!
    sleep 1
    ip netns exec "$2" "${PIN[@]}" python3 "$HERE/link_probe.py" send "$4" "$5" "$6" 5
    wait "$receiver"  # not a bare wait: the emulator is a background job too
  }
  probe "one plain TCP stream" "$A" "$B" 10.233.0.2 5201 1
  probe "one plain TCP stream, B->A" "$B" "$A" 10.233.0.1 5206 1
  probe "both ways at once, A->B" "$A" "$B" 10.233.0.2 5202 1 &
  both=$!
  probe "both ways at once, B->A" "$B" "$A" 10.233.0.1 5203 1
  wait "$both"
  # PROBE_STREAMS plain sockets each way at once. Not a ceiling: through the
  # TUN emulator NCCL's transports carried 1.0-1.4x what these Python threads
  # did, which moved 6.3-8.4 Gbit/s between runs
  # (bench/results/slow_link_gpu_2026-11-28, third session).
  probe "both ways at once, $PROBE_STREAMS streams each, A->B" "$A" "$B" 10.233.0.2 5204 "$PROBE_STREAMS" &
  both=$!
  probe "both ways at once, $PROBE_STREAMS streams each, B->A" "$B" "$A" 10.233.0.1 5205 "$PROBE_STREAMS"
  wait "$both"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

link_counters() {  # link_counters LABEL: each end's RX/TX packets, errors and drops so far
  { echo "== $1"; for ns in "$A" "$B"; do ip -n "$ns" -s link show "$IF"; done; } >>"$OUT/link_counters.txt" 2>&1
}
link_counters "after the probes"

export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
# The MPS daemon on the ranks' CPUs too: nothing but the emulator on EMU_CPUS.
"${PIN[@]}" nvidia-cuda-mps-control -d

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
    for ns in "$A" "$B"; do ip netns exec "$ns" python3 "$HERE/tcp_counters.py" snap "$OUT/.tcp.$ns"; done
    pids=()
    for rank in 0 1; do
      ns=$A; [ $rank = 1 ] && ns=$B
      # shellcheck disable=SC2046
      ip netns exec "$ns" "${PIN[@]}" env $(config_env "$config") NCCL_SOCKET_IFNAME=$IF NCCL_IB_DISABLE=1 \
        NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO \
        NCCL_DEBUG_SUBSYS=INIT,NET,TUNING \
        timeout "$CAP_S" python3 "$HERE/slow_link_bench.py" --rank $rank --world 2 \
        --master 10.233.0.1:$port --config "$name" --out "$OUT/results.jsonl" --ddp-gap-ms "${DDP_GAP_MS:-0}" \
        --sizes-mib "$SIZES_MIB" --seconds "$SECONDS_PER_SIZE" \
        >"$OUT/${name}_$rep.rank$rank.log" 2>&1 &
      pids+=($!)
    done
    sampler=
    if [ -n "${TCP_INFO_EVERY:-}" ]; then
      # One block per sample, both hosts' sockets (tcp_info_summary.py reads "] NAME rep").
      while kill -0 "${pids[0]}" 2>/dev/null; do
        echo "=== $(date +%T)] $name rep $rep"
        for ns in "$A" "$B"; do ip netns exec "$ns" ss -tin state established | grep ' busy:'; done
        sleep "$TCP_INFO_EVERY"
      done >>"$OUT/tcp_info.txt" 2>&1 &
      sampler=$!
    fi
    rc=0
    for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
    [ -n "$sampler" ] && wait "$sampler"
    echo "$name rep $rep: rc=$rc in $((SECONDS - t0)) s"
    link_counters "$name rep $rep"
    for ns in "$A" "$B"; do
      side=a; [ "$ns" = "$B" ] && side=b
      ip netns exec "$ns" python3 "$HERE/tcp_counters.py" snap "$OUT/.tcp.$ns.after"
      python3 "$HERE/tcp_counters.py" diff "$OUT/.tcp.$ns" "$OUT/.tcp.$ns.after" "$name rep $rep, host $side" \
        >>"$OUT/tcp_counters.txt"
      rm -f "$OUT/.tcp.$ns" "$OUT/.tcp.$ns.after"
    done
  done
done
[ "$LINK" = tun ] || tc -s -n "$A" qdisc show dev $IF >"$OUT/qdisc.txt" 2>&1
[ -s "$OUT/tcp_info.txt" ] && python3 "$ROOT/bench/cpu/tcp_info_summary.py" "$OUT/tcp_info.txt" >"$OUT/tcp_info_summary.md"
python3 "$HERE/slow_link_summary.py" "$OUT" "$RATE_GBIT" | tee "$OUT/summary.md"
