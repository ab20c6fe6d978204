#!/usr/bin/env bash
# One connection, one direction, through the plugin as NCCL's proxy drives it
# (bench-abi-client: depth 4, test() polled by spinning or yielding; sender
# and receiver in two processes) against one blocking TCP socket, in
# interleaved rounds (A B A B ...), each configuration in fresh processes.
# Prints, per size and configuration, the median of the per-round ratios to
# tcp with its 95% interval (abi_client_summary.py), and keeps every run in
# OUT/runs.tsv.
#
# Usage: bench/cpu/abi_client_bench.sh OUT [ROUNDS] [SIZES]
#   ROUNDS   rounds (default 20); SIZES in bytes (default 1M 4M 16M 64M)
#   CONFIGS  "name:poll[:ENV=VAL,ENV=VAL]" separated by spaces; poll is spin
#            or yield; the key plugin=PATH loads another library for that
#            configuration; tcp is always measured (default: "spin:spin yield:yield")
#   CPUS     taskset list for every process (default: all allowed)
#   ITERS    timed messages per run (default: 64 MiB worth, at least 20)
#   TCP_SLOTS  buffers the tcp baseline cycles over (default 1; 4 = the
#            plugin side's working set at its depth of 4)
# Run from the repository root after ninja -C build.
set -euo pipefail
OUT=${1:?usage: abi_client_bench.sh OUT [ROUNDS] [SIZES]}
ROUNDS=${2:-20}
SIZES=${3:-"1048576 4194304 16777216 67108864"}
CONFIGS=${CONFIGS:-"spin:spin yield:yield"}
CLIENT=${CLIENT:-build/bench/tools/bench-abi-client}
PLUGIN=${PLUGIN:-build/net_plugin/libnccl-net-bagua.so}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
TASKSET=()
[ -n "${CPUS:-}" ] && TASKSET=(taskset -c "$CPUS")
export NCCL_SOCKET_IFNAME="=lo"

# one NAME POLL ENVS SIZE: one sender/receiver pair; prints the receiver's GB/s.
one() {
  local name=$1 poll=$2 envs=$3 size=$4 dir args iters plugin=$PLUGIN
  dir=$(mktemp -d)
  iters=${ITERS:-$(( (64 << 20) / size > 20 ? (64 << 20) / size : 20 ))}
  local env=() kept=() e
  [ -n "$envs" ] && IFS=, read -r -a env <<<"$envs"
  for e in "${env[@]}"; do
    if [[ $e == plugin=* ]]; then plugin=${e#plugin=}; else kept+=("$e"); fi
  done
  env=("${kept[@]}")
  if [ "$name" = tcp ]; then args=(--tcp --tcp-slots "${TCP_SLOTS:-1}"); else args=(--plugin "$plugin" --poll "$poll"); fi
  args+=(--dir "$dir" --size "$size" --iters "$iters" --warmup 5)
  env "${env[@]}" "${TASKSET[@]}" "$CLIENT" --role recv "${args[@]}" >"$dir/out" &
  local receiver=$!
  env "${env[@]}" "${TASKSET[@]}" "$CLIENT" --role send "${args[@]}"
  wait "$receiver"
  awk '{print $4, $6}' "$dir/out"
  rm -rf "$dir"
}

echo -e "round\tsize\tconfig\tgbps\tcpu_s_per_gb" >"$OUT/runs.tsv"
{
  echo "date: $(date -u +%FT%TZ) commit: $(git rev-parse --short HEAD 2>/dev/null)"
  echo "cpus: $(nproc) allowed $(grep Cpus_allowed_list /proc/self/status | cut -f2)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "configs: tcp (slots ${TCP_SLOTS:-1}) $CONFIGS; rounds $ROUNDS; sizes $SIZES"
} >"$OUT/env.txt"
for ((r = 1; r <= ROUNDS; ++r)); do
  for size in $SIZES; do
    for config in "tcp:-" $CONFIGS; do
      IFS=: read -r name poll envs <<<"$config"
      read -r gbps cpu < <(one "$name" "$poll" "${envs:-}" "$size")
      echo -e "$r\t$size\t$name\t$gbps\t$cpu" >>"$OUT/runs.tsv"
    done
  done
  echo "round $r of $ROUNDS done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
python3 "$HERE/abi_client_summary.py" "$OUT/runs.tsv" | tee "$OUT/summary.md"
