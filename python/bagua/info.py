"""`python -m bagua.info`: what this install of bagua has, in the style of
`python -m torch.utils.collect_env`. Prints every part (the build's CUDA
kernels and their GPU archs, the NCCL the runtime binds to and torch's, the
CPU collectives, the Bagua-Net plugin and whether NCCL loads it, Lightning)
and exits 0; a part that is missing says so and what gives it.

`--no-nccl-check` skips the one-rank NCCL run that proves the plugin loads
(it needs a GPU and takes a few seconds).
"""
import ctypes
import importlib.util
import os
import subprocess
import sys
import textwrap

_ABI_SYMBOLS = (
    "ncclNetPlugin_v8", "ncclNetPlugin_v9", "ncclNetPlugin_v10", "ncclNetPlugin_v11", "ncclNetPlugin_v12",
)

# One rank, one all_reduce through the plugin: NCCL must say it loaded it.
_NCCL_PROBE = textwrap.dedent("""
    import os, torch, torch.distributed as dist
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    t = torch.ones(4, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.destroy_process_group()
""")


def _line(name, value):
    print(f"{name + ':':<30} {value}")


def _build():
    try:
        from . import _C
    except (ImportError, OSError) as error:  # the case this report is most needed in
        _line("bagua", f"NOT LOADABLE: bagua._C: {error} "
                       f"({os.path.dirname(os.path.abspath(__file__))}; reinstall bagua: pip "
                       "install . in its source tree)")
        return None
    build = _C.build_info()
    _line("bagua", f"{build['version']} ({os.path.dirname(os.path.abspath(__file__))})")
    if build["cuda"]:
        _line("CUDA kernels", f"yes, CUDA runtime {build['cuda_runtime']}, GPU archs "
                              f"{build['gpu_archs']}")
    else:
        _line("CUDA kernels", "no (built where no nvcc was found: CPU training only; "
                              "reinstall on a machine with the CUDA toolkit for GPUs)")
    return build


def _torch():
    try:
        import torch
    except ImportError:
        _line("torch", "not installed (pip install torch)")
        return None
    cuda = torch.version.cuda or "none (CPU build)"
    _line("torch", f"{torch.__version__}, CUDA {cuda}")
    if torch.cuda.is_available():
        names = sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
        _line("GPUs", f"{torch.cuda.device_count()} ({', '.join(names)})")
    else:
        _line("GPUs", "none visible")
    return torch


def _nccl(build):
    from . import _nccl

    theirs = _nccl.torch_nccl_version()
    _line("torch's NCCL", ".".join(map(str, theirs)) if theirs else "none")
    if not build["cuda"]:
        _line("bagua's NCCL", "not used (no CUDA path in this build)")
        return
    try:
        info = _nccl.check()
        _line("bagua's NCCL", f"{'.'.join(map(str, _nccl._version_tuple(info['version'])))} "
                              f"({info['path']}, {info['source']})")
    except RuntimeError as error:
        _line("bagua's NCCL", f"NOT USABLE: {error}")


def _cpu():
    from .torch_api.process_group import cpu_collectives

    try:
        where = cpu_collectives()
    except (ValueError, RuntimeError) as error:
        where = f"NOT USABLE: {error}"
    text = {"libgloo": "libgloo (the runtime's Gloo communicator)",
            "torch": "torch's Gloo (this build has no libgloo; same results)"}.get(where, where)
    _line("CPU collectives", text)


def _plugin(build, run_nccl, torch):
    from .env import net_plugin_path

    path = net_plugin_path()
    if path is None:
        _line("Bagua-Net plugin", "missing from this install (reinstall bagua)")
        return
    _line("Bagua-Net plugin", path)
    _line("plugin engine", build["plugin_engine"])
    try:
        lib = ctypes.CDLL(path)
        found = [s for s in _ABI_SYMBOLS if hasattr(lib, s)]
        _line("plugin net ABIs", ", ".join(s.split("_")[-1] for s in found))
    except OSError as error:
        _line("plugin net ABIs", f"NOT LOADABLE: {error}")
        return
    if not run_nccl or torch is None or not torch.cuda.is_available():
        _line("NCCL loads the plugin", "not checked (needs a GPU; python -m bagua.info on one)")
        return
    env = dict(os.environ, NCCL_NET_PLUGIN=path, NCCL_NET="Bagua", NCCL_DEBUG="INFO",
               NCCL_DEBUG_SUBSYS="INIT,NET", NCCL_NVLS_ENABLE="0")
    try:
        run = subprocess.run([sys.executable, "-c", _NCCL_PROBE], env=env, capture_output=True,
                             text=True, timeout=120)
        log = run.stdout + run.stderr
        loaded = [ln.split("NET/Plugin: ")[-1] for ln in log.splitlines() if "Loaded net plugin" in ln]
        if run.returncode == 0 and loaded:
            _line("NCCL loads the plugin", f"yes ({loaded[0].strip()})")
        else:
            tail = "\n".join(log.strip().splitlines()[-5:])
            _line("NCCL loads the plugin", f"NO (exit {run.returncode}):\n{tail}")
    except subprocess.TimeoutExpired:
        _line("NCCL loads the plugin", "NO (the one-rank NCCL run did not finish in 120 s)")


def _lightning():
    for name in ("lightning", "pytorch_lightning"):
        if importlib.util.find_spec(name) is not None:
            from importlib.metadata import version

            _line("Lightning", f"{name} {version(name)}; Trainer(strategy=\"bagua\") available")
            return
    _line("Lightning", "not installed (pip install lightning for BaguaStrategy)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    build = _build()
    torch = _torch()
    if build is None:  # what needs the binding is unknown: the rest still says what it can
        _lightning()
        return 1
    if torch is not None:
        _nccl(build)
        _cpu()
    _plugin(build, "--no-nccl-check" not in argv, torch)
    _lightning()
    return 0


if __name__ == "__main__":
    sys.exit(main())
