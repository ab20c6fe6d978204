"""The original Bagua API (bagua.torch_api) on CPU with Gloo: the mnist
example's structure under `python -m bagua.distributed.launch`, checkpoints,
optimizer state at the start, no_sync, a user-defined algorithm,
SyncBatchNorm, DDP's arguments, and the errors for what is not built yet."""
import os
import subprocess
import sys

import pytest

from conftest import HERE, load_ranks, run_ranks
from launch_support import free_port

EXAMPLE = os.path.join(HERE, "..", "..", "python", "examples", "mnist_digits.py")


def launch(script, nproc, args, timeout=600):
    cmd = [sys.executable, "-m", "bagua.distributed.launch", f"--nproc_per_node={nproc}",
           "--master_port", str(free_port()), script] + list(args)
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def example(args, real_launcher=False):
    """The example on 2 ranks: under `python -m bagua.distributed.launch`
    (REAL_LAUNCHER), or forked with the same environment (fork_launch.py: half
    the CPU time; the launcher itself is tested in test_launch.py and by the
    examples that use it here)."""
    if real_launcher:
        return launch(EXAMPLE, 2, args)
    return run_ranks(EXAMPLE, 2, args, timeout=600)


def mnist(outdir, algorithm, epochs=4, real_launcher=False):
    prefix = os.path.join(outdir, algorithm)
    run = example(["--algorithm", algorithm, "--epochs", str(epochs), "--set-deterministic",
                   "--out", prefix], real_launcher)
    assert run.returncode == 0, run.stderr[-4000:]
    return load_ranks(prefix, 2)


@pytest.fixture(scope="module")
def ddp_accuracy(tmp_path_factory):
    ranks = mnist(str(tmp_path_factory.mktemp("ddp")), "ddp", real_launcher=True)
    return ranks[0]["accuracy"]


@pytest.mark.parametrize("algorithm", ["gradient_allreduce", "bytegrad"])
def test_mnist_example_runs_unchanged(outdir, algorithm, ddp_accuracy):
    ranks = mnist(outdir, algorithm, real_launcher=True)
    assert ranks[0]["weights"] == ranks[1]["weights"], "ranks disagree on the weights"
    assert ranks[0]["accuracy"] > 0.8
    assert abs(ranks[0]["accuracy"] - ddp_accuracy) <= 0.02, (ranks[0]["accuracy"], ddp_accuracy)


def test_mnist_example_with_qadam(outdir):
    # QAdam is Adam: the example's lr (1.0, Adadelta's) is passed as Adam's,
    # so it is run with an Adam learning rate, as a Bagua user would.
    prefix = os.path.join(outdir, "qadam")
    run = example(["--algorithm", "qadam", "--epochs", "6", "--lr", "0.003",
                   "--set-deterministic", "--out", prefix])
    assert run.returncode == 0, run.stderr[-4000:]
    ranks = load_ranks(prefix, 2)
    assert ranks[0]["weights"] == ranks[1]["weights"]
    assert ranks[0]["accuracy"] > 0.8, ranks[0]["accuracy"]


def test_mnist_example_with_decentralized(outdir, ddp_accuracy):
    ranks = mnist(outdir, "decentralized")
    assert ranks[0]["accuracy"] > 0.8
    assert abs(ranks[0]["accuracy"] - ddp_accuracy) <= 0.02, (ranks[0]["accuracy"], ddp_accuracy)


@pytest.mark.parametrize("algorithm", ["low_precision_decentralized", "async"])
def test_mnist_example_with_the_weight_algorithms(outdir, algorithm):
    """The example's async path calls bagua_algorithm.resume(model) and
    abort(model) around every epoch, as the original's did."""
    prefix = os.path.join(outdir, algorithm)
    run = example(["--algorithm", algorithm, "--epochs", "4", "--async-sync-interval", "20",
                   "--set-deterministic", "--out", prefix])
    assert run.returncode == 0, run.stderr[-4000:]
    ranks = load_ranks(prefix, 2)
    assert ranks[0]["accuracy"] > 0.8, ranks[0]["accuracy"]
    if algorithm == "async":  # abort() ends every epoch with one synchronous average
        assert ranks[0]["weights"] == ranks[1]["weights"]


def case(outdir, name, nproc=2):
    prefix = os.path.join(outdir, name)
    run = run_ranks("api_job.py", nproc, ["--case", name, "--out", prefix], timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    return load_ranks(prefix, nproc)


def test_state_dict_keys_and_round_trip(outdir):
    for r in case(outdir, "state_dict"):
        assert r["keys_equal"] and r["into_plain"] and r["back"], r
        assert r["module_name"].startswith("Sequential_")
        assert r["algorithm"] == "NativeAlgorithmImpl"


def test_optimizer_state_is_broadcast_from_rank_0_fused_or_not(outdir):
    import torch

    prefix = os.path.join(outdir, "opt")
    run = run_ranks("api_job.py", 2, ["--case", "optimizer,fused", "--out", prefix], timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    ranks = load_ranks(prefix + "_optimizer", 2)
    assert ranks[0]["state"], "rank 0 should have Adam state"
    for r in ranks[1:]:
        assert r["state"] == ranks[0]["state"] and r["lr"] == ranks[0]["lr"] == 0.01
        assert r["weights"] == ranks[0]["weights"]
    # with_bagua(..., fused_optimizer=True)
    ranks = load_ranks(prefix + "_fused", 2)
    for r in ranks:
        assert r["fused"] and r["lr"] == 0.01  # rank 0's optimizer state, broadcast
        assert r["weights"] == ranks[0]["weights"]
        assert torch.allclose(torch.tensor(r["weights"]), torch.tensor(r["reference"]),
                              rtol=1e-5, atol=1e-6)


def test_no_sync_accumulates_then_communicates_once(outdir):
    import torch

    for r in case(outdir, "no_sync"):
        assert r["communications"] == 1
        assert torch.allclose(torch.tensor(r["grads"]), torch.tensor(r["reference"]),
                              rtol=1e-5, atol=1e-6)


def test_user_defined_algorithm_from_python(outdir):
    import torch

    ranks = case(outdir, "custom")
    for r in ranks:
        assert r["listed"]
        assert torch.allclose(torch.tensor(r["user"]), torch.tensor(r["builtin"]),
                              rtol=1e-5, atol=1e-6)
    assert ranks[0]["user"] == ranks[1]["user"]
    # compression="MinMaxUInt8": the same values on every rank, within two
    # 8-bit quantization steps of the exact mean, and not exact (compressed).
    assert ranks[0]["compressed"] == ranks[1]["compressed"]
    got, mean = torch.tensor(ranks[0]["compressed"]), torch.tensor(ranks[0]["exact_mean"])
    error = (got - mean).abs().max().item()
    assert 0 < error <= 2 * ranks[0]["value_range"] / 255, (error, ranks[0]["value_range"])
    assert "the only codec is \"MinMaxUInt8\"" in ranks[0]["bad_codec_error"]


@pytest.mark.parametrize("nproc", [2, 3])
def test_sync_batchnorm_equals_one_batchnorm_over_all_batches(outdir, nproc):
    for r in case(outdir, "sync_bn", nproc):
        assert r["is_sync"]
        for key in ("y_err", "grad_err", "mean_err", "var_err"):
            assert r[key] < 1e-5, (key, r[key])


def test_ddp_keyword_arguments(outdir):
    ranks = case(outdir, "ddp_args")
    assert ranks[0]["weights"] == ranks[1]["weights"]
    assert ranks[0]["buckets_planned"] >= 2
    assert "device_ids=[0] but the module is on cpu" in ranks[0]["device_ids_error"]


def test_algorithm_classes_at_the_original_paths():
    import torch

    from bagua.torch_api.algorithms import Algorithm, bytegrad, gradient_allreduce, q_adam

    assert gradient_allreduce.GradientAllReduceAlgorithm().options == \
        {"hierarchical": False, "average": True}
    assert bytegrad.ByteGradAlgorithm(average=False).options["average"] is False
    assert Algorithm.init("bytegrad", hierarchical=False).options["hierarchical"] is False
    with pytest.raises(ValueError, match="warmup_steps must be at least 1"):
        q_adam.QAdamOptimizer([torch.nn.Parameter(torch.zeros(2))], warmup_steps=0)
    with pytest.raises(TypeError, match="QAdamAlgorithm needs a QAdamOptimizer"):
        q_adam.QAdamAlgorithm(torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1))
    with pytest.raises(ValueError, match="has no option 'device_ids'"):
        Algorithm.init("gradient_allreduce", device_ids=[0])
    with pytest.raises(ValueError, match="'average' of algorithm 'bytegrad' expects bool"):
        Algorithm.init("bytegrad", average="yes")


def test_python_signatures_match_the_registry_defaults():
    import inspect

    from bagua import registry
    from bagua.torch_api.algorithms.native import native_class

    for e in registry.entries():
        params = inspect.signature(native_class(e["name"]).__init__).parameters
        for option in e["options"]:
            default = params[option["name"]].default
            if default is None:  # DiLoCo's compression=None is the registry's "none"
                default = "none"
            assert default == option["default"], (e["name"], option)


def test_contrib_has_every_tool_at_its_original_path():
    import bagua.torch_api as bagua
    from bagua.torch_api.contrib import (CachedDataset, CacheLoader,  # noqa: F401
                                         LoadBalancingDistributedBatchSampler,
                                         LoadBalancingDistributedSampler, SyncBatchNorm,
                                         fuse_optimizer)

    assert bagua.contrib.CachedDataset is CachedDataset
    assert callable(bagua.contrib.fuse_optimizer)
    with pytest.raises(AttributeError):
        bagua.contrib.NoSuchTool


def test_a_release_checkpoint_of_the_original_layout_loads(tmp_path):
    """The original's tracker may say "release" (a released model, in
    release/): it loads, as iteration 0 (it was refused as not a number)."""
    import torch

    from bagua.torch_api import checkpoint

    torch.manual_seed(1)
    saved = torch.nn.Linear(3, 2)
    checkpoint.save_checkpoint(5, str(tmp_path), saved)
    os.rename(tmp_path / "iter_0000005", tmp_path / "release")
    (tmp_path / checkpoint.TRACKER).write_text("release\n")
    torch.manual_seed(2)
    fresh = torch.nn.Linear(3, 2)
    assert checkpoint.load_checkpoint(str(tmp_path), fresh) == 0
    assert torch.equal(fresh.weight, saved.weight) and torch.equal(fresh.bias, saved.bias)
