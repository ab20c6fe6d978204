"""bagua.torch_api's communication primitives on CPU (Gloo) with 1-4
processes: every primitive, every dtype, every applicable ReduceOp, checked
against a reference built from torch.distributed's own Gloo; new_group with
a subset of ranks; disagreeing ranks get a clear error in bounded time."""
import os

import pytest

from conftest import load_ranks, run_ranks


@pytest.mark.parametrize("nproc", [1, 2, 3, 4])
def test_every_primitive_dtype_and_op(outdir, nproc):
    prefix = os.path.join(outdir, "comm")
    run = run_ranks("comm_job.py", nproc, ["--out", prefix], timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    for r in load_ranks(prefix, nproc):
        assert r["failures"] == [], r["failures"][:10]
        assert r["count"] > 250


@pytest.mark.parametrize("kind,message", [
    ("size", "ranks disagree"),
    ("dtype", "ranks disagree"),
    ("primitive", "ranks disagree"),
    ("bitwise_float", "needs an integer dtype"),
    # Gloo aborted the receiver (SIGABRT) on the larger one.
    ("alltoall_v_larger", "rank 0 sends 3 elements to rank 1, whose recv_counts[0] is 2"),
    ("alltoall_v_smaller", "rank 0 sends 1 elements to rank 1, whose recv_counts[0] is 2"),
])
def test_mismatch_is_a_clear_error_in_bounded_time(outdir, kind, message):
    prefix = os.path.join(outdir, kind)
    run = run_ranks("comm_job.py", 2, ["--out", prefix, "--mismatch", kind], timeout=120)
    assert run.returncode == 0, run.stderr[-4000:]
    for r in load_ranks(prefix, 2):
        assert r["error"] is not None and message in r["error"], r
        assert r["seconds"] < 30


def test_ranks_on_different_gpus_meet_under_one_store_key():
    # Ranks of one communicator on cuda:0 and cuda:2 (one process per GPU)
    # must find the NCCL unique id under the same key (issue 26: they did not).
    import torch

    from bagua.torch_api.process_group import _store_prefix

    keys = {_store_prefix("1", "ddp0", torch.device("cuda", i)) for i in range(4)}
    keys.add(_store_prefix("1", "ddp0", torch.device("cuda")))
    assert keys == {"bagua/pg/1/ddp0/cuda"}
    assert _store_prefix("1", "ddp0", torch.device("cpu")) == "bagua/pg/1/ddp0/cpu"


def test_shutdown_nccl_is_safe_to_call_in_any_build():
    # Called at exit by every process that made a CUDA communicator; with no
    # live NCCL communicator (or no NCCL in the build) it does nothing.
    from bagua import _C

    assert _C.shutdown_nccl() is None
    assert _C.shutdown_nccl() is None
