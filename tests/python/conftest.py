"""Shared helpers: run a script under torchrun with N CPU ranks."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def torchrun(script, nproc, args, timeout=300, env=None):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={nproc}", os.path.join(HERE, script)] + list(args)
    full_env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", **(env or {}))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)


def load_ranks(prefix, n):
    out = []
    for r in range(n):
        with open(f"{prefix}.rank{r}.json") as f:
            out.append(json.load(f))
    return out


@pytest.fixture
def outdir(tmp_path):
    return str(tmp_path)
