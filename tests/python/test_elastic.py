"""Elastic training (docs/elastic.md): 2 CPU processes under `python -m
bagua.distributed.run --nnodes=1:2 --max-restarts=N` (torchrun's c10d
rendezvous), a checkpoint every 10 steps with bagua.torch_api.checkpoint
(elastic_job.py). One worker is killed (SIGKILL) mid-training: torchrun
restarts both, they form new communicators and buckets, resume from the
newest checkpoint and finish with weights bit-equal to an uninterrupted run
that reloads that checkpoint at the same step; no thread or fd grows as
engines are formed again; a restart with a changed model is a clear error."""
import json
import os

import pytest

from conftest import HERE, load_ranks
from launch_support import child_env, elastic, free_port

JOB = os.path.join(HERE, "elastic_job.py")


def c10d(name):
    return ["--nnodes=1:2", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}",
            f"--rdzv-id={name}", "--rdzv-conf", "last_call_timeout=1"]


def run_elastic(outdir, name, *job_args, restarts=2, rendezvous=None, env=None):
    prefix = os.path.join(outdir, name)
    rendezvous = c10d(name) if rendezvous is None else rendezvous
    result = elastic("--nproc-per-node=2", f"--max-restarts={restarts}", *rendezvous, JOB,
                     "--ckpt", prefix + ".ckpt", "--out", prefix, *job_args,
                     env=child_env({"OMP_NUM_THREADS": "1", **(env or {})}), timeout=240)
    return result, prefix


def leftover_processes(marker):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_killed_worker_restarts_and_matches_an_uninterrupted_run(outdir):
    result, prefix = run_elastic(outdir, "killed", "--kill-at", "25")
    assert result.returncode == 0, result.stderr[-4000:]
    ranks = load_ranks(prefix, 2)
    assert [r["attempt"] for r in ranks] == [1, 1]  # torchrun restarted them once
    assert [r["resumed_from"] for r in ranks] == [20, 20]  # the newest checkpoint
    assert ranks[0]["weights"] == ranks[1]["weights"]
    with open(prefix + ".killed_at") as f:
        restart_s = ranks[0]["first_step_at"] - float(f.read())
    print(f"elastic restart, kill to the first step after it: {restart_s:.1f} s")
    assert restart_s < 20, f"restart took {restart_s:.1f} s"
    for r in ranks:
        # Engines formed again in the process (communicators, buckets, the
        # Reducer's watchdog) leave no thread or fd behind: no count grows.
        for key in ("threads", "fds"):
            assert max(c[key] for c in r["reformed"]) <= r["after_close"][key], \
                json.dumps([r["after_close"]] + r["reformed"])
    assert leftover_processes(prefix) == []

    reference, ref_prefix = run_elastic(outdir, "reference", "--reload-at", "20")
    assert reference.returncode == 0, reference.stderr[-4000:]
    for r, ref in zip(ranks, load_ranks(ref_prefix, 2)):
        assert ref["attempt"] == 0 and ref["resumed_from"] == 0
        assert ref["weights"] == r["weights"], "not bit-equal to the uninterrupted run"


@pytest.mark.parametrize("name,rendezvous,env", [
    # torchrun's default rendezvous: its store outlives the restart.
    ("static", ["--nnodes=1", "--master-addr=127.0.0.1"], {}),
    # c10d sharing its store with the workers (plain torchrun's default).
    ("shared", None, {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "0"}),
])
def test_restarts_where_one_store_outlives_the_attempt(outdir, name, rendezvous, env):
    # The restarted workers read the first attempt's keys and hung (or were
    # refused) until init_process_group() gave each attempt its own prefix.
    if rendezvous is not None:
        rendezvous = rendezvous + [f"--master-port={free_port()}"]
    result, prefix = run_elastic(outdir, name, "--kill-at", "15", restarts=1,
                                 rendezvous=rendezvous, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    ranks = load_ranks(prefix, 2)
    assert [r["attempt"] for r in ranks] == [1, 1]
    assert [r["resumed_from"] for r in ranks] == [10, 10]
    assert ranks[0]["weights"] == ranks[1]["weights"]


def test_restart_with_a_changed_model_is_a_clear_error(outdir):
    result, prefix = run_elastic(outdir, "changed", "--kill-at", "12", "--change-model",
                                 restarts=1)
    assert result.returncode != 0
    assert "was saved from a different model: '0.weight' is [32, 16] torch.float32 there and " \
           "[64, 16] torch.float32 here" in result.stderr, result.stderr[-4000:]
    assert leftover_processes(prefix) == []


def test_checkpoint_files_are_the_originals(tmp_path):
    """One process, no torch.distributed: the original's layout and tracker,
    optimizer and scheduler state, pruning, and the errors."""
    import pytest
    import torch

    from bagua.torch_api.checkpoint import load_checkpoint, save_checkpoint

    def build(hidden=8):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.Linear(hidden, 2))

    path = str(tmp_path / "ckpt")
    assert load_checkpoint(path, build()) == 0  # nothing yet: nothing loaded
    model = build()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
    model(torch.ones(1, 4)).sum().backward()
    opt.step()
    sched.step()
    for iteration in (10, 20, 30):
        save_checkpoint(iteration, path, model, opt, sched, keep=2)
    assert sorted(os.listdir(path)) == ["iter_0000020", "iter_0000030",
                                        "latest_checkpointed_iteration.txt"]
    assert os.listdir(os.path.join(path, "iter_0000030")) == ["mp_rank_00_model_states.pt"]
    saved = torch.load(os.path.join(path, "iter_0000030", "mp_rank_00_model_states.pt"),
                       weights_only=False)
    assert {"iteration", "model", "optimizer", "lr_scheduler"} <= set(saved)
    fresh = build()
    fresh_opt = torch.optim.SGD(fresh.parameters(), lr=0.1, momentum=0.9)
    fresh_sched = torch.optim.lr_scheduler.StepLR(fresh_opt, step_size=1)
    assert load_checkpoint(path, fresh, fresh_opt, fresh_sched) == 30
    assert all(torch.equal(a, b) for a, b in zip(fresh.parameters(), model.parameters()))
    assert fresh_opt.state_dict()["state"][0]["momentum_buffer"].equal(
        opt.state_dict()["state"][0]["momentum_buffer"])
    assert fresh_sched.last_epoch == sched.last_epoch == 1
    with pytest.raises(ValueError, match="saved from a different model: '0.weight' is "
                                         r"\[8, 4\] torch.float32 there and \[9, 4\]"):
        load_checkpoint(path, build(9))
    with pytest.raises(ValueError, match=r"holds 1 optimizer state\(s\), 2 optimizer\(s\) given"):
        load_checkpoint(path, build(), [opt, opt])


def test_attempt_prefix_only_where_every_rank_agrees_on_the_attempt(monkeypatch):
    """One agent's restart count names the attempt; with several nodes each
    agent counts its own, so a restart there is refused, not left to hang."""
    import warnings

    from bagua.torch_api import process_group as pg

    monkeypatch.setitem(pg._state, "restart_warned", False)
    monkeypatch.setenv("TORCHELASTIC_USE_AGENT_STORE", "False")
    assert pg._attempt_prefix() is None  # torch's store per round
    monkeypatch.setenv("TORCHELASTIC_USE_AGENT_STORE", "True")
    monkeypatch.setenv("TORCHELASTIC_MAX_RESTARTS", "3")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "2")
    monkeypatch.setenv("GROUP_WORLD_SIZE", "1")
    assert pg._attempt_prefix() == "/bagua/attempt_2"
    monkeypatch.setenv("GROUP_WORLD_SIZE", "2")
    with pytest.raises(RuntimeError, match="restart 2: .*each node counts its own restarts"):
        pg._attempt_prefix()
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert pg._attempt_prefix() is None
        assert pg._attempt_prefix() is None
    assert len(caught) == 1 and "--rdzv-backend=c10d" in str(caught[0].message)


def test_checkpoint_saves_survive_leftovers_and_failures(tmp_path, monkeypatch):
    """A save killed before its rename leaves a directory with only a
    temporary file: pruning must not count it (it pushed a good checkpoint
    out); a failed save (disk full) leaves no temporary file; a release
    tracker without its directory is an error, not a fresh start."""
    import torch

    from bagua.torch_api import checkpoint as ck

    model = torch.nn.Linear(3, 2)
    path = str(tmp_path / "ckpt")
    ck.save_checkpoint(10, path, model)
    junk = tmp_path / "ckpt" / "iter_0000020"
    junk.mkdir()
    (junk / "mp_rank_00_model_states.pt.tmp123").write_bytes(b"partial")
    ck.save_checkpoint(15, path, model, keep=2)
    assert sorted(os.listdir(path)) == ["iter_0000010", "iter_0000015",
                                        "latest_checkpointed_iteration.txt"]

    def full_disk(obj, f, *args, **kwargs):
        with open(f, "wb") as out:
            out.write(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(OSError, match="No space left"):
        ck.save_checkpoint(20, path, model)
    monkeypatch.undo()
    assert os.listdir(tmp_path / "ckpt" / "iter_0000020") == []  # no temporary file left
    assert ck.latest_iteration(path) == 15

    release = str(tmp_path / "released")
    os.makedirs(release)
    with open(os.path.join(release, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write("release")
    with pytest.raises(FileNotFoundError, match="release.*does not exist"):
        ck.load_checkpoint(release, model)
