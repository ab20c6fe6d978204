"""Shared helpers: run a job script as N CPU ranks (forked, or under torchrun)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


RANK_ENV = {"OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}


def run_ranks(script, nproc, args, timeout=300, env=None, launcher="fork"):
    """Runs SCRIPT as NPROC CPU ranks of one machine and waits for it; returns
    a subprocess.CompletedProcess (text output) or raises TimeoutExpired.
    launcher "fork" (fork_launch.py, started by the session's fork server: no
    interpreter start, torch imported once per session; what the suites use)
    or "torchrun" (the real one, N + 1 interpreters: 2-3x the CPU time on the
    CI machine)."""
    full_env = dict(os.environ, **RANK_ENV, **(env or {}))
    argv = [str(nproc), os.path.join(HERE, script)] + [str(a) for a in args]
    if launcher == "fork":
        return _fork_server().run(argv, full_env, timeout)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={nproc}"] + argv[1:]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)


class ForkServer:
    """The client of fork_server.py (one per pytest session, started on first use)."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fork_server.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=HERE, env=dict(os.environ, **RANK_ENV))

    def _reply(self, deadline):
        import select

        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if select.select([self.proc.stdout], [], [], left)[0]:
                line = self.proc.stdout.readline()
                if not line:
                    raise RuntimeError("the fork server ended (its stderr is above)")
                return json.loads(line)

    def run(self, argv, env, timeout):
        import tempfile

        cmd = [sys.executable, os.path.join(HERE, "fork_launch.py")] + argv
        with tempfile.TemporaryDirectory(prefix="bagua-fork-") as tmp:
            out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
            request = {"argv": argv, "env": env, "cwd": os.getcwd(), "stdout": out, "stderr": err}
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            started = self._reply(time.monotonic() + 60)
            if started is None:
                raise RuntimeError("the fork server did not start the launch within 60 s")
            pid = self.last_pid = started["pid"]
            reply = self._reply(time.monotonic() + timeout)
            if reply is None:  # the launch and its ranks: one process group
                os.killpg(pid, signal.SIGKILL)
                self._reply(time.monotonic() + 60)
            with open(out) as f:
                stdout = f.read()
            with open(err) as f:
                stderr = f.read()
        if reply is None:
            raise subprocess.TimeoutExpired(cmd, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(cmd, reply["rc"], stdout, stderr)


_server = None


def pytest_sessionfinish(session, exitstatus):
    """End of input ends the fork server; it is waited for."""
    if _server is not None and _server.proc.poll() is None:
        _server.proc.stdin.close()
        try:
            _server.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _server.proc.kill()
            _server.proc.wait()
        _server.proc.stdout.close()


def _fork_server():
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = ForkServer()
    return _server


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
