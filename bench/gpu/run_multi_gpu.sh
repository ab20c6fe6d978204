#!/usr/bin/env bash
# Issue 26 on a machine of several GPUs (nvidia-h100-x4 / nvidia-h200-x4; 2 GPUs
# run the 2-GPU parts). Steps:
#   nccl       nccl-tests (MPI build, built here from NCCL_TESTS_SRC against torch's
#              pip NCCL), one process per GPU, -g 1, forced through the network
#              transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1): all_reduce,
#              all_gather, reduce_scatter, sendrecv on every GPU (NCCL_COLLECTIVES
#              picks), all_reduce on 2;
#              Bagua-Net against NCCL's socket transport at defaults and hand-tuned,
#              8 B - 1 GiB, #wrong checked (net_defaults.sh, GPUS=...)
#   hier       4 GPUs as 2 "nodes" of 2 (NCCL_HOSTID per node: NVLink inside a node,
#              Bagua-Net between; 2 GPUs: 2 nodes of 1): hierarchical results against flat
#              (tests/python/hier_job.py --device cuda) for gradient allreduce,
#              decentralized, ByteGrad, QAdam; hier_summary.py
#   hier_speed the same 2 nodes: steps/s flat against hierarchical
#              (algorithms_bench.py, two torchrun "nodes", BAGUA_NET_RATE_LIMIT_MBPS=10000)
#   lightning  Trainer(strategy="bagua") with each algorithm against DDPStrategy on
#              LIGHTNING_GPUS (default "4 2") GPUs, one process per GPU, all through
#              Bagua-Net: digits accuracy, then 50M-MLP steps/s in the same launch
#              (LIGHTNING_ARGS: more arguments, e.g. "--optimizer adam")
#
# Usage: WHEEL=<bagua wheel> [NCCL_TESTS_SRC=<nccl-tests source>] \
#          bash bench/gpu/run_multi_gpu.sh OUT [nccl hier lightning hier_speed]
# The wheel goes into the machine's Python with pip --no-deps (torch's NCCL
# bound at run time; the plugin is the wheel's). TOOLS=<pack_tools.sh folder
# with ss> lets the hierarchical step count bytes per socket.
set -uo pipefail
OUT=${1:?usage: WHEEL=... run_multi_gpu.sh OUT [nccl hier lightning]}
shift
STEPS=${*:-nccl hier lightning hier_speed}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
GPUS=$(nvidia-smi -L | wc -l)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo
[ -n "${TOOLS:-}" ] && export PATH=$(cd "$TOOLS" && pwd)/bin:$PATH

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  nvidia-smi topo -m
  echo "cpus: $(nproc --all) (allowed: $(grep Cpus_allowed_list /proc/self/status | cut -f2))"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  python3 -c 'import lightning; print("lightning", lightning.__version__)'
} >"$OUT/env.txt" 2>&1
python3 -m pip install -q --no-deps --force-reinstall "${WHEEL:?WHEEL=<path of the bagua wheel>}" \
  >"$OUT/install.log" 2>&1 || { tail -n 20 "$OUT/install.log"; exit 1; }
PLUGIN=$(python3 -c 'import bagua; print(bagua.net_plugin_path())')
(cd /tmp && python3 -m bagua.info) >>"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

BAGUA_NET=(NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_NET_PLUGIN="$PLUGIN" NCCL_NET=Bagua
           NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET)
FORCED=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)  # every byte through the network transport
first_gpus() { seq -s, 0 $(($1 - 1)); }

build_nccl_tests() {
  [ -x /tmp/nt/build_mpi/all_reduce_perf ] && return 0
  local nccl cuda s=/tmp/nccl-pip
  nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
  mkdir -p $s/lib && ln -sfn "$nccl/include" $s/include && ln -sf "$nccl/lib/libnccl.so.2" $s/lib/libnccl.so
  cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  rm -rf /tmp/nt && cp -r "${NCCL_TESTS_SRC:?NCCL_TESTS_SRC=<nccl-tests source>}" /tmp/nt
  make -C /tmp/nt -j16 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi NCCL_HOME=$s \
    CUDA_HOME="$cuda" NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 BUILDDIR=/tmp/nt/build_mpi \
    >"$OUT/nccl_tests_build.log" 2>&1 || { tail -n 20 "$OUT/nccl_tests_build.log"; return 1; }
}

for step in $STEPS; do
  t0=$SECONDS
  case $step in
    nccl)
      build_nccl_tests || continue
      echo "nccl-tests built ($((SECONDS - t0)) s)"
      export NCCL_TESTS_BIN=/tmp/nt/build_mpi PLUGIN SIZES="-b 8 -e 1G -f 2"
      export ITERS=${NCCL_ITERS:-"-n 10 -w 3"} CAP_S=${NCCL_CAP_S:-90} REPS=${NCCL_REPS:-1}
      GPUS=$GPUS RANKS=$GPUS COLLECTIVES=${NCCL_COLLECTIVES:-"all_reduce all_gather reduce_scatter sendrecv"} \
        bash "$HERE/net_defaults.sh" "$OUT/nccl$GPUS" | grep -v "^|"
      if [ "$GPUS" -gt 2 ]; then
        GPUS=2 RANKS=2 COLLECTIVES=all_reduce bash "$HERE/net_defaults.sh" "$OUT/nccl2" |
          grep -v "^|"
      fi
      ;;
    hier)
      mkdir -p "$OUT/hier"
      for algo in gradient_allreduce decentralized bytegrad qadam; do
        env "${BAGUA_NET[@]}" NCCL_DEBUG_FILE="$OUT/hier/nccl_$algo.%h.%p.log" timeout 90 \
          python3 -m torch.distributed.run --standalone --nproc_per_node "$GPUS" \
          "$ROOT/tests/python/hier_job.py" --algorithm "$algo" --device cuda --nodes 2 \
          --out "$OUT/hier/$algo" >"$OUT/hier/$algo.log" 2>&1
        echo "hier $algo rc=$? ($((SECONDS - t0)) s)"
      done
      python3 "$HERE/hier_summary.py" "$OUT/hier" | tee "$OUT/hier_summary.md"
      ;;
    hier_speed)
      mkdir -p "$OUT/hier"
      # Two torchrun "nodes" of 2 GPUs each: GROUP_RANK and LOCAL_WORLD_SIZE as on real nodes.
      for node in 0 1; do
        env "${BAGUA_NET[@]}" NCCL_DEBUG_FILE="$OUT/hier/nccl_speed.%h.%p.log" \
          NCCL_HOSTID="bagua-node-$node" CUDA_VISIBLE_DEVICES=$((2 * node)),$((2 * node + 1)) \
          BAGUA_NET_RATE_LIMIT_MBPS=${HIER_RATE_MBPS:-10000} timeout 420 \
          python3 -m torch.distributed.run --nnodes 2 --node-rank $node --nproc-per-node 2 \
          --master-addr 127.0.0.1 --master-port 29655 "$HERE/algorithms_bench.py" \
          --configs "${HIER_CONFIGS:-ga_sgd,ga_sgd_hier,bytegrad_sgd,bytegrad_sgd_hier,qadam,qadam_hier,dec_all_sgd,dec_all_sgd_hier}" \
          --rounds "${HIER_ROUNDS:-2}" --out "$OUT/hier/speed.json" >"$OUT/hier/speed_node$node.log" 2>&1 &
      done
      wait
      grep "steps/s" "$OUT/hier/speed_node0.log" | tail -n 16
      python3 "$HERE/hier_summary.py" "$OUT/hier" | tee "$OUT/hier_summary.md"
      ;;
    lightning)
      mkdir -p "$OUT/lightning"
      for n in ${LIGHTNING_GPUS:-4 2}; do
        [ "$n" -le "$GPUS" ] || continue
        for s in ${LIGHTNING_STRATEGIES:-ddp bagua:gradient_allreduce bagua:bytegrad bagua:qadam \
            bagua:decentralized bagua:low_precision_decentralized bagua:async bagua:local_sgd \
            bagua:diloco}; do
          label=${s/:/_}_$n${LIGHTNING_LABEL:-}
          env "${BAGUA_NET[@]}" "${FORCED[@]}" NCCL_DEBUG_FILE="$OUT/lightning/nccl_$label.%p.log" \
            CUDA_VISIBLE_DEVICES=$(first_gpus "$n") timeout 100 \
            python3 "$HERE/lightning_strategy_bench.py" --task both --devices "$n" --strategy "$s" \
            ${LIGHTNING_ARGS:-} \
            >"$OUT/lightning/$label.log" 2>&1
          echo "lightning $label rc=$? ($((SECONDS - t0)) s)"
          grep -h RESULT "$OUT/lightning/$label.log" | cut -c1-200
        done
      done
      ;;
    *) echo "unknown step $step" ;;
  esac
  echo "== $step: $((SECONDS - t0)) s"
done
