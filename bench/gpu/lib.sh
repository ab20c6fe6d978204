# shellcheck shell=bash
# Shell helpers for bench/gpu/run_all.sh: logging, the time budget, and
# run_step, which runs one command under a timeout with its own environment
# and log file and records the outcome in steps.tsv. Sourced, not executed.
#
# Relies on: bash >= 4, GNU coreutils `timeout` (it signals the whole process
# group of the command, so helper processes die with it), and the globals
# RAW, START_S, BUDGET_S and RESERVE_S set by run_all.sh.

# Prints a timestamped line to the terminal and to raw/run_all.log.
log() {
  local line
  line="[$(date +%H:%M:%S) +$((SECONDS - START_S))s] $*"
  echo "$line"
  echo "$line" >>"$RAW/run_all.log"
}

# Seconds left for new steps (the reserve is kept for summarize and tar).
budget_left() {
  echo $((BUDGET_S - RESERVE_S - (SECONDS - START_S)))
}

# Appends one line to steps.tsv: name, status, rc, seconds, note.
record_step() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$RAW/steps.tsv"
}

# Kills processes that a step's Python scripts registered in BENCH_PID_DIR
# and that outlived the step (torchrun and Lightning start workers that a
# timeout on the launcher may orphan). Only pids our own scripts wrote, and
# only while the pid still runs one of our scripts (pids get reused).
reap_registered() {
  local dir=$1 f pid
  [[ -d $dir ]] || return 0
  for f in "$dir"/*; do
    [[ -e $f ]] || continue
    pid=$(basename "$f")
    if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
      grep -qa -e ddp_train.py -e lightning_ddp.py "/proc/$pid/cmdline" 2>/dev/null; then
      log "  reaping leftover worker pid $pid"
      kill -TERM "$pid" 2>/dev/null
      sleep 2
      kill -KILL "$pid" 2>/dev/null
    fi
  done
}

# run_step NAME EST_S CAP_S LOGFILE CMD [ARGS...]
# Runs CMD with the variables in the array STEP_ENV added to the environment,
# stdout and stderr to LOGFILE, under timeout min(CAP_S, budget left).
# Skips (status "skipped") when less than EST_S seconds of budget are left.
# Never exits the script; returns the command's status (99 when skipped).
run_step() {
  local name=$1 est=$2 cap=$3 logf=$4
  shift 4
  local left t rc=0 t0 dt status note=""
  left=$(budget_left)
  if ((left < est)); then
    log "SKIP $name: ${left}s of budget left, it needs about ${est}s"
    echo "# SKIPPED by run_all.sh: budget (${left}s left, about ${est}s needed)" >"$logf"
    record_step "$name" skipped - 0 "budget: ${left}s left"
    return 99
  fi
  t=$((cap < left ? cap : left))
  local piddir="$RAW/pids/$name"
  mkdir -p "$piddir"
  log "RUN  $name (timeout ${t}s) -> ${logf#"$RAW"/}"
  {
    echo "# run_all.sh step: $name"
    echo "# started: $(date -Is)"
    echo "# timeout_s: $t"
    echo "# env: ${STEP_ENV[*]}"
    echo "# cmd: $*"
  } >"$logf"
  t0=$SECONDS
  timeout -k "${KILL_AFTER_S:-20}" "$t" \
    env "${STEP_ENV[@]}" BENCH_PID_DIR="$piddir" "$@" >>"$logf" 2>&1 </dev/null || rc=$?
  dt=$((SECONDS - t0))
  reap_registered "$piddir"
  case $rc in
    0) status=ok ;;
    124 | 137) status=timeout; note="killed after ${t}s" ;;
    *) status=failed ;;
  esac
  echo "# finished: status=$status rc=$rc after ${dt}s" >>"$logf"
  log "     $name: $status (rc=$rc, ${dt}s)"
  if [[ $status != ok ]]; then
    # The first error and the last lines usually say why; keep them in the main log.
    {
      grep -v '^#' "$logf" | grep -m 2 -E '(Error|Exception|NCCL WARN|failure)' || true
      grep -v '^#' "$logf" | tail -n 3
    } | cut -c1-300 | sed 's/^/       | /' | tee -a "$RAW/run_all.log"
  fi
  record_step "$name" "$status" "$rc" "$dt" "$note"
  return $rc
}

# Truncates a log over LOG_MAX_BYTES to its head and tail, so that the
# tarball stays under the 16 MiB a returned file may have.
trim_big_log() {
  local f=$1 max=${LOG_MAX_BYTES:-4194304} size
  size=$(stat -c %s "$f")
  ((size > max)) || return 0
  {
    head -c $((max / 2))
    echo
    echo "# ---- run_all.sh cut $((size - max)) bytes here ----"
  } <"$f" >"$f.trim"
  tail -c $((max / 2)) "$f" >>"$f.trim"
  mv "$f.trim" "$f"
}
