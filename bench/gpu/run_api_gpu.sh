#!/usr/bin/env bash
# The original API and the algorithms on ONE GPU, every rank its own NCCL
# host (NCCL_HOSTID, bench/gpu/hostid_exec.sh) under MPS, so every byte
# crosses Bagua-Net (shared/BENCHMARKING.md):
#   comm     the communication primitives on CUDA tensors (tests/python/comm_job.py
#            --device cuda, 2 ranks) against torch's Gloo reference, and two
#            mismatches with BAGUA_COMM_CHECK=1
#   autotune_ef  tests/python/autotune_job.py --case ef --device cuda, 2 ranks: ByteGrad
#            with error feedback under autotune; at each bucket rebuild its residuals (on
#            the GPU) must arrive in the new buckets bit for bit
#   mnist    python/examples/mnist_digits.py under `python -m bagua.distributed.launch`,
#            2 ranks: torch DDP and every algorithm (QAdam at lr 0.003)
#   lpd      low-precision decentralized against its pure-torch reference
#            (tests/python/algo_job.py --device cuda), 2 and 4 ranks
#   bench    bench/gpu/algorithms_bench.py, 4 ranks, BAGUA_NET_RATE_LIMIT_MBPS=10000
#   nolimit  the same with no rate limit
#   weights  algorithms_bench.py with issue 21's configurations, 10 Gbit/s and no limit
#   soak     bench/gpu/async_soak.py, 4 ranks, SOAK_S seconds (default 540) of async
#            training with abort/resume every 3 s, NCCL's default protocols
#   diloco   local SGD and DiLoCo: CUDA correctness (2 ranks), then the benchmark at
#            1 Gbit/s, 10 Gbit/s and no limit (DILOCO_LIMITS, DILOCO_CONFIGS,
#            DILOCO_EXTRA: more algorithms_bench.py arguments; DILOCO_CHECK=0 skips the
#            correctness check)
#   autotune bench/gpu/autotune_bench.py, 4 ranks, BAGUA_NET_RATE_LIMIT_MBPS=10000: fixed
#            bucket sizes swept around autotune from 0.1 MiB (issue 25's target: >= 95%
#            of the best fixed steps/s within 200 steps); about 4-6 minutes
#   sync_autotune  bench/gpu/sync_autotune_bench.py, 4 ranks, DiLoCo from sync_every 8 with
#            autotune=True at 1 Gbit/s (SYNC_LIMITS: 1000 10000), then fixed H around the
#            winner and an engine that never syncs, in the same job (issue 30, part 3)
#   elastic  tests/python/elastic_job.py --device cuda: 2 ranks under bagua.distributed.run
#            --max-restarts=2, rank 1 killed before step 25, restart from the checkpoint of
#            step 20 (NCCL communicators formed again through Bagua-Net); against a run that
#            reloads that checkpoint in place: weights bit-equal?, restart time, leak counts
#   demo     python -m bagua.demo --quick (the main job's training part): every algorithm
#            on digits, 4 ranks on the GPU through Bagua-Net; the table, the PNG, and how
#            many NCCL logs name Bagua-Net as the network
#
# Usage: WHEEL=<bagua wheel> bash bench/gpu/run_api_gpu.sh OUT [STEP ...]
# The wheel is installed with pip --no-deps into the machine's Python (torch's),
# as it is, with no setup argument or library path; NCCL is the pip NCCL torch
# loads; the plugin is the one inside the wheel; `python -m bagua.info` (with
# its one-rank NCCL check of the plugin) goes into env.txt.
set -uo pipefail
OUT=${1:?usage: WHEEL=... run_api_gpu.sh OUT [comm autotune_ef mnist lpd bench nolimit weights soak diloco autotune sync_autotune elastic demo]}
shift
STEPS=${*:-comm mnist bench nolimit}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo

# No LD_LIBRARY_PATH: the wheel links the CUDA runtime statically and binds
# the NCCL torch loaded (docs/install.md).

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cpus: $(nproc) (allowed: $(grep Cpus_allowed_list /proc/self/status | cut -f2))"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

python3 -m pip install -q --no-deps --force-reinstall "${WHEEL:?WHEEL=<path of the bagua wheel>}" \
  >"$OUT/install.log" 2>&1 || { tail -n 20 "$OUT/install.log"; exit 1; }
PLUGIN=$(python3 -c 'import bagua; print(bagua.net_plugin_path())')
(cd /tmp && python3 -m bagua.info) 2>&1 | tee -a "$OUT/env.txt"

export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && trap 'echo quit | nvidia-cuda-mps-control' EXIT

NET=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
     NCCL_NET_PLUGIN="$PLUGIN" NCCL_NET=Bagua NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET)

# ranks LABEL NPROC TIMEOUT [ENV=VALUE ...] -- ARGS...: torchrun, ranks as hosts.
ranks() {
  local label=$1 nproc=$2 cap=$3
  shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  mkdir -p "$OUT/nccl_$label"
  local t0=$SECONDS
  env "${NET[@]}" NCCL_DEBUG_FILE="$OUT/nccl_$label/%h.%p.log" "${envs[@]}" timeout "$cap" \
    python3 -m torch.distributed.run --standalone --nproc_per_node "$nproc" --no-python \
    "$HERE/hostid_exec.sh" python3 "$@" >"$OUT/$label.log" 2>&1
  local rc=$?
  local net
  net=$(grep -l "Using network Bagua" "$OUT/nccl_$label"/*.log 2>/dev/null | wc -l)
  echo "$label rc=$rc $((SECONDS - t0))s (NCCL logs naming Bagua: $net)"
  [ $rc -eq 0 ] || tail -n 15 "$OUT/$label.log"
}

for step in $STEPS; do
  case $step in
    comm)
      ranks comm_cuda 2 180 -- "$ROOT/tests/python/comm_job.py" --device cuda --out "$OUT/comm"
      python3 -c "
import json
for r in range(2):
    d = json.load(open('$OUT/comm.rank%d.json' % r))
    print('comm rank', r, 'checks', d['count'], 'failures', len(d['failures']), d['failures'][:5])"
      for kind in size dtype; do
        ranks "mismatch_$kind" 2 90 BAGUA_COMM_CHECK=1 -- "$ROOT/tests/python/comm_job.py" \
          --device cuda --mismatch "$kind" --out "$OUT/mismatch_$kind"
        python3 -c "
import json
for r in range(2):
    d = json.load(open('$OUT/mismatch_$kind.rank%d.json' % r))
    print('mismatch $kind rank', r, '%.1fs' % d['seconds'], d['error'][:160])"
      done
      ;;
    autotune_ef)
      ranks autotune_ef 2 240 -- "$ROOT/tests/python/autotune_job.py" --case ef --device cuda \
        --out "$OUT/autotune_ef"
      python3 -c "
import json
for r in range(2):
    d = json.load(open('$OUT/autotune_ef.rank%d.json' % r))
    flat = d['ef_carried_bytes_flat']
    ok = bool(flat) and flat == [[d['ef_param_bytes'], True]] * len(flat)
    print('autotune_ef rank', r, d['device'], 'rebuilds', len(flat),
          'every residual carried bit for bit:', ok, 'hierarchical:', d['ef_carried_bytes_hier'][:2])"
      ;;
    mnist)
      ALGOS="ddp gradient_allreduce bytegrad decentralized low_precision_decentralized qadam async"
      for algo in $ALGOS; do
        t0=$SECONDS
        extra=()
        [ "$algo" = qadam ] && extra=(--lr 0.003 --epochs 6)
        [ "$algo" = async ] && extra=(--async-sync-interval 20)
        env "${NET[@]}" NCCL_DEBUG_FILE="$OUT/nccl_mnist_$algo.%h.%p.log" timeout 150 \
          python3 -m bagua.distributed.launch --nproc_per_node 2 --master_port 29611 --no_python \
          "$HERE/hostid_exec.sh" python3 "$ROOT/python/examples/mnist_digits.py" \
          --algorithm "$algo" --epochs 4 --set-deterministic --out "$OUT/mnist_$algo" \
          "${extra[@]}" >"$OUT/mnist_$algo.log" 2>&1
        echo "mnist $algo rc=$? $((SECONDS - t0))s"
      done
      python3 -c "
import json, os
for algo in '$ALGOS'.split():
    p = '$OUT/mnist_%s.rank%d.json'
    if not os.path.exists(p % (algo, 0)):
        print(algo, 'no result'); continue
    r = [json.load(open(p % (algo, k))) for k in range(2)]
    print('mnist %-20s accuracy %.4f  ranks agree: %s' % (algo, r[0]['accuracy'], r[0]['weights'] == r[1]['weights']))"
      ;;
    bench)
      ranks bench_10g 4 420 BAGUA_NET_RATE_LIMIT_MBPS=10000 -- \
        "$HERE/algorithms_bench.py" --out "$OUT/bench_10g.json"
      grep "steps/s" "$OUT/bench_10g.log" | tail -n 20
      ;;
    nolimit)
      ranks bench_nolimit 4 300 -- "$HERE/algorithms_bench.py" \
        --out "$OUT/bench_nolimit.json"
      grep "steps/s" "$OUT/bench_nolimit.log" | tail -n 20
      ;;
    lpd)
      for n in 2 4; do
        ranks "lpd_$n" "$n" 120 -- "$ROOT/tests/python/algo_job.py" --case lpd --device cuda \
          --out "$OUT/lpd_$n"
        python3 -c "
import json
d = [json.load(open('$OUT/lpd_$n.rank%d.json' % r))['max_weight_diff'] for r in range($n)]
print('lpd $n ranks: largest |weights - pure-torch reference| per rank', d)"
      done
      ;;
    weights)
      W=ga_sgd,dec_shift_one_sgd,lpd_sgd,async_sgd,nocomm_sgd
      ranks weights_10g 4 300 BAGUA_NET_RATE_LIMIT_MBPS=10000 -- "$HERE/algorithms_bench.py" \
        --configs $W --out "$OUT/weights_10g.json"
      grep "steps/s" "$OUT/weights_10g.log" | tail -n 10
      ranks weights_nolimit 4 240 -- "$HERE/algorithms_bench.py" --configs $W \
        --out "$OUT/weights_nolimit.json"
      grep "steps/s" "$OUT/weights_nolimit.log" | tail -n 10
      ;;
    soak)
      ranks soak 4 $((${SOAK_S:-540} + 60)) -- "$HERE/async_soak.py" --seconds "${SOAK_S:-540}" \
        --out "$OUT/soak.json"
      tail -n 3 "$OUT/soak.log"
      cat "$OUT/soak.json"; echo
      ;;
    diloco)
      # Correctness on CUDA first: local SGD and DiLoCo against their torch references,
      # start points identical on every rank, checkpoint restart exact (2 ranks, NCCL).
      [ "${DILOCO_CHECK:-1}" = 1 ] && ranks diloco_check 2 180 -- \
        "$ROOT/tests/python/local_updates_job.py" --device cuda \
        --cases local_sgd_vs_allreduce,diloco_vs_averaging,diloco_vs_reference,checkpoint \
        --out "$OUT/diloco_check" && python3 -c "
import json
for r in range(2):
    d = json.load(open('$OUT/diloco_check.rank%d.json' % r))
    print('diloco_check rank', r, {k: d[k] for k in ('local_sgd_max_diff', 'averaging_max_diff',
          'reference_max_diff', 'reference_max_x0_diff', 'start_points_identical',
          'x0_changed_at', 'checkpoint_max_diff')})"
      R=${DILOCO_CONFIGS:-nocomm_sgd,ga_sgd,bytegrad_sgd,diloco_sgd,local_sgd_sgd,torch_plsgd_sgd}
      for limit in ${DILOCO_LIMITS:-1000 10000 0}; do
        label=diloco_${limit}
        envs=()
        [ "$limit" != 0 ] && envs=(BAGUA_NET_RATE_LIMIT_MBPS=$limit)
        slow=3
        [ "$limit" = 10000 ] && slow=10
        [ "$limit" = 0 ] && slow=20
        ranks "$label" 4 300 "${envs[@]}" -- "$HERE/algorithms_bench.py" --configs $R \
          --rounds "${DILOCO_ROUNDS:-2}" --warmup 2 --slow-steps $slow --long-steps 200 \
          ${DILOCO_EXTRA:-} --out "$OUT/$label.json"
        grep "steps/s" "$OUT/$label.log" | tail -n 12
      done
      summaries=()
      for limit in ${DILOCO_LIMITS:-1000 10000 0}; do summaries+=("$OUT/diloco_$limit.json"); done
      python3 "$HERE/diloco_summary.py" "${summaries[@]}" | tee "$OUT/diloco_summary.md"
      ;;
    autotune)
      ranks autotune_10g 4 570 BAGUA_NET_RATE_LIMIT_MBPS=10000 -- "$HERE/autotune_bench.py" \
        --out "$OUT/autotune_10g.json"
      grep -E "^(fixed|autotune|autotuned) " "$OUT/autotune_10g.log"
      grep "bagua autotune: " "$OUT/autotune_10g.log" | tail -n 25
      ;;
    sync_autotune)
      for limit in ${SYNC_LIMITS:-1000 10000}; do
        ranks "sync_autotune_$limit" 4 400 BAGUA_NET_RATE_LIMIT_MBPS=$limit -- \
          "$HERE/sync_autotune_bench.py" ${SYNC_EXTRA:-} --out "$OUT/sync_autotune_$limit.json"
        grep -E "bagua autotune: |steps/s|^search|^verdict" "$OUT/sync_autotune_$limit.log"
      done
      ;;
    elastic)
      for run in killed reference; do
        extra=(--kill-at 25)
        [ $run = reference ] && extra=(--reload-at 20)
        mkdir -p "$OUT/nccl_elastic_$run"
        t0=$SECONDS
        env "${NET[@]}" NCCL_DEBUG_FILE="$OUT/nccl_elastic_$run/%h.%p.log" timeout 240 \
          python3 -m bagua.distributed.run --nnodes=1:2 --nproc-per-node=2 --max-restarts=2 \
          --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:29677 --rdzv-id="elastic_$run" \
          --rdzv-conf last_call_timeout=1 --no-python "$HERE/hostid_exec.sh" python3 \
          "$ROOT/tests/python/elastic_job.py" --device cuda --ckpt "$OUT/elastic_$run.ckpt" \
          --out "$OUT/elastic_$run" "${extra[@]}" >"$OUT/elastic_$run.log" 2>&1
        echo "elastic $run rc=$? $((SECONDS - t0))s (NCCL logs naming Bagua:" \
          "$(grep -l "Using network Bagua" "$OUT/nccl_elastic_$run"/*.log 2>/dev/null | wc -l))"
      done
      python3 -c "
import json
k = float(open('$OUT/elastic_killed.killed_at').read())
a = [json.load(open('$OUT/elastic_killed.rank%d.json' % r)) for r in range(2)]
b = [json.load(open('$OUT/elastic_reference.rank%d.json' % r)) for r in range(2)]
print('elastic: attempts', [r['attempt'] for r in a], 'resumed from', [r['resumed_from'] for r in a],
      'restart %.1f s' % (a[0]['first_step_at'] - k),
      'bit-equal to the reference:', all(x['weights'] == y['weights'] for x, y in zip(a, b)),
      'threads/fds after close, then 3 re-forms:', [[r['after_close']] + r['reformed'] for r in a])"
      ;;
    demo)
      t0=$SECONDS
      (cd "$OUT" && timeout 300 python3 -m bagua.demo --quick --no-progress --out "$OUT/demo") \
        >"$OUT/demo.log" 2>&1
      echo "demo rc=$? $((SECONDS - t0))s"
      grep -E "^bagua.demo:|^algorithm|^-|^[a-z_]+ +[0-9.]+ s|^plot:|^NCCL logs" "$OUT/demo.log"
      ;;
    *) echo "unknown step $step" ;;
  esac
done
