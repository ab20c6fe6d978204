#!/usr/bin/env bash
# Exploration on the GPU machine, before the full proof (run_all.sh): which
# plugin knobs (threads, streams) and NCCL channel counts serve all_reduce
# best, next to NCCL's socket transport, one proof run with data checking and
# NCCL's own log lines, a latency sweep, and bagua-net-perf on this host's
# many cores (loopback, no GPU). Prints compact tables; raw logs in OUT/raw.
#
# Usage: PLUGIN_DIR=... NCCL_TESTS_BIN=... [PERF_BIN=...] bash tune_grid.sh OUT
set -uo pipefail
OUT=${1:?usage: tune_grid.sh OUT}
mkdir -p "$OUT/raw"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PIP_NCCL=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
export LD_LIBRARY_PATH=$PIP_NCCL/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NET=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
BAGUA=(NCCL_NET_PLUGIN="$PLUGIN_DIR/libnccl-net-bagua.so" NCCL_NET=Bagua)
SOCKET=(NCCL_NET=Socket NCCL_NET_PLUGIN=none)
GRID_SIZES=${GRID_SIZES:-"-b 1M -e 1G -f 8 -n 8 -w 3"}

# nt NAME SIZES ENV...: one all_reduce_perf -g 2 run; prints size, time (us),
# busbw (GB/s) and #wrong of the out-of-place columns.
nt() {
  local name=$1 sizes=$2
  shift 2
  env "${NET[@]}" "$@" timeout 120 "$NCCL_TESTS_BIN/all_reduce_perf" -g 2 $sizes -c 1 \
    >"$OUT/raw/$name.log" 2>&1
  local rc=$?
  printf '%-28s rc=%s ' "$name" "$rc"
  awk '/^ +[0-9]+ +[0-9]+ +float/ {printf "%s:%s/%sus/w%s ", $1, $8, $6, $9}' "$OUT/raw/$name.log"
  echo
}

echo "## host: $(nproc) cpus, $(uname -r), glibc $(ldd --version | head -n1 | awk '{print $NF}')"
echo "## proof: all_reduce 8 B..1 GiB through Bagua, data checked"
nt proof "-b 8 -e 1G -f 4 -n 5 -w 2" "${BAGUA[@]}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
grep -E "NCCL version|Loaded net plugin|Using network|NET/Bagua|via NET" "$OUT/raw/proof.log" |
  sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | sort -rn | head -n 14

# GRID: ";"-separated "name:ENV=V,ENV=V" plugin configurations, each run once
# between the interleaved baselines (socket default, socket tuned).
GRID=${GRID:-"bagua_default:;bagua_c8:NCCL_MIN_NCHANNELS=8;bagua_t8:BAGUA_NET_THREADS=8"}
echo "## grid (size:busbw GB/s/time/#wrong), interleaved"
rep=0
IFS=';' read -ra configs <<<"$GRID"
for cfg in "${configs[@]}"; do
  name=${cfg%%:*}
  IFS=',' read -ra extra <<<"${cfg#*:}"
  if ((rep % 3 == 0)); then
    nt "socket_default_$rep" "$GRID_SIZES" "${SOCKET[@]}"
    nt "socket_c8_2x2_$rep" "$GRID_SIZES" "${SOCKET[@]}" NCCL_MIN_NCHANNELS=8 \
      NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2
  fi
  nt "$name" "$GRID_SIZES" "${BAGUA[@]}" "${extra[@]}"
  rep=$((rep + 1))
done

# LAT_GRID: like GRID, for the small-message latency sweep.
LAT_GRID=${LAT_GRID:-"lat_bagua:"}
echo "## latency (size:busbw/time us/#wrong)"
IFS=';' read -ra configs <<<"$LAT_GRID"
for rep in 1 2; do
  nt "lat_socket_$rep" "-b 8 -e 1M -f 4 -n 50 -w 10" "${SOCKET[@]}"
  for cfg in "${configs[@]}"; do
    IFS=',' read -ra extra <<<"${cfg#*:}"
    nt "${cfg%%:*}_$rep" "-b 8 -e 1M -f 4 -n 50 -w 10" "${BAGUA[@]}" "${extra[@]}"
  done
done

# RATE_LIMITS: Mbit/s values for BAGUA_NET_RATE_LIMIT_MBPS runs (emulated NIC).
for mbps in ${RATE_LIMITS:-}; do
  nt "rate_${mbps}" "-b 1M -e 256M -f 4 -n 5 -w 2" "${BAGUA[@]}" BAGUA_NET_RATE_LIMIT_MBPS="$mbps"
  echo "   (limit $mbps Mbit/s = $(awk "BEGIN {print $mbps / 8000}") GB/s)"
done

if [ -n "${PERF_BIN:-}" ]; then
  echo "## bagua-net-perf, ring, 2 ranks on loopback (no GPU)"
  timeout 150 "$PERF_BIN" --plugin "$PLUGIN_DIR/libnccl-net-bagua.so" --ranks 2 --pattern ring \
    -b 64K -e 64M -f 4 --reps 2 --baseline --json "$OUT/raw/perf.json" \
    --configs "${PERF_CONFIGS:-bagua=;s1=BAGUA_NET_STREAMS=1}" \
    2>"$OUT/raw/perf.err" | grep -vE '^#   ' | head -n 60
fi
tar -czf "$OUT/tune_raw.tar.gz" -C "$OUT" raw && rm -rf "$OUT/raw"
