"""The rest of the original's public names that scripts and libraries
import (bagua 0.9.2's API audit, 2026-12-02): coalesced collectives, the
autograd all_reduce, torch_api.utils, the fused optimizer's original
names, BaguaModule, the registry's dict view, and PyTorch Lightning 1.9,
whose `import pytorch_lightning` failed outright with bagua installed (its
Bagua strategy imports DistributedDataParallel_V1_9_0)."""
import os
import sys

import pytest

from conftest import load_ranks, run_ranks

# pytorch_lightning 1.9.5 installed apart (pip --target, no dependencies) by
# setup.sh's python_test_deps: the venv's own pytorch_lightning is 2.x.
PL19 = os.path.join(sys.prefix, "pl19")


def case(outdir, name, extra=()):
    prefix = os.path.join(outdir, name)
    run = run_ranks("compat_job.py", 2, ["--case", name, "--out", prefix, *extra], timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    return load_ranks(prefix, 2)


def test_coalesced_collectives_over_two_dtypes(outdir):
    for r in case(outdir, "coalesced"):
        assert r["allreduce"] and r["dtypes_kept"] and r["broadcast"], r


def test_functional_all_reduce_sums_forward_and_backward(outdir):
    for r in case(outdir, "functional"):
        assert r["forward"] and r["input_untouched"] and r["backward"], r


def test_utils_flattened_calls_average(outdir):
    for r in case(outdir, "utils"):
        assert all(r[k] for k in ("averaged", "averaged_per_type", "views_contiguous",
                                  "separate_not_contiguous")), r


def test_lightning_1_9_strategy_wraps_and_reduces(outdir):
    if not os.path.isdir(os.path.join(PL19, "pytorch_lightning")):
        if os.environ.get("BAGUA_EXPECT_PL19"):
            pytest.fail(f"pytorch_lightning 1.9 is not in {PL19} (setup.sh python_test_deps)")
        pytest.skip(f"pytorch_lightning 1.9 is not in {PL19}")
    for r in case(outdir, "pl19", ["--pl19", PL19]):
        assert r["lightning"].startswith("1.9"), r
        assert r["unwrapped"] and r["module_name"] and r["inner_sync"], r
        assert r["gradients_averaged"], r
        assert r["reduce"] == [0.5, 1.0], r
        assert r["broadcast"] == {"from": 1}, r


def test_original_names_import_and_behave():
    import torch

    import bagua.torch_api as bagua
    from bagua.torch_api.algorithms import GlobalAlgorithmRegistry
    from bagua.torch_api.algorithms.bytegrad import ByteGradAlgorithm
    from bagua.torch_api.contrib.fuse.optimizer import fuse_optimizer, fuse_step, is_fused_optimizer
    from bagua.torch_api.data_parallel.distributed import (DistributedDataParallel,
                                                           DistributedDataParallel_V1_9_0)
    from bagua.torch_api.distributed import BaguaModule
    from bagua.torch_api.utils import flatten, get_flattened_tensor, to_bagua_datatype, unflatten

    assert bagua.BaguaModule is BaguaModule
    assert torch.nn.Module.with_bagua is BaguaModule.with_bagua
    assert issubclass(DistributedDataParallel_V1_9_0, DistributedDataParallel)
    # the registry's dict view holds Bagua's own algorithms too
    assert "bytegrad" in GlobalAlgorithmRegistry and "nope" not in GlobalAlgorithmRegistry
    assert GlobalAlgorithmRegistry["bytegrad"]["algorithm"] is ByteGradAlgorithm
    with pytest.raises(KeyError, match="unknown algorithm 'nope'"):
        GlobalAlgorithmRegistry["nope"]
    with pytest.raises(ValueError, match="unknown algorithm 'nope'"):
        GlobalAlgorithmRegistry.get("nope")
    # ... and iterating it lists them (the original's was a dict of all):
    # for name in registry, keys(), items(), len(), as argparse choices.
    original_six = {"gradient_allreduce", "bytegrad", "qadam", "decentralized",
                    "low_precision_decentralized", "async"}
    assert original_six <= set(GlobalAlgorithmRegistry)
    assert list(GlobalAlgorithmRegistry.keys()) == list(GlobalAlgorithmRegistry)
    assert len(GlobalAlgorithmRegistry) == len(list(GlobalAlgorithmRegistry))
    assert dict(GlobalAlgorithmRegistry.items())["bytegrad"]["algorithm"] is ByteGradAlgorithm
    # fused optimizer, under the original's names
    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([w], lr=0.5)
    assert not is_fused_optimizer(opt)
    with pytest.raises(ValueError, match="not fused"):
        fuse_step(opt)
    fuse_optimizer(opt)
    assert is_fused_optimizer(opt)
    w.grad = torch.full((3,), 2.0)
    fuse_step(opt)
    assert torch.equal(w.detach(), torch.zeros(3))
    # tensor helpers
    parts = [torch.arange(3.0), torch.arange(4.0).reshape(2, 2)]
    back = unflatten(flatten(parts), parts)
    assert all(torch.equal(a, b) for a, b in zip(back, parts))
    assert torch.equal(get_flattened_tensor(parts), torch.tensor([0., 1, 2, 0, 1, 2, 3]))
    assert get_flattened_tensor([]) is None
    assert to_bagua_datatype(torch.float16) == "f16"
    with pytest.raises(ValueError, match="unsupported data type"):
        to_bagua_datatype(torch.bool)
