#!/usr/bin/env bash
# Proof that Bagua-Net loads through its v12 table on the newest NCCL and
# carries all_reduce exactly: nccl-tests' all_reduce_perf (an MPI build,
# linked against the NCCL that bench/gpu/build_nccl.sh built), 2 ranks on ONE
# GPU, each its own NCCL host (NCCL_HOSTID; shared/BENCHMARKING.md) under an
# MPS daemon, so every byte crosses the plugin. With NCCL_TESTS_BIN_OLD (an
# nccl-tests build against torch's pip NCCL, 2.28) the same run on that NCCL,
# which must load the v11 table.
#
# Usage: NCCL_DIR=<build_nccl.sh OUT_DIR> NCCL_TESTS_BIN=<nccl-tests build, MPI=1> \
#          [PLUGIN=<libnccl-net-bagua.so>] [NCCL_TESTS_BIN_OLD=<build against pip NCCL>] \
#          bash bench/gpu/run_nccl_newest.sh OUT_DIR
# Relies on: mpirun (Open MPI), nvidia-cuda-mps-control, GNU timeout, python3.
# Writes OUT_DIR/env.txt, OUT_DIR/<tag>.log (nccl-tests stdout),
# OUT_DIR/<tag>.nccl.<host>.<pid>.log (NCCL_DEBUG=INFO), and prints per run:
#   newest: NCCL 2.30.7, Loaded net plugin Bagua (v12), Using network Bagua x2, via NET/Bagua x.., #wrong 0, out of bounds 0: PASS
# Exit status 0 only when every run passed.
set -uo pipefail
OUT=${1:?usage: NCCL_DIR=... NCCL_TESTS_BIN=... run_nccl_newest.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
NCCL_DIR=${NCCL_DIR:?NCCL_DIR=<the OUT_DIR of build_nccl.sh>}
NCCL_TESTS_BIN=${NCCL_TESTS_BIN:?NCCL_TESTS_BIN=<nccl-tests build folder, built with MPI=1>}
PLUGIN=${PLUGIN:-$ROOT/build/net_plugin/libnccl-net-bagua.so}
SIZES=${SIZES:-"-b 8 -e 256M -f 4"}
CAP_S=${CAP_S:-150}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for f in "$NCCL_DIR/lib/libnccl.so.2" "$NCCL_TESTS_BIN/all_reduce_perf" "$PLUGIN"; do
  [ -e "$f" ] || { echo "run_nccl_newest.sh: $f does not exist" >&2; exit 2; }
done
PLUGIN=$(readlink -f "$PLUGIN")
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

PIP_NCCL_LIB=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)/lib
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cpus: $(nproc) (allowed: $(grep Cpus_allowed_list /proc/self/status | cut -f2))"
  echo "newest NCCL: $NCCL_DIR/lib/libnccl.so.2 ($(readlink -f "$NCCL_DIR/lib/libnccl.so.2"))"
  echo "pip NCCL: $PIP_NCCL_LIB"
  echo "plugin: $PLUGIN (sha256 $(sha256sum "$PLUGIN" | cut -c1-16))"
  echo "plugin tables: $(nm -D --defined-only "$PLUGIN" | grep -o 'ncclNetPlugin_v[0-9]*' | tr '\n' ' ')"
  echo "mpirun: $(mpirun --version 2>&1 | head -n 1)"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && trap 'echo quit | nvidia-cuda-mps-control' EXIT

# run TAG NCCL_LIB_DIR NCCL_TESTS_DIR: one all_reduce_perf sweep, 2 ranks.
run() {
  local tag=$1 lib=$2 bin=$3
  if ! ldd "$bin/all_reduce_perf" | grep -q libmpi; then
    echo "$tag: $bin/all_reduce_perf is not an MPI build (make MPI=1 MPI_HOME=...): FAIL"
    return 1
  fi
  # Every rank's environment, set here (mpirun need not forward anything):
  # its own NCCL host, the one GPU, the network path through the plugin only.
  local wrapper=$OUT/$tag.rank.sh
  cat >"$wrapper" <<WRAP
#!/usr/bin/env bash
rank=\${OMPI_COMM_WORLD_RANK:-\${PMIX_RANK:?not started by mpirun}}
export NCCL_HOSTID=bagua-host-\$rank NCCL_TESTS_DEVICE=0 CUDA_VISIBLE_DEVICES=0
export LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
export NCCL_NET_PLUGIN=$PLUGIN NCCL_NET=Bagua NCCL_NVLS_ENABLE=0
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_DEBUG_FILE=$OUT/$tag.nccl.%h.%p.log
export CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY
exec "\$@"
WRAP
  chmod +x "$wrapper"
  local t0=$SECONDS
  # shellcheck disable=SC2086
  timeout "$CAP_S" mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$wrapper" \
    "$bin/all_reduce_perf" -g 1 $SIZES -c 1 -n 10 -w 3 >"$OUT/$tag.log" 2>&1
  local rc=$?
  echo "$tag: rc=$rc in $((SECONDS - t0)) s"
  python3 - "$OUT/$tag.log" "$tag" <<'PY'
import glob, os, sys
sys.path.insert(0, os.environ["HERE"])
import nccl_logs
log, tag = sys.argv[1], sys.argv[2]
run = nccl_logs.parse_nccl_tests(log)
dbg = nccl_logs.scan_nccl_debug(sorted(glob.glob(log[:-len(".log")] + ".nccl.*.log")))
want = "Bagua (v12)" if tag == "newest" else "Bagua (v11)"
wrong = run.wrong_total()
ok = (want in dbg.plugins_loaded and dbg.using_network.get("Bagua", 0) >= 2
      and dbg.via.get("NET/Bagua", 0) > 0 and set(dbg.via) <= {"NET/Bagua"}
      and run.rows and run.concluded and wrong == 0 and run.out_of_bounds == 0)
print(f"{tag}: NCCL {','.join(sorted(dbg.versions)) or '?'}, "
      f"Loaded net plugin {','.join(sorted(dbg.plugins_loaded)) or 'none'}, "
      f"Using network {dict(dbg.using_network)}, via {dict(dbg.via)}, "
      f"{len(run.rows)} sizes, #wrong {wrong}, out of bounds {run.out_of_bounds}, "
      f"avg busbw {run.avg_busbw}: {'PASS' if ok else 'FAIL'}")
for w in dbg.warns + run.errors:
    print("  ", w)
sys.exit(0 if ok else 1)
PY
}

export HERE
status=0
run newest "$NCCL_DIR/lib" "$NCCL_TESTS_BIN" || status=1
if [ -n "${NCCL_TESTS_BIN_OLD:-}" ]; then
  run torch_nccl "$PIP_NCCL_LIB" "$NCCL_TESTS_BIN_OLD" || status=1
fi
grep -h "Loaded net plugin" "$OUT"/*.nccl.*.log 2>/dev/null | sort | uniq -c
exit $status
