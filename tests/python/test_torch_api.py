"""bagua.BaguaDistributedDataParallel on CPU (Gloo), 2 ranks (forked; one test under torchrun):
every implemented algorithm trains the digits MLP, every rank ends with the
same weights, gradient allreduce equals single-process full-batch training,
and bad configuration gives clear errors."""
import os
import subprocess
import sys

import pytest
import torch

import bagua
from conftest import HERE, load_ranks, run_ranks


@pytest.mark.parametrize("algorithm,extra", [
    ("gradient_allreduce", []),
    ("bytegrad", []),
    ("bytegrad", ["--error-feedback"]),
])
def test_algorithm_trains_and_ranks_agree(outdir, algorithm, extra):
    prefix = os.path.join(outdir, algorithm)
    run = run_ranks("digits_job.py", 2, ["--algorithm", algorithm, "--out", prefix] + extra)
    assert run.returncode == 0, run.stderr[-3000:]
    ranks = load_ranks(prefix, 2)
    assert ranks[0]["weights"] == ranks[1]["weights"], "ranks disagree on the weights"
    losses = ranks[0]["losses"]
    assert losses[-1] < 0.5 * losses[0], f"did not train: {losses[0]:.3f} -> {losses[-1]:.3f}"
    assert ranks[0]["accuracy"] > 0.85


def test_gradient_allreduce_matches_single_process_full_batch(outdir):
    prefix = os.path.join(outdir, "ar")
    # Under the real torchrun, as users launch (the other suites fork their ranks).
    run = run_ranks("digits_job.py", 2, ["--out", prefix], launcher="torchrun")
    assert run.returncode == 0, run.stderr[-3000:]
    single = os.path.join(outdir, "single")
    ref = subprocess.run([sys.executable, os.path.join(HERE, "digits_job.py"), "--single",
                          "--out", single], capture_output=True, text=True, timeout=300)
    assert ref.returncode == 0, ref.stderr[-3000:]
    got = torch.tensor(load_ranks(prefix, 2)[0]["weights"])
    want = torch.tensor(load_ranks(single, 1)[0]["weights"])
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), float((got - want).abs().max())


def test_algorithm_names():
    assert bagua.available_algorithms() == ("gradient_allreduce", "bytegrad", "decentralized",
                                            "low_precision_decentralized", "qadam", "async",
                                            "local_sgd", "diloco")
    with pytest.raises(ValueError, match="unknown algorithm 'nope'; available: "
                                         "gradient_allreduce, bytegrad, decentralized, "
                                         "low_precision_decentralized, qadam, async, "
                                         "local_sgd, diloco"):
        bagua.check_algorithm("nope")


def test_mismatched_world_size_is_an_error(tmp_path):
    code = (
        "import os, torch, torch.distributed as dist, bagua\n"
        f"dist.init_process_group('gloo', init_method='file://{tmp_path}/store', rank=0,"
        " world_size=1)\n"
        "os.environ['WORLD_SIZE'] = '2'\n"
        "bagua.BaguaDistributedDataParallel(torch.nn.Linear(2, 2))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "WORLD_SIZE=2" in run.stderr and "1 ranks" in run.stderr, run.stderr[-2000:]


def test_without_process_group_is_an_error():
    with pytest.raises(RuntimeError, match="init_process_group\\(\\) first \\(or initialise torch.distributed\\)"):
        bagua.BaguaDistributedDataParallel(torch.nn.Linear(2, 2))


def test_unsupported_dtype_is_an_error(tmp_path):
    code = (
        "import torch, torch.distributed as dist, bagua\n"
        f"dist.init_process_group('gloo', init_method='file://{tmp_path}/store', rank=0,"
        " world_size=1)\n"
        "bagua.BaguaDistributedDataParallel(torch.nn.Linear(2, 2).double())\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "torch.float64" in run.stderr, run.stderr[-2000:]


def test_torch_distributed_reduce_ops_map_by_name():
    """torch.distributed's ops by name: by value torch's AVG was our PRODUCT,
    its PRODUCT our MIN, its MIN our MAX."""
    import torch.distributed as dist

    from bagua.torch_api import ReduceOp
    from bagua.torch_api.collectives import _op_name

    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
        assert _op_name(getattr(dist.ReduceOp, name)) == name.lower()
    assert _op_name(ReduceOp.AVG) == "avg" and _op_name(10) == "avg"  # the original's ints
    with pytest.raises(ValueError, match="PREMUL_SUM has no counterpart"):
        _op_name(dist.ReduceOp.PREMUL_SUM)
    with pytest.raises(ValueError, match="unknown ReduceOp 42"):
        _op_name(42)


# The original's bagua/torch_api/env.py: every getter, with its defaults.
ORIGINAL_ENV_DEFAULTS = {
    "get_world_size": 1, "get_rank": 0, "get_local_rank": 0, "get_local_size": 1,
    "get_node_rank": 0, "get_default_bucket_size": 10 * 1024**2,
    "get_master_addr": "127.0.0.1", "get_bagua_service_port": -1,
    "is_report_metrics_switch_on": False, "get_autotune_level": 0,
    "get_autotune_max_samples": 60, "get_autotune_sampling_confidence_time_s": 5.0,
    "get_autotune_warmup_time_s": 30.0, "get_is_output_autotune_log": False,
    "get_autotune_server_wait_time": 300, "_is_elastic_launched": False,
}


def test_the_originals_environment_getters_keep_their_defaults(monkeypatch):
    from bagua.torch_api import env

    for name in list(os.environ):
        if name.startswith("BAGUA_") or name in ("WORLD_SIZE", "RANK", "LOCAL_RANK",
                                                 "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
                                                 "MASTER_ADDR"):
            monkeypatch.delenv(name)
    got = {name: getattr(env, name)() for name in ORIGINAL_ENV_DEFAULTS}
    assert got == ORIGINAL_ENV_DEFAULTS
    monkeypatch.setenv("BAGUA_AUTOTUNE", "1")
    monkeypatch.setenv("BAGUA_REPORT_METRICS", "1")
    monkeypatch.setenv("BAGUA_SERVICE_PORT", "29501")
    assert env.get_autotune_level() == 1 and env.is_report_metrics_switch_on()
    assert env.get_bagua_service_port() == 29501
    monkeypatch.setenv("BAGUA_AUTOTUNE", "yes")
    with pytest.raises(ValueError, match=r"\$BAGUA_AUTOTUNE='yes' is not an integer"):
        env.get_autotune_level()
    port = env.find_free_network_port()
    assert 0 < port < 65536


def test_malformed_environment_numbers_are_named(monkeypatch):
    """An empty or malformed BAGUA_DEFAULT_BUCKET_SIZE / BAGUA_TIMEOUT_S is an
    error naming the variable (int() and float() named only the text)."""
    import pytest

    from bagua.torch_api import env
    from bagua.torch_api.process_group import _timeout_s

    for text, match in (("", "is not an integer"), ("10M", "is not an integer"),
                        ("-5", "must be at least 1")):
        monkeypatch.setenv("BAGUA_DEFAULT_BUCKET_SIZE", text)
        with pytest.raises(ValueError, match=r"\$BAGUA_DEFAULT_BUCKET_SIZE=.*" + match):
            env.get_default_bucket_size()
    monkeypatch.setenv("BAGUA_DEFAULT_BUCKET_SIZE", "4096")
    assert env.get_default_bucket_size() == 4096
    monkeypatch.setenv("BAGUA_TIMEOUT_S", "")
    with pytest.raises(ValueError, match=r"\$BAGUA_TIMEOUT_S='' is not a number"):
        _timeout_s()
    monkeypatch.setenv("BAGUA_TIMEOUT_S", "2.5")
    assert _timeout_s() == 2.5
