"""Shared helpers: run a job script as N CPU ranks (forked, or under torchrun)."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def run_ranks(script, nproc, args, timeout=300, env=None, launcher="fork"):
    """Runs SCRIPT as NPROC CPU ranks of one machine and waits for it. launcher
    "fork" (fork_launch.py: one interpreter imports torch, the ranks are forked
    from it; what the suites use) or "torchrun" (the real one, N + 1
    interpreters: 2-3x the CPU time on the CI machine)."""
    if launcher == "fork":
        cmd = [sys.executable, os.path.join(HERE, "fork_launch.py"), str(nproc)]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc_per_node={nproc}"]
    cmd += [os.path.join(HERE, script)] + list(args)
    full_env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", **(env or {}))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)


def torchrun(script, nproc, args, timeout=300, env=None):
    """run_ranks under the real torchrun."""
    return run_ranks(script, nproc, args, timeout, env, launcher="torchrun")


def load_ranks(prefix, n):
    out = []
    for r in range(n):
        with open(f"{prefix}.rank{r}.json") as f:
            out.append(json.load(f))
    return out


@pytest.fixture
def outdir(tmp_path):
    return str(tmp_path)
