"""python -m bagua.demo: every algorithm of this build trains the same small
model on scikit-learn's digits, 2-4 processes on this machine; then one
comparison table (wall time, bytes each rank sent, final accuracy) and a
plot of accuracy against time.

CPU: the processes talk over Gloo. With GPUs: CUDA tensors over NCCL,
carried by the Bagua-Net plugin of this package (ranks that share a GPU are
separate NCCL hosts, so every byte crosses the plugin); the demo says which
and checks NCCL's log.

    python -m bagua.demo [--quick] [--ranks N] [--epochs E] [--out DIR]

The algorithms are read from the runtime's registry (bagua.registry), so new
ones appear here without a change. tqdm (progress bars) and matplotlib (the
plot) are installed into the virtual environment if missing.
"""
import argparse
import glob
import importlib.util
import json
import os
import subprocess
import sys

NEEDED = {"tqdm": "tqdm", "matplotlib": "matplotlib", "sklearn": "scikit-learn"}


def ensure_packages():
    missing = [pip for module, pip in NEEDED.items() if importlib.util.find_spec(module) is None]
    if not missing:
        return
    if sys.prefix == sys.base_prefix:
        raise SystemExit(f"bagua.demo needs {', '.join(missing)}: pip install {' '.join(missing)} "
                         "(or run it from a virtual environment, where it installs them)")
    print(f"bagua.demo: installing {', '.join(missing)} into {sys.prefix}", flush=True)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", *missing])


def network_setup(ranks, out):
    """(environment for the workers, one line saying how they communicate)."""
    import torch

    import bagua

    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    if not torch.cuda.is_available():
        return env, f"{ranks} processes over Gloo (CPU; no GPU found)"
    gpus = torch.cuda.device_count()
    name = torch.cuda.get_device_name(0)
    # One host: NCCL would use NVLink or shared memory between these ranks;
    # disabling both sends every byte through the network transport.
    env.update(NCCL_SOCKET_IFNAME=env.get("NCCL_SOCKET_IFNAME", "lo"), NCCL_P2P_DISABLE="1",
               NCCL_SHM_DISABLE="1", NCCL_IB_DISABLE="1", NCCL_NVLS_ENABLE="0",
               NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,NET",
               NCCL_DEBUG_FILE=os.path.join(out, "nccl.%h.%p.log"))
    plugin = bagua.net_plugin_path()
    where = f"{gpus} x {name}" + (", ranks sharing GPUs as separate NCCL hosts"
                                  if ranks > gpus else "")
    if plugin is None:
        return env, (f"{ranks} processes on {where}, NCCL over its own socket transport "
                     "(this package has no Bagua-Net plugin)")
    env.update(NCCL_NET_PLUGIN=plugin, NCCL_NET="Bagua")
    return env, f"{ranks} processes on {where}, NCCL through Bagua-Net ({plugin})"


def nccl_check(out):
    """How many NCCL logs of the run name Bagua-Net as the network."""
    logs = glob.glob(os.path.join(out, "nccl.*.log"))
    using = [p for p in logs if "Using network Bagua" in open(p, errors="replace").read()]
    return len(using), len(logs)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bagua.demo", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer epochs (CI)")
    p.add_argument("--ranks", type=int, default=None,
                   help="processes (2-4; default 2, 4 with 4 or more CPUs)")
    p.add_argument("--epochs", type=int, default=None, help="default 20, 6 with --quick")
    p.add_argument("--out", default="bagua_demo", help="folder for results.json and the plot")
    p.add_argument("--algorithms", default=None, help="comma separated (default: every one)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    ranks = args.ranks or (4 if (os.cpu_count() or 1) >= 4 else 2)
    if not 2 <= ranks <= 4:
        p.error(f"--ranks must be 2, 3 or 4, got {ranks}")
    epochs = args.epochs or (6 if args.quick else 20)
    ensure_packages()
    from bagua import registry

    algorithms = args.algorithms.split(",") if args.algorithms else list(registry.available())
    for name in algorithms:
        registry.check_available(name)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    for stale in glob.glob(os.path.join(out, "nccl.*.log")) + [os.path.join(out, "results.json")]:
        os.remove(stale) if os.path.exists(stale) else None
    env, how = network_setup(ranks, out)
    print(f"\nbagua.demo: digits (scikit-learn), {epochs} epochs, {how}; "
          f"algorithms from the registry: {', '.join(algorithms)}\n", flush=True)
    cmd = [sys.executable, "-m", "bagua.distributed.run", "--standalone",
           f"--nproc-per-node={ranks}", "--max-restarts=0", "-m", "bagua.demo.worker",
           "--out", out,
           "--epochs", str(epochs), "--algorithms", ",".join(algorithms)]
    if args.no_progress:
        cmd.append("--no-progress")
    rc = subprocess.call(cmd, env=env)
    results = os.path.join(out, "results.json")
    if rc != 0 or not os.path.exists(results):
        print(f"bagua.demo: the training job failed (exit status {rc})", file=sys.stderr)
        return rc or 1
    with open(results) as f:
        data = json.load(f)
    from . import report

    print()
    for line in report.table(data):
        print(line)
    png = report.plot(data, os.path.join(out, "accuracy_vs_time.png"),
                      f"digits, {data['world_size']} ranks ({data['device']})")
    print(f"\nplot: {png}\nresults: {results}")
    if "NCCL_NET_PLUGIN" in env:
        using, total = nccl_check(out)
        print(f"NCCL logs naming Bagua-Net as the network: {using} of {total}")
    failed = [r["algorithm"] for r in data["results"] if "error" in r]
    return 1 if failed or len(data["results"]) != len(algorithms) else 0


if __name__ == "__main__":
    sys.exit(main())
