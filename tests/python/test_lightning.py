"""Lightning: Trainer(strategy="bagua") and BaguaStrategy(algorithm=...) on 2
CPU processes (Gloo): trains (BatchNorm included), ranks end with identical
weights, checkpoint save and resume work, bad names give clear errors."""
import os
import subprocess
import sys

import pytest

from conftest import HERE, load_ranks
from lightning_job import label


def launch(outdir, strategies, extra=()):
    """lightning_job.py on 2 CPU processes, training STRATEGIES one after the
    other; returns the run and each strategy's output prefix."""
    out = os.path.join(outdir, "job")
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    run = subprocess.run([sys.executable, os.path.join(HERE, "lightning_job.py"), "--strategy",
                          *strategies, "--out", out, *extra],
                         capture_output=True, text=True, timeout=600, env=env, cwd=outdir)
    if len(strategies) == 1:
        return run, {strategies[0]: out}
    return run, {s: f"{out}_{label(s)}" for s in strategies}


def run_lightning(outdir, strategy, extra=()):
    run, prefixes = launch(outdir, [strategy], extra)
    return run, prefixes[strategy]


TRAINED = ["bagua", "bagua:bytegrad+autotune", "bagua:qadam", "bagua:decentralized",
           "bagua:low_precision_decentralized", "bagua:async", "bagua:local_sgd+autotune"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Every strategy of TRAINED in one launch (a Trainer each, in turn: the
    launch and imports, most of a run's 20 s, are paid once)."""
    return launch(str(tmp_path_factory.mktemp("lightning")), TRAINED)


@pytest.mark.parametrize("strategy", TRAINED)
def test_lightning_trains_with_bagua(trained, strategy):
    run, prefixes = trained
    prefix = prefixes[strategy]
    assert run.returncode == 0, run.stderr[-4000:]
    ranks = load_ranks(prefix, 2)
    assert ranks[0]["strategy"] == "BaguaStrategy"
    for r in ranks:  # what bagua.torch_api says inside the strategy (RANK was never set)
        assert r["bagua_env"] == [True, r["rank"], 2, r["rank"], 2], r["bagua_env"]
    if "decentralized" not in strategy and "local_sgd" not in strategy:  # their own weights
        assert ranks[0]["weights"] == ranks[1]["weights"], "ranks disagree on the weights"
    assert ranks[0]["accuracy"] > 0.8
    assert os.path.exists(prefix + ".ckpt")
    if strategy.endswith("+autotune"):  # BaguaStrategy(autotune=...): searched, ranks agree
        assert ranks[0]["autotune"]["status"] == "done", ranks[0]["autotune"]
        assert ranks[0]["autotune"] == ranks[1]["autotune"]
        if "local_sgd" in strategy:  # sync_every: the start and the reference at least
            assert ranks[0]["autotune"]["knob"] == "sync_every"
            assert len(ranks[0]["autotune"]["trials"]) >= 2
        else:
            assert len(ranks[0]["autotune"]["trials"]) >= 3


def test_diloco_trains_checkpoints_and_resumes(outdir):
    """BaguaStrategy(algorithm="diloco", sync_every=5, ...): without overlap
    every rank holds the start point after the sync at step 40; the
    checkpoint carries DiLoCo's state (_bagua_diloco.*) and the resumed run
    continues its local step count (40 + 10)."""
    options = '{"sync_every": 5, "compression": "fp4", "overlap": false, "outer_lr": 0.7}'
    run, prefix = run_lightning(outdir, "bagua:diloco", ["--resume", "--options", options])
    assert run.returncode == 0, run.stderr[-4000:]
    ranks = load_ranks(prefix, 2)
    assert ranks[0]["weights"] == ranks[1]["weights"], "ranks disagree after the last sync"
    assert ranks[0]["accuracy"] > 0.8
    assert ranks[0]["resumed_step"] == 50
    assert ranks[0]["resumed_local_steps"] == 50
    assert ranks[0]["resumed_weights"] == ranks[1]["resumed_weights"]
    import torch

    state = torch.load(prefix + ".ckpt", weights_only=False)["state_dict"]
    assert int(state["_bagua_diloco.local_steps"]) == 40
    assert "_bagua_diloco.momentum.0" in state


def test_checkpoint_resume_with_fused_optimizer(outdir):
    """BaguaStrategy(fused_optimizer=True): the optimizer steps fused, ranks
    agree, and its checkpoint resumes (state_dict through Lightning)."""
    run, prefix = run_lightning(outdir, "bagua", ["--resume", "--fused"])
    assert run.returncode == 0, run.stderr[-4000:]
    ranks = load_ranks(prefix, 2)
    assert ranks[0]["resumed_step"] == 50
    assert ranks[0]["fused"] == [True]
    assert ranks[0]["weights"] == ranks[1]["weights"]
    assert ranks[0]["accuracy"] > 0.8


def test_bad_algorithm_names():
    from lightning_bagua import BaguaStrategy

    with pytest.raises(ValueError, match="unknown algorithm 'sgd'.*gradient_allreduce, bytegrad"):
        BaguaStrategy(algorithm="sgd")
    with pytest.raises(ValueError, match="sync_interval_ms must be positive, got 0"):
        BaguaStrategy(algorithm="async", sync_interval_ms=0)


def test_original_strategy_options():
    from lightning_bagua import BaguaStrategy

    s = BaguaStrategy(algorithm="bytegrad", flatten=True, hierarchical=False, average=False)
    assert s.algorithm == "bytegrad"
    with pytest.raises(ValueError, match="algorithm 'bytegrad' has no option "
                                         "'sync_interval_ms'"):
        BaguaStrategy(algorithm="bytegrad", sync_interval_ms=100)
    with pytest.raises(ValueError, match="option 'hierarchical' of algorithm "
                                         "'gradient_allreduce' expects bool"):
        BaguaStrategy(hierarchical="no")


def test_manual_optimization_and_accumulation(outdir):
    run, prefix = run_lightning(outdir, "bagua:bytegrad", ["--manual"])
    assert run.returncode == 0, run.stderr[-4000:]
    ranks = load_ranks(prefix, 2)
    assert ranks[0]["weights"] == ranks[1]["weights"], "ranks disagree on the weights"
    assert ranks[0]["accuracy"] > 0.5  # it learns (10 classes: chance is 0.1)


def test_strategy_name_is_registered():
    import lightning as L

    import lightning_bagua  # noqa: F401

    trainer = L.Trainer(accelerator="cpu", devices=1, strategy="bagua", logger=False,
                        enable_checkpointing=False)
    assert type(trainer.strategy).__name__ == "BaguaStrategy"


def test_strategy_name_works_without_importing_lightning_bagua():
    code = (
        "import lightning as L\n"
        "t = L.Trainer(accelerator='cpu', devices=1, strategy='bagua', logger=False,"
        " enable_checkpointing=False)\n"
        "print(type(t.strategy).__name__)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().endswith("BaguaStrategy")
