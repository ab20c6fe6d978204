"""fork_launch.py, the launcher of the Python suites' rank jobs, run by the
session's fork server: the ranks get torchrun's environment and meet, a
failing rank fails the launch with its exit code and ends the others (a
launcher that hid a failure would let every suite using it pass), and a launch
past its timeout is killed whole."""
import os
import subprocess
import time

import pytest

import conftest
from conftest import load_ranks, run_ranks
from launch_support import WORKER


def test_ranks_get_torchruns_environment_and_meet(outdir):
    prefix = os.path.join(outdir, "w")
    run = run_ranks(WORKER, 3, ["--out", prefix, "--allreduce"], timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    ranks = load_ranks(prefix, 3)
    assert [r["RANK"] for r in ranks] == ["0", "1", "2"]
    assert [r["LOCAL_RANK"] for r in ranks] == ["0", "1", "2"]
    for r in ranks:
        assert r["WORLD_SIZE"] == "3" and r["LOCAL_WORLD_SIZE"] == "3" and r["GROUP_RANK"] == "0"
        assert r["MASTER_ADDR"] == "127.0.0.1" and r["name"] == "__main__"
        assert r["allreduce"] == 6.0  # 1 + 2 + 3


def test_a_failing_rank_fails_the_launch_and_ends_the_others(outdir):
    prefix = os.path.join(outdir, "w")
    start = time.monotonic()
    # Rank 1 exits at once; rank 0 would wait 60 s for it in the allreduce.
    run = run_ranks(WORKER, 2, ["--out", prefix, "--allreduce", "--exit-rank", "1",
                                "--exit-code", "7"], timeout=120)
    assert run.returncode == 7, (run.returncode, run.stderr[-3000:])
    assert "rank 1 exited with 7; ending the others" in run.stderr
    assert time.monotonic() - start < 40, "rank 0 was not ended"
    assert not os.path.exists(f"{prefix}.rank0.json")


def members(group):
    """Live (not zombie) processes of process group `group`."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":  # pgrp, not a zombie
            left.append(pid)
    return left


def test_a_launch_past_its_timeout_is_killed_with_its_ranks(outdir):
    prefix = os.path.join(outdir, "w")
    # Rank 1 exits 0 at once; rank 0 waits for it in the allreduce (60 s).
    with pytest.raises(subprocess.TimeoutExpired):
        run_ranks(WORKER, 2, ["--out", prefix, "--allreduce", "--exit-rank", "1",
                              "--exit-code", "0"], timeout=8)
    group = conftest._server.last_pid
    # SIGKILL is delivered at once, but a rank that imported torch takes a
    # moment to tear down (CI once saw one still there right after the
    # launcher was reaped): give the group 15 s to be gone.
    deadline = time.monotonic() + 15
    left = members(group)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = members(group)
    assert not left, f"processes of the killed launch still run 15 s later: {left}"
    # The server goes on serving.
    run = run_ranks(WORKER, 2, ["--out", prefix + "2"], timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
