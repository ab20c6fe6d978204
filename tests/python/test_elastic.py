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

from conftest import HERE, load_ranks
from launch_support import child_env, elastic, free_port

JOB = os.path.join(HERE, "elastic_job.py")


def run_elastic(outdir, name, *job_args, restarts=2):
    prefix = os.path.join(outdir, name)
    result = elastic("--nnodes=1:2", "--nproc-per-node=2", f"--max-restarts={restarts}",
                     "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}",
                     f"--rdzv-id={name}", "--rdzv-conf", "last_call_timeout=1", JOB,
                     "--ckpt", prefix + ".ckpt", "--out", prefix, *job_args,
                     env=child_env({"OMP_NUM_THREADS": "1"}), timeout=240)
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


def test_restart_with_a_changed_model_is_a_clear_error(outdir):
    result, prefix = run_elastic(outdir, "changed", "--kill-at", "12", "--change-model",
                                 restarts=1)
    assert result.returncode != 0
    assert "was saved from a different model: '0.weight' is [32, 16] torch.float32 there and " \
           "[64, 16] torch.float32 here" in result.stderr, result.stderr[-4000:]
    assert leftover_processes(prefix) == []
