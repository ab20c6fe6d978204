#!/usr/bin/env bash
# One-call GPU proof for Bagua-Net (issue 4) on a host with 2 GPUs: nccl-tests
# through Bagua and through NCCL's socket transport (defaults and a tuned
# grid, interleaved), a torchrun DDP job and a Lightning DDPStrategy job
# through Bagua, optional rate-limited runs; then summarize.py and one tarball.
#
# Usage: PLUGIN_DIR=... NCCL_TESTS_BIN=... bash bench/gpu/run_all.sh OUT_DIR
#
# Relies on: python3 with torch (+ pip NCCL), lightning and matplotlib; GNU
# timeout; nccl-tests built elsewhere (this project never builds it). Every
# step has its own timeout and log; a failed step never stops the others; the
# whole script keeps to BUDGET_S seconds. OUT_DIR ends with at most a handful
# of files: env.txt, run_all.log, gpu_results.md, gpu_*.png, raw_logs.tar.gz.
set -uo pipefail

# ---- knobs (override from the environment) -----------------------------------
PLUGIN_DIR=${PLUGIN_DIR:-}          # holds libnccl-net-bagua.so (+ libnccl-net.so link)
NCCL_TESTS_BIN=${NCCL_TESTS_BIN:-}  # nccl-tests build/ folder (*_perf binaries)
NCCL_TESTS_MPI_BIN=${NCCL_TESTS_MPI_BIN:-}  # optional MPI build: adds mpirun -np 2 runs
PYTHON=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-470}           # whole script, summary and tarball included
RESERVE_S=${RESERVE_S:-30}          # kept back for summarize.py and tar
REPS=${REPS:-3}                     # interleaved all_reduce repetitions
GRID_REPS=${GRID_REPS:-2}           # of those, how many run the whole socket grid
NT_ITERS=${NT_ITERS:-10}            # nccl-tests -n
NT_WARMUP=${NT_WARMUP:-5}           # nccl-tests -w
NT_MIN=${NT_MIN:-8}
NT_MAX=${NT_MAX:-1G}
NT_MAX_ALLTOALL=${NT_MAX_ALLTOALL:-1G}
NT_MAX_SENDRECV=${NT_MAX_SENDRECV:-1G}
NT_CAP_S=${NT_CAP_S:-120}           # timeout of one full nccl-tests sweep
NT_EST_S=${NT_EST_S:-15}            # budget a sweep needs before it is started
BAGUA_CAP_AFTER_TIMEOUT_S=${BAGUA_CAP_AFTER_TIMEOUT_S:-45}  # once Bagua hung, per sweep
BAGUA_JOB_CAP_AFTER_TIMEOUT_S=${BAGUA_JOB_CAP_AFTER_TIMEOUT_S:-90}  # and per DDP/Lightning job
COLLECTIVES=${COLLECTIVES:-"all_gather reduce_scatter sendrecv alltoall"}
SOCKET_GRID=${SOCKET_GRID:-"4:2:2 8:2:2 4:4:1 8:4:1"}  # channels:threads:socks
BAGUA_EXTRA_ENV=${BAGUA_EXTRA_ENV:-}  # e.g. "BAGUA_NET_NSTREAMS=4" (plugin knobs)
BAGUA_TUNED_ENV=${BAGUA_TUNED_ENV-NCCL_MIN_NCHANNELS=8}  # config bagua_tuned; "" drops it
DDP_STEPS=${DDP_STEPS:-80}
DDP_WARMUP=${DDP_WARMUP:-10}
DDP_BATCH=${DDP_BATCH:-256}
DDP_CAP_S=${DDP_CAP_S:-150}
LIGHTNING_STEPS=${LIGHTNING_STEPS:-300}
LIGHTNING_CAP_S=${LIGHTNING_CAP_S:-150}
RATE_LIMIT=${RATE_LIMIT:-auto}      # auto: run when the plugin binary names the knob
RATE_LIMITS_MBPS=${RATE_LIMITS_MBPS:-"10000 25000"}
NCCL_SUBSYS=${NCCL_SUBSYS:-INIT,NET,ENV}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${1:?usage: run_all.sh OUT_DIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RAW=$OUT/raw
mkdir -p "$RAW"/{nt,ddp,lightning,env,pids}
START_S=$SECONDS
: >"$RAW/steps.tsv"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/lib.sh"
# shellcheck source-path=SCRIPTDIR source=record_env.sh
source "$HERE/record_env.sh"

# ---- safety and a clean NCCL environment -------------------------------------
# NVLink multicast can take the host's shared GPUs down: off in every process.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} MPLBACKEND=Agg
env | grep -E '^(NCCL|TORCH|NVSHMEM|CUDA|LD_LIBRARY_PATH)' | sort >"$RAW/env/inherited_env.txt"
for v in NCCL_NET NCCL_NET_PLUGIN NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_SOCKET_IFNAME \
  NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS NCCL_SOCKET_NTHREADS NCCL_NSOCKS_PERTHREAD \
  NCCL_ALGO NCCL_PROTO NCCL_BUFFSIZE NCCL_DEBUG NCCL_DEBUG_SUBSYS NCCL_DEBUG_FILE \
  NCCL_IB_DISABLE NCCL_NET_PLUGIN_REF_COUNT; do
  unset "$v"
done

log "run_all.sh: OUT=$OUT budget=${BUDGET_S}s reps=$REPS iters=$NT_ITERS"
log "PLUGIN_DIR=${PLUGIN_DIR:-<unset>} NCCL_TESTS_BIN=${NCCL_TESTS_BIN:-<unset>}"

# ---- pin the pip NCCL (a system 2.28.3 also exists; ranks must agree) ---------
NCCL_PIP_DIR=$(timeout 60 "$PYTHON" -c \
  'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>"$RAW/env/pip_nccl.err")
NCCL_PIP_LIB=""
if [[ -n $NCCL_PIP_DIR && -e $NCCL_PIP_DIR/lib/libnccl.so.2 ]]; then
  NCCL_PIP_LIB=$NCCL_PIP_DIR/lib
elif [[ -n $NCCL_PIP_DIR ]]; then
  found=$(find "$NCCL_PIP_DIR" -name 'libnccl.so.2' 2>/dev/null | head -n 1)
  [[ -n $found ]] && NCCL_PIP_LIB=$(dirname "$found")
fi
if [[ -n $NCCL_PIP_LIB ]]; then
  export LD_LIBRARY_PATH="$NCCL_PIP_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "pip NCCL: $NCCL_PIP_LIB (first on LD_LIBRARY_PATH)"
else
  log "WARNING: pip NCCL not found ($(head -c 300 "$RAW/env/pip_nccl.err")); using the default search path"
fi

PLUGIN_SO=${PLUGIN_DIR:+$PLUGIN_DIR/libnccl-net-bagua.so}
BAGUA_OK=1
BAGUA_TIMEOUTS=0
STEP_ENV=()
NT_OK=1
if [[ -z $NCCL_TESTS_BIN || ! -x $NCCL_TESTS_BIN/all_reduce_perf ]]; then
  log "ERROR: no nccl-tests binaries in '${NCCL_TESTS_BIN:-<NCCL_TESTS_BIN unset>}': nccl-tests steps are skipped"
  NT_OK=0
fi
if [[ -z $PLUGIN_SO || ! -f $PLUGIN_SO ]]; then
  log "ERROR: no plugin at '${PLUGIN_SO:-<PLUGIN_DIR unset>}': Bagua steps will fail"
  BAGUA_OK=0
fi

# ---- configurations: label -> environment words ------------------------------
declare -A CFG
CFG[bagua]="NCCL_NET_PLUGIN=${PLUGIN_SO:-missing} NCCL_NET=Bagua $BAGUA_EXTRA_ENV"
CFG[socket_default]="NCCL_NET=Socket NCCL_NET_PLUGIN=none"
GRID_LABELS=()
for g in $SOCKET_GRID; do
  IFS=: read -r c t s <<<"$g"
  label="socket_c${c}_t${t}x${s}"
  GRID_LABELS+=("$label")
  CFG[$label]="NCCL_NET=Socket NCCL_NET_PLUGIN=none NCCL_MIN_NCHANNELS=$c NCCL_SOCKET_NTHREADS=$t NCCL_NSOCKS_PERTHREAD=$s"
done
AR_LABELS=(bagua socket_default "${GRID_LABELS[@]}")
if [[ -n $BAGUA_TUNED_ENV ]]; then
  CFG[bagua_tuned]="${CFG[bagua]} $BAGUA_TUNED_ENV"
  AR_LABELS+=(bagua_tuned)
fi
CFG[nvlink]="NCCL_NET_PLUGIN=none"
NET_ENV="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo"
for k in "${!CFG[@]}"; do
  if [[ $k == nvlink ]]; then
    printf '%s\t%s\n' "$k" "${CFG[$k]}"
  else
    printf '%s\t%s %s\n' "$k" "$NET_ENV" "${CFG[$k]}"
  fi
done | sort >"$RAW/configs.tsv"

# set_step_env LABEL LOGBASE [EXTRA...]: fills STEP_ENV for one run.
set_step_env() {
  local label=$1 base=$2
  shift 2
  local words
  read -ra words <<<"${CFG[$label]}"
  STEP_ENV=("${words[@]}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS="$NCCL_SUBSYS"
    NCCL_DEBUG_FILE="$base.nccl.%p.log" "$@")
  if [[ $label != nvlink ]]; then
    read -ra words <<<"$NET_ENV"
    STEP_ENV+=("${words[@]}")
  fi
}

# ---- nccl-tests ------------------------------------------------------------------
# nt_step COLL LABEL TAG MIN MAX [EXTRA_ENV...]
nt_step() {
  local coll=$1 label=$2 tag=$3 min=$4 max=$5
  shift 5
  local base="$RAW/nt/${coll}__${label}__${tag}" cap=$NT_CAP_S
  if [[ $NT_OK == 0 || ! -x $NCCL_TESTS_BIN/${coll}_perf ]]; then
    echo "# SKIPPED by run_all.sh: no ${coll}_perf in '$NCCL_TESTS_BIN'" >"$base.log"
    record_step "nt_${coll}_${label}_${tag}" skipped - 0 "no ${coll}_perf"
    return 99
  fi
  if [[ $label == bagua* && $BAGUA_OK == 0 && ! ($coll == all_reduce && $label == bagua && $tag == r1) ]]; then
    echo "# SKIPPED by run_all.sh: the Bagua smoke run failed" >"$base.log"
    record_step "nt_${coll}_${label}_${tag}" skipped - 0 "Bagua smoke failed"
    return 99
  fi
  if [[ $label == bagua* && $BAGUA_TIMEOUTS -gt 0 ]] && ((BAGUA_CAP_AFTER_TIMEOUT_S < cap)); then
    cap=$BAGUA_CAP_AFTER_TIMEOUT_S
  fi
  set_step_env "$label" "$base" "$@"
  local rc=0
  run_step "nt_${coll}_${label}_${tag}" "$NT_EST_S" "$cap" "$base.log" \
    "$NCCL_TESTS_BIN/${coll}_perf" -g 2 -b "$min" -e "$max" -f 2 -c 1 \
    -n "$NT_ITERS" -w "$NT_WARMUP" || rc=$?
  [[ $label == bagua* ]] && note_bagua_timeout "$rc"
  return $rc
}

nt_max_for() {
  case $1 in
    alltoall) echo "$NT_MAX_ALLTOALL" ;;
    sendrecv) echo "$NT_MAX_SENDRECV" ;;
    *) echo "$NT_MAX" ;;
  esac
}

# Quick check that NCCL really went through Bagua (summarize.py does the full one).
check_bagua_log() {
  local base=$1 nets via version
  nets=$(cat "$base".nccl.*.log 2>/dev/null | grep -c 'Using network Bagua')
  via=$(cat "$base".nccl.*.log 2>/dev/null | grep -c 'via NET/Bagua')
  version=$(cat "$base".nccl.*.log 2>/dev/null | grep -om1 'NCCL version [^ ]*')
  log "  check ${base#"$RAW"/}: 'Using network Bagua' x$nets, 'via NET/Bagua' x$via, ${version:-no NCCL version line}"
  ((nets > 0 && via > 0))
}

# Later repetitions (after GRID_REPS) run only Bagua, the defaults and the best.
allreduce_rep() {
  local rep=$1 i label labels=("${AR_LABELS[@]}")
  if ((rep > GRID_REPS)); then
    labels=(bagua socket_default)
    [[ $BEST_SOCKET != socket_default ]] && labels+=("$BEST_SOCKET")
    [[ -n $BAGUA_TUNED_ENV ]] && labels+=(bagua_tuned)
  fi
  local n=${#labels[@]}
  log "== all_reduce repetition $rep: ${labels[*]} (rotated by $((rep - 1)))"
  for ((i = 0; i < n; i++)); do
    label=${labels[$(((i + rep - 1) % n))]}
    nt_step all_reduce "$label" "r$rep" "$NT_MIN" "$NT_MAX"
  done
}

# pick_best FILE: sets BEST_SOCKET from the all_reduce sweeps so far, records it.
pick_best() {
  local best
  best=$(timeout 30 "$PYTHON" "$HERE/summarize.py" --pick-best-socket "$RAW" 2>/dev/null)
  if [[ -z $best ]]; then
    best=${GRID_LABELS[1]:-${GRID_LABELS[0]:-socket_default}}
    log "no parsed socket sweep to choose from: best socket defaults to $best"
  fi
  echo "$best" >"$1"
  BEST_SOCKET=$best
  log "best socket configuration so far: $BEST_SOCKET (${CFG[$BEST_SOCKET]})"
}

# ---- torchrun DDP and Lightning ---------------------------------------------------
# bagua_job_cap CAP: the timeout for a Bagua job, shorter once Bagua has hung.
bagua_job_cap() {
  if ((BAGUA_TIMEOUTS > 0 && BAGUA_JOB_CAP_AFTER_TIMEOUT_S < $1)); then
    echo "$BAGUA_JOB_CAP_AFTER_TIMEOUT_S"
  else
    echo "$1"
  fi
}

note_bagua_timeout() {
  if [[ $1 == 124 || $1 == 137 ]]; then
    BAGUA_TIMEOUTS=$((BAGUA_TIMEOUTS + 1))
    log "  a Bagua job timed out: later Bagua steps get shorter timeouts"
  fi
}

ddp_step() {
  local label=$1 base="$RAW/ddp/$1" cap=$DDP_CAP_S rc=0
  [[ $label == bagua* ]] && cap=$(bagua_job_cap "$cap")
  set_step_env "$label" "$base"
  run_step "ddp_$label" 30 "$cap" "$base.log" \
    "$PYTHON" -m torch.distributed.run --standalone --nproc_per_node 2 \
    "$HERE/ddp_train.py" --steps "$DDP_STEPS" --warmup "$DDP_WARMUP" \
    --batch "$DDP_BATCH" --label "$label" --out-json "$base" || rc=$?
  [[ $label == bagua* ]] && note_bagua_timeout "$rc"
  return $rc
}

# Lightning through Bagua, found the drop-in way (libnccl-net.so on the library
# path, NCCL_NET_PLUGIN unset) when the link exists, else by absolute path.
lightning_step() {
  local mode=$1 base words
  base="$RAW/lightning/bagua_$mode"
  set_step_env bagua "$base"
  if [[ $mode == symlink ]]; then
    read -ra words <<<"NCCL_NET=Bagua $BAGUA_EXTRA_ENV"
    STEP_ENV=("${words[@]}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS="$NCCL_SUBSYS"
      NCCL_DEBUG_FILE="$base.nccl.%p.log" LD_LIBRARY_PATH="$PLUGIN_DIR:$LD_LIBRARY_PATH")
    read -ra words <<<"$NET_ENV"
    STEP_ENV+=("${words[@]}")
  fi
  local rc=0
  run_step "lightning_bagua_$mode" 40 "$(bagua_job_cap "$LIGHTNING_CAP_S")" "$base.log" \
    "$PYTHON" "$HERE/lightning_ddp.py" --steps "$LIGHTNING_STEPS" --expect-net Bagua \
    --root-dir "$RAW/lightning/root" --label "bagua_$mode" || rc=$?
  note_bagua_timeout "$rc"
  return $rc
}

# ---- packing up ---------------------------------------------------------------------
FINISHED=0
finish() {
  ((FINISHED)) && return
  FINISHED=1
  log "== summarize"
  timeout 90 "$PYTHON" "$HERE/summarize.py" "$OUT" >"$RAW/summarize.log" 2>&1 ||
    log "summarize.py failed (rc=$?): $(tail -n 3 "$RAW/summarize.log" | tr '\n' ' ')"
  cat "$RAW/summarize.log" >>"$RAW/run_all.log"
  # Anything else the caller left at the top (e.g. a build log) goes in the tarball.
  local f keep=" env.txt run_all.log gpu_results.md gpu_allreduce.png gpu_collectives.png raw raw_logs.tar.gz "
  for f in "$OUT"/* "$OUT"/.[!.]*; do
    [[ -e $f ]] || continue
    [[ $keep == *" $(basename "$f") "* ]] || mv "$f" "$RAW/"
  done
  rm -rf "$RAW/pids" "$RAW/lightning/root"
  find "$RAW" -type f -name '*.log' -print0 | while IFS= read -r -d '' f; do trim_big_log "$f"; done
  log "== done in $((SECONDS - START_S))s; packing raw logs"
  cp "$RAW/run_all.log" "$OUT/run_all.log"
  if tar -C "$OUT" -czf "$OUT/raw_logs.tar.gz" raw; then
    rm -rf "$RAW"
  else
    echo "tar failed: raw/ left in place" >>"$OUT/run_all.log"
  fi
  ls -la "$OUT"
}
trap 'log "caught a signal: packing up"; finish; exit 1' INT TERM

# ---- the plan: most important first, so the budget trims the least useful -----
log "== environment"
record_env

log "== Bagua smoke run (all_reduce $NT_MIN..8M)"
if [[ $BAGUA_OK == 1 && $NT_OK == 1 ]]; then
  set_step_env bagua "$RAW/nt/all_reduce__bagua__smoke"
  rc=0
  run_step nt_all_reduce_bagua_smoke 10 45 "$RAW/nt/all_reduce__bagua__smoke.log" \
    "$NCCL_TESTS_BIN/all_reduce_perf" -g 2 -b "$NT_MIN" -e 8M -f 2 -c 1 -n 5 -w 2 || rc=$?
  note_bagua_timeout "$rc"
  if ! check_bagua_log "$RAW/nt/all_reduce__bagua__smoke" ||
    ! grep -q 'Collective test concluded' "$RAW/nt/all_reduce__bagua__smoke.log"; then
    BAGUA_OK=0
    log "WARNING: Bagua smoke run failed: later Bagua sweeps are skipped except all_reduce r1"
  fi
fi

allreduce_rep 1
pick_best "$RAW/best_socket.txt" # used by DDP and the other collectives

log "== DDP (torchrun, 2 processes)"
DDP_LABELS=(bagua nvlink socket_default)
[[ $BEST_SOCKET != socket_default ]] && DDP_LABELS+=("$BEST_SOCKET")
for label in "${DDP_LABELS[@]}"; do
  ddp_step "$label"
done
check_bagua_log "$RAW/ddp/bagua"

log "== Lightning (stock DDPStrategy) through Bagua"
if [[ -n $PLUGIN_DIR && -e $PLUGIN_DIR/libnccl-net.so ]]; then
  rc=0
  lightning_step symlink || rc=$?
  # A failed drop-in load is worth one try by path; a hang or a skip is not.
  if [[ $rc != 0 && $rc != 124 && $rc != 137 && $rc != 99 ]]; then
    log "the drop-in (libnccl-net.so) run failed: trying the plugin by path"
    lightning_step path
  fi
else
  log "no $PLUGIN_DIR/libnccl-net.so link: loading the plugin by path"
  lightning_step path
fi

log "== other collectives (Bagua, socket default, $BEST_SOCKET)"
OTHER_LABELS=(bagua socket_default)
[[ $BEST_SOCKET != socket_default ]] && OTHER_LABELS+=("$BEST_SOCKET")
for coll in $COLLECTIVES; do
  for label in "${OTHER_LABELS[@]}"; do
    nt_step "$coll" "$label" r1 "$NT_MIN" "$(nt_max_for "$coll")"
  done
done

if ((REPS >= 2)); then
  allreduce_rep 2
  pick_best "$RAW/best_socket_rep3.txt"
fi

if [[ $RATE_LIMIT == auto ]]; then
  if [[ -f ${PLUGIN_SO:-/nonexistent} ]] && grep -qa BAGUA_NET_RATE_LIMIT_MBPS "$PLUGIN_SO"; then
    RATE_LIMIT=1
  else
    RATE_LIMIT=0
  fi
fi
if [[ $RATE_LIMIT == 1 ]]; then
  log "== rate-limited Bagua: $RATE_LIMITS_MBPS Mbit/s"
  for mbps in $RATE_LIMITS_MBPS; do
    nt_step all_reduce bagua "rl$mbps" 1M 256M "BAGUA_NET_RATE_LIMIT_MBPS=$mbps"
  done
else
  log "== rate-limited runs skipped (RATE_LIMIT=$RATE_LIMIT)"
fi

if [[ -n $NCCL_TESTS_MPI_BIN ]]; then
  log "== two processes (mpirun -np 2, MPI build of nccl-tests)"
  for label in bagua socket_default; do
    base="$RAW/nt/all_reduce__${label}__mpi_r1"
    set_step_env "$label" "$base"
    run_step "nt_all_reduce_${label}_mpi_r1" 20 "$NT_CAP_S" "$base.log" \
      mpirun --allow-run-as-root --oversubscribe -np 2 \
      "$NCCL_TESTS_MPI_BIN/all_reduce_perf" -g 1 -b "$NT_MIN" -e "$NT_MAX" -f 2 -c 1 \
      -n "$NT_ITERS" -w "$NT_WARMUP"
  done
fi

for ((rep = 3; rep <= REPS; rep++)); do
  allreduce_rep "$rep"
done

finish
exit 0
