"""Runs a job script as N ranks on this machine, the way `torchrun --standalone
--nproc_per_node N` does, but imports torch and bagua once and forks the ranks.

Why: on the 2-CPU CI machine an interpreter that imports torch costs about 4 s
of CPU, and a torchrun launch of N ranks starts N + 1 of them, each torn down
at exit (1 s more). A 2-rank digits job took 14.4 s under torchrun and 7.0 s
forked; the Python suite went from 1279 s to 1034 s. The ranks are otherwise
what torchrun gives a script: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK, MASTER_ADDR and MASTER_PORT in the environment (rank 0 hosts the
store), `__main__` is the script, argv is its own. As torchrun does, the first rank
that fails ends the others and its exit code is the launch's. The tests of the
launchers themselves (test_launch.py, test_baguarun.py, test_elastic.py), of
the original API's launch path (test_original_api.py's examples) and one test
of test_torch_api.py keep the real launchers.

The suites run it through fork_server.py (conftest.run_ranks): a fork of one
interpreter per session instead of a new one per launch (5 launches of
test_weight_algorithms.py: 63 s -> 45 s).

Usage: python fork_launch.py NPROC SCRIPT [ARGS...]
"""
import atexit
import ctypes
import os
import runpy
import signal
import sys
import time
import traceback

import torch  # noqa: F401  (imported once, before the fork: the point of this launcher)
import torch.distributed  # noqa: F401

import bagua  # noqa: F401
from launch_support import free_port

try:  # the digits jobs' data (2 s of imports per rank otherwise)
    import sklearn.datasets  # noqa: F401
except ImportError:
    pass

PR_SET_PDEATHSIG = 1
GRACE_S = 5.0


def die_with_parent():
    """SIGKILL to this process when its parent ends (a test's timeout kills
    the launcher: its ranks go with it)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run_rank(rank, nproc, port, script, args):
    """In the forked child: becomes rank RANK and runs SCRIPT as __main__."""
    die_with_parent()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                      LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK="0", ROLE_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = [script] + args
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


def exit_rank(body, *args):
    """Runs BODY in a forked rank and ends the process the way multiprocessing
    ends its forked children: the script's atexit handlers run (bagua's NCCL
    shutdown among them), the streams are flushed, then os._exit, without the
    interpreter's teardown of every module (about 1 s of CPU per rank)."""
    code = 0
    try:
        body(*args)
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - reported as Python would, then exit 1
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def wait_all(pids):
    """Waits for every rank; the first to fail ends the rest. Returns the exit code."""
    code = 0
    live = dict(pids)
    deadline = None
    while live:
        pid, status = os.waitpid(-1, 0 if deadline is None else os.WNOHANG)
        if pid == 0:  # ending the others: give them GRACE_S, then SIGKILL
            if time.monotonic() > deadline:
                for other in live:
                    os.kill(other, signal.SIGKILL)
            time.sleep(0.05)
            continue
        if pid not in live:
            continue
        rank = live.pop(pid)
        rc = os.waitstatus_to_exitcode(status)
        if rc != 0 and code == 0:
            print(f"fork_launch: rank {rank} exited with {rc}; ending the others",
                  file=sys.stderr, flush=True)
            code = rc if rc > 0 else 128 - rc
            for other in live:
                os.kill(other, signal.SIGTERM)
            deadline = time.monotonic() + GRACE_S
    return code


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    nproc, script, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    port = free_port()
    sys.stdout.flush()
    sys.stderr.flush()
    pids = {}
    for rank in range(nproc):
        pid = os.fork()
        if pid == 0:
            exit_rank(run_rank, rank, nproc, port, script, args)
        pids[pid] = rank
    code = wait_all(pids)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skips tearing torch's modules down (1 s of CPU): nothing to clean here


if __name__ == "__main__":
    main()
