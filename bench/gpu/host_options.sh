#!/usr/bin/env bash
# The plugin's data-path options on the GPU host, in one device call:
# 1. bagua-net-perf on this host's many cores (loopback, no GPU): io_uring
#    against epoll, one stream, and plain TCP, one direction, both at once and
#    ping-pong (bench/cpu/loopback_bench.sh; EXTRA_PERF_CONFIGS adds more).
# 2. all_reduce through real NCCL with zero-copy sends (auto, always) and
#    with setNetAttr-driven stream counts (BAGUA_NET_FLOWS_PER_PEER), at
#    NCCL's default channel count and at 8 channels, interleaved with NCCL's
#    socket transport (bench/gpu/tune_grid.sh; data checked, -c 1). The
#    plugin's own log lines that show the options acting (setNetAttr hints,
#    zero-copy counters) are kept in OUT/option_lines.txt.
#
# Usage: PLUGIN_DIR=... NCCL_TESTS_BIN=... PERF_BIN=... bash host_options.sh OUT
#   EXTRA_PERF_CONFIGS: more bagua-net-perf configurations ("name=ENV=V;...",
#   plugin=PATH loads another build); PERF_SIZES, PERF_PATTERNS=uni,ring,
#   LATENCY=1, REPS=3; GRID, LAT_GRID: replace the all_reduce configurations
#   ("name:ENV=V,ENV=V;..."; NCCL_NET_PLUGIN=PATH runs another build)
set -uo pipefail
OUT=${1:?usage: host_options.sh OUT}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
PLUGIN=$PLUGIN_DIR/libnccl-net-bagua.so
LOG="NCCL_DEBUG=INFO,NCCL_DEBUG_SUBSYS=NET"

echo "## $(nproc) cpus, $(uname -r); plugin sha256 $(sha256sum "$PLUGIN" | cut -c1-16)"
CONFIGS="bagua=;bagua-epoll=BAGUA_NET_ENGINE=epoll;bagua-1-stream=BAGUA_NET_STREAMS=1"
CONFIGS+=${EXTRA_PERF_CONFIGS:+;$EXTRA_PERF_CONFIGS}
PERF=$PERF_BIN PLUGIN=$PLUGIN REPS=${REPS:-3} CONFIGS="$CONFIGS" \
  SIZES=${PERF_SIZES:-"-b 64K -e 64M -f 4 -n 20 -w 3"} PATTERNS=${PERF_PATTERNS:-uni,ring} \
  LATENCY=${LATENCY:-1} timeout "${PERF_TIMEOUT_S:-240}" \
  bash "$HERE/../cpu/loopback_bench.sh" "$OUT/loopback" 2>"$OUT/loopback.err" | grep -vE '^#   '

if [[ -z ${GRID:-} ]]; then
  GRID="bagua_default:"
  GRID+=";bagua_zc_auto:BAGUA_NET_ZEROCOPY=auto,$LOG"
  GRID+=";bagua_zc_always:BAGUA_NET_ZEROCOPY=always,$LOG"
  GRID+=";bagua_flows4:BAGUA_NET_FLOWS_PER_PEER=4,$LOG"
  GRID+=";bagua_c8:NCCL_MIN_NCHANNELS=8"
  GRID+=";bagua_c8_flows8:NCCL_MIN_NCHANNELS=8,BAGUA_NET_FLOWS_PER_PEER=8,$LOG"
  GRID+=";bagua_c8_t24:NCCL_MIN_NCHANNELS=8,BAGUA_NET_THREADS=24"
  GRID+=";bagua_c8_t24_flows8:NCCL_MIN_NCHANNELS=8,BAGUA_NET_THREADS=24,BAGUA_NET_FLOWS_PER_PEER=8,$LOG"
  GRID+=";bagua_default_2:"
fi
GRID="$GRID" LAT_GRID=${LAT_GRID:-"lat_bagua:;lat_zc_auto:BAGUA_NET_ZEROCOPY=auto"} \
  GRID_SIZES=${GRID_SIZES:-"-b 1M -e 1G -f 8 -n 8 -w 3"} \
  PERF_BIN= timeout "${GRID_TIMEOUT_S:-300}" bash "$HERE/tune_grid.sh" "$OUT/grid"

mkdir -p "$OUT/grid/unpacked"
tar -xzf "$OUT/grid/tune_raw.tar.gz" -C "$OUT/grid/unpacked" 2>/dev/null
grep -HE "setNetAttr|zero-copy|streams per connection|ended on" "$OUT"/grid/unpacked/raw/*.log |
  sed "s|$OUT/grid/unpacked/raw/||" | sort | uniq -c >"$OUT/option_lines.txt"
rm -rf "$OUT/grid/unpacked"
echo "## option log lines (count, file: line)"
head -n 40 "$OUT/option_lines.txt"
