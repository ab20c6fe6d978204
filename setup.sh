#!/usr/bin/env bash
# One entry point for a fresh machine: installs what is missing (Debian
# packages), configures and builds, then runs what you ask for.
#
#   ./setup.sh              install dependencies and build (build/)
#   ./setup.sh demo [args]  ... then run the main job (scripts/demo.sh: the Bagua-Net
#                           table, then every algorithm training digits; --quick)
#   ./setup.sh test         ... then run the CPU test suites; last line "N passed, N failed"
#   ./setup.sh slow         ... then run the slow suite (messages above 2 GiB)
#   ./setup.sh asan|tsan    the test suites in an ASan+UBSan / TSan build (build-asan, build-tsan;
#                           TSan runs suite threads: the tests that run threads)
#   ./setup.sh fuzz [sec]   build the wire-format fuzzer with clang and run it (default 30 s)
#   ./setup.sh python       pip install . into .venv (with torch, Lightning, scikit-learn)
#   ./setup.sh python-test  ... then the Python tests; last line "N passed, N failed"
#   ./setup.sh python-fresh the user's path: a fresh venv, pip install . built with neither
#                           libgloo nor CUDA, python -m bagua.info, then the Python suites
#                           that run CPU collectives (on torch's Gloo); "N passed, N failed"
set -euo pipefail
cd "$(dirname "$0")"

# ccache: Meson uses it when present; the wheel builds of python-test and
# python-fresh share most objects (the second took 50 s instead of 3 min).
PACKAGES=(meson ninja-build pkg-config g++ liburing-dev libboost-dev libfmt-dev
          libgtest-dev libgmock-dev libgloo-dev libhiredis-dev redis-server python3 iproute2
          ccache)

missing_packages() {
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "${missing[@]:-}"
}

install_deps() {
  local missing
  missing=$(missing_packages "$@")
  [ -z "$missing" ] && return 0
  echo "setup: installing $missing" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # shellcheck disable=SC2086
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

# Sanitizer builds: -O1 with line tables only (-g1), the level the sanitizers'
# documentation suggests. Reports keep file:line, and Asio's sources compile
# 2.3x faster than at -O2 -g under ASan (21 s against 49 s for one file).
SANITIZER_OPTS=(-Doptimization=1 -Ddebug=false -Dcpp_args=-g1 -Dc_args=-g1)
# Unity builds there (each target's sources compiled as one file per 6): the
# test binaries parse GoogleTest, Asio and the runtime's headers once instead
# of once per file (a cold ASan build on 2 CPUs: 484 s, against 669 s in the
# last CI run). The three libraries whose file-local names repeat opt out
# (override_options).
SANITIZER_OPTS+=(-Dunity=on -Dunity_size=6)

# The development builds target the GPU machine's Hopper only (the wheel's
# default is every arch: meson_options.txt), and the sanitizer builds no CUDA
# (nothing of it runs there): nvcc takes about a minute per file and arch.
DEV_OPTS=(-Dgpu_archs=9.0)
SANITIZER_OPTS+=(-Dcuda=disabled)

# setup_dir DIR [meson options...]: set up once, reconfigure if options change.
setup_dir() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@"
  elif [ $# -gt 0 ]; then
    meson configure "$dir" "$@" >/dev/null
  fi
}

# configure DIR [meson options...]: setup_dir, then build everything.
configure() {
  setup_dir "$@"
  ninja -C "$1"
}

# run_tests DIR [meson test args...]: runs suites, prints "N passed, N failed".
run_tests() {
  local dir=$1
  shift
  rm -f "$dir"/*.xml
  local rc=0
  meson test -C "$dir" --print-errorlogs "$@" || rc=$?
  python3 scripts/test_summary.py "$dir" || rc=$?
  return $rc
}

# python_test_deps VENV: the versions of the GPU machine (PyTorch 2.11,
# Lightning 2.6) and the test tools; pip's cache makes reinstalls quick.
python_test_deps() {
  local deps=("torch==2.11.0" "lightning>=2.6,<2.7" scikit-learn pytest)
  # Once more after a failure: a dropped connection to PyPI is not a test
  # failure (one CI run's python-fresh stopped before pytest, its log not
  # kept; the same tree passed here).
  "$1/bin/pip" install -q "${deps[@]}" || {
    echo "setup: pip install of the test dependencies failed; retrying once" >&2
    sleep 10
    "$1/bin/pip" install -q "${deps[@]}"
  }
  # PyTorch Lightning 1.9, apart from the venv's 2.x (test_original_compat.py:
  # its Bagua strategy imports bagua's original names).
  [ -d "$1/pl19/pytorch_lightning" ] ||
    "$1/bin/pip" install -q --no-deps --target "$1/pl19" "pytorch_lightning==1.9.5" ||
    "$1/bin/pip" install -q --no-deps --target "$1/pl19" "pytorch_lightning==1.9.5"
}

# run_pytest VENV [pytest args...]: tests/python; last line "N passed, N failed".
run_pytest() {
  local venv rc=0 line passed failed
  venv=$(cd "$1" && pwd)
  shift
  # PYTHONFAULTHANDLER: a job that aborts (SIGABRT, SIGSEGV) prints every
  # thread's Python stack into the failure's stderr, e.g. a rare
  # "terminate called without an active exception" seen once in CI.
  (cd tests/python && PYTHONFAULTHANDLER=1 BAGUA_EXPECT_PL19=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider --durations=10 "$@") \
    | tee /tmp/bagua-pytest.log || rc=$?
  line=$(grep -E "[0-9]+ (passed|failed)" /tmp/bagua-pytest.log | tail -n 1 || true)
  passed=$(echo "$line" | grep -oE "[0-9]+ passed" | cut -d' ' -f1 || true)
  failed=$(echo "$line" | { grep -oE "[0-9]+ (failed|errors?)" || true; } |
    awk '{s += $1} END {print s + 0}')
  echo "${passed:-0} passed, ${failed:-0} failed"
  [ "$rc" -eq 0 ] && [ "${failed:-0}" -eq 0 ] && [ "${passed:-0}" -gt 0 ]
}

cmd=${1:-build}
[ $# -gt 0 ] && shift
case "$cmd" in
  build)
    install_deps
    configure build "${DEV_OPTS[@]}"
    ;;
  demo)
    install_deps python3-venv
    configure build "${DEV_OPTS[@]}"
    exec scripts/demo.sh "$@"
    ;;
  test)
    install_deps
    configure build "${DEV_OPTS[@]}"
    run_tests build --suite unit --suite fault --suite multiproc "$@"
    ;;
  slow)
    install_deps
    configure build "${DEV_OPTS[@]}"
    run_tests build --suite slow "$@"
    ;;
  asan)
    install_deps
    # Not configure: meson test builds what the chosen tests run (their
    # executables, the plugin, bagua-net-perf and -info), not the benchmark
    # helpers, the example or the slow suite's executable (19 s of a cold
    # 770 s build on 2 CPUs).
    setup_dir build-asan -Db_sanitize=address,undefined -Db_lundef=false "${SANITIZER_OPTS[@]}"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_tests build-asan --suite unit --suite fault --suite multiproc "$@"
    ;;
  tsan)
    install_deps
    # Suite 'threads' only (tests/meson.build): the tests whose code runs
    # threads, TSan's whole subject (the plugin's engine, the store's server,
    # the runtime's workers and Gloo). Left to ASan and the plain build: the
    # single-threaded ones, kernels_unit (34 s under TSan), runtime_unit,
    # posix, net_unit, net_stream_rule, net_nccl_tuner, tool_perf_stats and
    # net_layers (191 of 909 cases; 38 s of test time, kernels_unit 37 s of
    # it); and then not built here either (meson test builds what the chosen
    # tests need): a cold build of 160 s instead of 211 s on 2 CPUs, and the
    # whole of ./setup.sh tsan 538 s instead of about 600 s in CI. The suite
    # also runs one configuration of each threading shape, not every one (9
    # transfer/zero-copy variants, about 350 s of TSan test time, run in the
    # plain and ASan builds only: tests/meson.build).
    setup_dir build-tsan -Db_sanitize=thread -Db_lundef=false "${SANITIZER_OPTS[@]}"
    TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" \
      run_tests build-tsan --suite threads "$@"
    ;;
  fuzz)
    install_deps clang libclang-rt-14-dev
    if [ ! -f build-fuzz/build.ninja ]; then
      CXX=clang++ CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Dtests=disabled
    fi
    ninja -C build-fuzz tests/fuzz/wire_fuzz
    mkdir -p build-fuzz/corpus
    build-fuzz/tests/fuzz/wire_fuzz -max_total_time="${1:-30}" -print_final_stats=1 \
      build-fuzz/corpus tests/fuzz/seeds
    ;;
  python | python-test)
    install_deps python3-venv
    venv=${BAGUA_VENV:-.venv}
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    python_test_deps "$venv"
    # Hopper only, as the development builds (BAGUA_WHEEL_ARGS overrides).
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q . ${BAGUA_WHEEL_ARGS:--Csetup-args=-Dgpu_archs=9.0}
    echo "setup: installed into $venv (activate: . $venv/bin/activate)" >&2
    if [ "$cmd" = python-test ]; then
      run_pytest "$venv" "$@"
      exit $?
    fi
    ;;
  python-fresh)
    # No install_deps: what a user without our system packages gets. (On
    # this machine they may be installed; -D...=disabled stands for absent.)
    venv_dir=$(mktemp -d)
    venv=$venv_dir/venv
    # Removed however the phase ends: a failed install must not leave
    # gigabytes behind (torch with its CUDA libraries is about 5 GB).
    trap 'rm -rf "$venv_dir"' EXIT
    free_kb=$(df -Pk "$venv_dir" | awk 'NR == 2 {print $4}')
    if [ "$free_kb" -lt $((6 * 1024 * 1024)) ]; then
      echo "setup: warning: $((free_kb / 1024)) MiB free in $venv_dir; the fresh venv" \
        "(torch with its CUDA libraries) needs about 6 GiB" >&2
    fi
    python3 -m venv "$venv"
    python_test_deps "$venv"
    start=$SECONDS
    fresh_args=(-Csetup-args=-Dgloo=disabled -Csetup-args=-Dcuda=disabled)
    "$venv/bin/pip" install -q . "${fresh_args[@]}" || {
      echo "setup: pip install . failed; retrying once (the build fetches from PyPI)" >&2
      "$venv/bin/pip" install -q . "${fresh_args[@]}"
    }
    echo "setup: pip install . took $((SECONDS - start)) s" >&2
    (cd /tmp && "$venv/bin/python" -m bagua.info --no-nccl-check)
    # The suites that run CPU collectives under every algorithm (the rest do
    # not depend on where collectives run and run in python-test, which also
    # runs every primitive on torch's Gloo: test_install.py). Left to
    # python-test (-k): the real-torchrun run, the 1000-cycle leak test and the
    # 4-rank variants, about 60 s of these suites' 165 s; 2 and 3 ranks stay.
    [ $# -gt 0 ] || set -- test_install.py test_torch_api.py test_weight_algorithms.py \
      test_local_updates.py -k "not single_process_full_batch and not 1000_abort_resume \
        and not reference[4] and not four_processes"
    rc=0
    BAGUA_EXPECT_BUILD=cpu-torch-gloo run_pytest "$venv" "$@" || rc=$?
    exit $rc
    ;;
  *)
    echo "usage: $0 [build|demo|test|slow|asan|tsan|fuzz|python|python-test|python-fresh]" >&2
    exit 2
    ;;
esac
