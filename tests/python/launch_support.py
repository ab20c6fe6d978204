"""Helpers of the launcher tests (test_launch.py, test_baguarun.py): children
run in their own process group with a clean environment, bounded in time and
killed whole on timeout."""
import os
import signal
import socket
import subprocess
import sys

import pytest

import bagua
from conftest import HERE

# The source tree (the package may be installed elsewhere: site-packages),
# and where the bagua under test was imported from (the workers use the same).
REPO = os.path.dirname(os.path.dirname(HERE))
PKG_ROOT = os.path.join(REPO, "python")
IMPORTED_FROM = os.path.dirname(os.path.dirname(os.path.abspath(bagua.__file__)))
WORKER = os.path.join(HERE, "launch_worker.py")
TIMEOUT = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(extra=None, drop=()):
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo",
               PYTHONPATH=os.pathsep.join(p for p in (IMPORTED_FROM, os.environ.get("PYTHONPATH")) if p))
    for name in ("OMP_NUM_THREADS", "NCCL_NET_PLUGIN", "NCCL_NET", "BAGUA_NET_PLUGIN_PATH",
                 "BAGUA_NODE_DOMAIN_NAMES", "BAGUA_SSH_PORT") + tuple(drop):
        env.pop(name, None)
    env.update(extra or {})
    return env


def run(args, env=None, cwd=HERE, timeout=TIMEOUT):
    """Runs `python ARGS`; on timeout kills its whole process group and fails."""
    proc = subprocess.Popen([sys.executable] + list(args), cwd=cwd, env=env or child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"timed out after {timeout}s: {args}\n{out[-2000:]}\n{err[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def launch(*args, **kwargs):
    return run(["-m", "bagua.distributed.launch"] + list(args), **kwargs)


def elastic(*args, **kwargs):
    return run(["-m", "bagua.distributed.run"] + list(args), **kwargs)


def fake_plugin(tmp_path):
    path = tmp_path / "libnccl-net-bagua.so"
    path.write_bytes(b"")
    return str(path)


def warnings_in(stderr):
    return [line for line in stderr.splitlines() if "warning: ignoring" in line]
