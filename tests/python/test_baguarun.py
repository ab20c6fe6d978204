"""baguarun: one launcher per host over ssh (a stand-in ssh that runs the
command here), on CPU with loopback. Imports nothing from bagua._C."""
import os
import sys
import time

import pytest

from bagua.script import baguarun
from conftest import HERE, load_ranks
from launch_support import WORKER, child_env, free_port, run

# --- baguarun -----------------------------------------------------------------------------

FAKE_SSH = """#!/bin/bash
# Test stand-in for ssh: records its arguments, drops the options and the host
# and runs the remote command here.
echo "$@" >> "$FAKE_SSH_LOG"
while [ $# -gt 0 ]; do
  case "$1" in
    -p|-o|-l|-i) shift 2;;
    -*) shift;;
    *) break;;
  esac
done
shift
exec bash -c "$*"
"""


@pytest.fixture
def fake_ssh(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    ssh = bindir / "ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    log = tmp_path / "ssh.log"
    env = child_env({"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
                     "FAKE_SSH_LOG": str(log)})
    return env, log


def test_baguarun_two_hosts_meet(tmp_path, fake_ssh):
    env, log = fake_ssh
    prefix = str(tmp_path / "w")
    port = free_port()
    res = run(["-m", "bagua.script.baguarun", "--host_list", "localhost,localhost",
               "--ssh_port", "2222", "--nproc_per_node", "1", "--master_port", str(port),
               "--default_bucket_size", "8192", "-x", "BAGUA_TEST_MARK=1",
               WORKER, "--out", prefix, "--allreduce"], env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    ranks = load_ranks(prefix, 2)
    for i, r in enumerate(ranks):
        assert r["allreduce"] == 3.0  # 1 + 2: the two nodes met
        assert r["WORLD_SIZE"] == "2" and r["GROUP_RANK"] == str(i) and r["NODE_RANK"] == str(i)
        assert r["MASTER_ADDR"] == "localhost" and r["MASTER_PORT"] == str(port)
        assert r["BAGUA_DEFAULT_BUCKET_SIZE"] == "8192"
    assert "localhost[0]: rank 0 done" in res.stdout
    assert "localhost[1]: rank 1 done" in res.stdout
    calls = log.read_text().splitlines()
    assert len(calls) == 2
    # The hosts are started at once, so the log's order is either.
    for i in range(2):
        assert sum(f"--node_rank={i}" in c for c in calls) == 1, calls
    for call in calls:
        assert call.startswith("-tt -o BatchMode=yes -p 2222 localhost bash -c ")
        assert "--nnodes=2" in call
        assert "export BAGUA_TEST_MARK=1;" in call
        # The same interpreter (sys.executable; its spelling may differ once normalised).
        assert f"cd {HERE} && " in call and " -m bagua.distributed.launch" in call
        assert f"exec {os.path.normpath(sys.executable)}" in os.path.normpath(call) or \
            f"exec {sys.executable}" in call


def test_baguarun_failure_stops_the_other_host(tmp_path, fake_ssh):
    env, _ = fake_ssh
    prefix = str(tmp_path / "w")
    start = time.monotonic()
    # Rank 1 (host 1) exits 3; rank 0 would wait for it in init_process_group (60 s).
    res = run(["-m", "bagua.script.baguarun", "--host_list", "localhost,localhost",
               "--nproc_per_node", "1", "--master_port", str(free_port()),
               WORKER, "--out", prefix, "--allreduce", "--exit-rank", "1"], env=env)
    elapsed = time.monotonic() - start
    assert res.returncode == 3, res.stdout[-3000:] + res.stderr[-3000:]
    assert elapsed < 45, f"the other host was not stopped ({elapsed:.0f}s)"
    assert "localhost exited with status 3; stopping the other hosts" in res.stderr
    assert not list(tmp_path.glob("w.rank*.json"))


@pytest.mark.parametrize("sig", ["SIGHUP", "SIGTERM"])
def test_baguarun_stopped_by_a_signal_stops_every_host(tmp_path, fake_ssh, sig):
    # SIGHUP: the terminal that ran baguarun closed. The ssh processes run in
    # sessions of their own, so only baguarun can pass the hangup on.
    import signal
    import subprocess

    env, _ = fake_ssh
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import os, sys, time\n"
                       "open(sys.argv[1] + '.' + os.environ['RANK'], 'w').write(str(os.getpid()))\n"
                       "time.sleep(120)\n")
    pids = str(tmp_path / "pid")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bagua.script.baguarun", "--host_list", "localhost,localhost",
         "--nproc_per_node", "1", "--master_port", str(free_port()), str(sleeper), pids],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("pid.*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = [int(p.read_text()) for p in tmp_path.glob("pid.*")]
        assert len(workers) == 2, proc.stdout.read1().decode(errors="replace")[-3000:]
        proc.send_signal(getattr(signal, sig))
        assert proc.wait(timeout=30) == 128 + getattr(signal, sig)
        deadline = time.monotonic() + 20
        alive = workers
        while alive and time.monotonic() < deadline:
            alive = [p for p in alive if os.path.exists(f"/proc/{p}")
                     and open(f"/proc/{p}/stat").read().split()[2] != "Z"]
            time.sleep(0.2)
        assert alive == [], f"workers {alive} outlived baguarun's {sig}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in tmp_path.glob("pid.*"):
            try:
                os.kill(int(p.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def test_baguarun_arguments(monkeypatch):
    monkeypatch.delenv("BAGUA_SSH_PORT", raising=False)
    assert baguarun.parse_hosts("a,b:8022", None) == [("a", None), ("b", 8022)]
    with pytest.raises(ValueError):
        baguarun.parse_hosts("a:b:c", 22)
    monkeypatch.setenv("BAGUA_NODE_DOMAIN_NAMES", "n1,n2")
    monkeypatch.setenv("BAGUA_SSH_PORT", "2200")
    monkeypatch.setenv("SOME_VAR", "v v")
    args = baguarun.parse_args(["--nproc_per_node", "8", "--master_port", "1234",
                                "--enable_bagua_net", "-x", "SOME_VAR", "-x", "A=1=2",
                                "train.py", "--name", "a b"])
    assert args.hosts == [("n1", 2200), ("n2", 2200)]
    assert args.env == {"SOME_VAR": "v v", "A": "1=2"}
    command = baguarun.remote_command(args, 1, cwd="/w d", python="/py")
    assert command.startswith("cd '/w d' && ")
    assert "export SOME_VAR='v v'; export A=1=2; " in command
    assert command.endswith(
        "exec /py -m bagua.distributed.launch --nnodes=2 --node_rank=1 --master_addr=n1 "
        "--nproc_per_node=8 --master_port=1234 --enable_bagua_net train.py --name 'a b'")
    ssh = baguarun.ssh_command("n2", 2200, command)
    assert ssh[:-1] == ["ssh", "-tt", "-o", "BatchMode=yes", "-p", "2200", "n2"]
    # user@host: the master address is the host
    args = baguarun.parse_args(["--host_list", "u@h1,u@h2", "--nproc_per_node", "1", "t.py"])
    assert "--master_addr=h1 " in baguarun.remote_command(args, 0)


def test_baguarun_needs_hosts(monkeypatch, capsys):
    monkeypatch.delenv("BAGUA_NODE_DOMAIN_NAMES", raising=False)
    with pytest.raises(SystemExit):
        baguarun.parse_args(["--nproc_per_node", "1", "t.py"])
    assert "--host_list or $BAGUA_NODE_DOMAIN_NAMES" in capsys.readouterr().err
