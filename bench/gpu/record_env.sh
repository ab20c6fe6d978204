# shellcheck shell=bash
# record_env for bench/gpu/run_all.sh: writes OUT/env.txt (host, GPUs, driver,
# Python packages, the NCCL and plugin binaries, kernel network settings,
# nvidia-smi and its topology, the inherited NCCL/CUDA environment), copies it
# to raw/ and logs its summary lines. Sourced, not executed.
#
# Relies on the globals of run_all.sh: OUT, RAW, PYTHON, NCCL_PIP_LIB,
# NCCL_TESTS_BIN, PLUGIN_SO, PLUGIN_DIR, BUDGET_S, REPS, NT_ITERS, NT_WARMUP,
# and on log() from lib.sh.

record_env() {
  local e=$OUT/env.txt
  {
    echo "# env.txt written by bench/gpu/run_all.sh"
    echo "date: $(date -Is)"
    echo "uname: $(uname -srvm)"
    echo "nproc: $(getconf _NPROCESSORS_ONLN) (online CPUs; nproc would follow OMP_NUM_THREADS)"
    timeout 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total \
      --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
    echo "cuda (nvidia-smi): $(timeout 30 nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -n 1)"
    timeout 90 "$PYTHON" - <<'PY' 2>&1
import importlib.metadata as md, sys
print("python:", sys.version.split()[0])
for name in ["torch", "nvidia-nccl-cu13", "nvidia-nccl-cu12", "lightning", "pytorch-lightning", "matplotlib"]:
    try:
        key = "pip_nccl_version" if name.startswith("nvidia-nccl") else name
        print(f"{key}: {md.version(name)}" + ("" if key != "pip_nccl_version" else f" ({name})"))
    except md.PackageNotFoundError:
        pass
try:
    import torch
    print("torch cuda:", torch.version.cuda, "devices:", torch.cuda.device_count())
    print("torch nccl:", ".".join(map(str, torch.cuda.nccl.version())))
except Exception as ex:
    print("torch error:", repr(ex)[:200])
PY
    echo "pip_nccl_lib: ${NCCL_PIP_LIB:-not found}"
    echo "ld_library_path: $LD_LIBRARY_PATH"
    if [[ -n $NCCL_TESTS_BIN && -x $NCCL_TESTS_BIN/all_reduce_perf ]]; then
      echo "nccl-tests libnccl: $(ldd "$NCCL_TESTS_BIN/all_reduce_perf" 2>&1 | grep -m1 libnccl)"
    else
      echo "nccl-tests: no all_reduce_perf in '${NCCL_TESTS_BIN:-<unset>}'"
    fi
    if [[ -f ${PLUGIN_SO:-/nonexistent} ]]; then
      echo "plugin: $PLUGIN_SO ($(stat -c %s "$PLUGIN_SO") bytes, sha256 $(sha256sum "$PLUGIN_SO" | cut -c1-16))"
      echo "plugin needs: $(readelf -d "$PLUGIN_SO" 2>/dev/null | grep NEEDED | grep -o '\[.*\]' | tr '\n' ' ')"
      echo "plugin unresolved: $(ldd "$PLUGIN_SO" 2>&1 | grep -c 'not found')"
      echo "plugin max GLIBC: $(grep -ao 'GLIBC_[0-9.]*' "$PLUGIN_SO" | sort -uV | tail -n 1)"
      echo "machine glibc: $(ldd --version 2>&1 | head -n 1)"
      echo "plugin libnccl-net.so link: $(readlink "$PLUGIN_DIR/libnccl-net.so" || echo none)"
      echo "plugin names rate knob: $(grep -qa BAGUA_NET_RATE_LIMIT_MBPS "$PLUGIN_SO" && echo yes || echo no)"
    fi
    echo "lo mtu: $(cat /sys/class/net/lo/mtu 2>/dev/null)"
    echo "tcp cc: $(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null)"
    echo "wmem_max/rmem_max: $(cat /proc/sys/net/core/wmem_max 2>/dev/null)/$(cat /proc/sys/net/core/rmem_max 2>/dev/null)"
    echo "system libnccl: $(ldconfig -p 2>/dev/null | grep -m2 'libnccl.so' | awk '{print $NF}' | tr '\n' ' ')"
    echo "budget_s: $BUDGET_S reps: $REPS nt_iters: $NT_ITERS nt_warmup: $NT_WARMUP"
    echo "----- nvidia-smi -----"
    timeout 30 nvidia-smi 2>&1
    echo "----- nvidia-smi topo -m -----"
    timeout 30 nvidia-smi topo -m 2>&1
    echo "----- ldd plugin -----"
    [[ -f ${PLUGIN_SO:-/nonexistent} ]] && ldd "$PLUGIN_SO" 2>&1
    echo "----- inherited NCCL/CUDA environment (unset where run_all.sh sets it) -----"
    cat "$RAW/env/inherited_env.txt"
  } >"$e" 2>&1
  cp "$e" "$RAW/env.txt"
  grep -v '^#' "$e" | sed -n '1,/^-----/p' | grep -v '^-----' | tee -a "$RAW/run_all.log"
}
