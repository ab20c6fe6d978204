"""with_bagua's edge cases (wrapper_job.py): gradients of unused parameters,
evaluation on one rank, ignored state, checkpoints of a model with a child
called `module`, refused models, overlapping groups, wrapping twice."""
import os

from conftest import load_ranks, run_ranks


def job(outdir, case, nproc=2, timeout=120):
    prefix = os.path.join(outdir, case)
    # A collective that waits for a rank that never comes fails in 20 s.
    result = run_ranks("wrapper_job.py", nproc, ["--case", case, "--out", prefix],
                       timeout=timeout, env={"BAGUA_TIMEOUT_S": "20"})
    assert result.returncode == 0, result.stderr[-4000:]
    return load_ranks(prefix, nproc)


def test_an_unused_parameter_keeps_the_gradient_it_has(outdir):
    """Loss 1 uses a and b, loss 2 only a (several losses per step, as a GAN's):
    b keeps its (averaged) gradient of loss 1, as in torch DDP; it was zeroed."""
    for r in job(outdir, "kept_grad"):
        assert r["first"] == [1.5, 1.5], r
        assert r["second"] == r["first"], r


def test_one_rank_evaluating_alone_does_not_wait_for_the_others(outdir):
    for r in job(outdir, "eval_alone"):
        assert r["done"]


def test_ignored_parameters_and_buffers_stay_each_ranks_own(outdir):
    for r in job(outdir, "ignored"):
        assert r["bias_kept_at_wrap"], r
        assert r["local_at_wrap"] == [float(r["rank"])] * 2, r
        assert r["local_after_forward"] == [float(r["rank"])] * 2, r
        assert r["shared_after_forward"] == [0.0, 0.0], r  # rank 0's, broadcast


def test_a_model_with_a_child_called_module_is_checkpointed_whole(outdir):
    for r in job(outdir, "checkpoint"):
        assert r["same"], r
        assert r["keys"] == ["head.bias", "head.weight", "module.bias", "module.weight"], r


def test_sparse_embeddings_and_models_converted_after_wrapping_are_refused(outdir):
    for r in job(outdir, "refused"):
        assert "sparse=True" in r["sparse"], r
        assert "changed after with_bagua" in r["converted"], r
        assert "torch.float32" in r["converted"] and "torch.float64" in r["converted"], r


def test_wrapping_a_module_again_replaces_its_engine(outdir):
    """The first DistributedDataParallel's engine was left with its hooks,
    communicating every step beside the second's."""
    for r in job(outdir, "rewrapped"):
        assert r["first_closed"] and r["second_closed"], r
        assert r["forward_hooks"] == 1, r
        assert (r["first_count"], r["second_count"]) == (0, 1), r


def test_models_on_overlapping_groups_agree_on_their_engines(outdir):
    ranks = job(outdir, "overlapping", nproc=3)
    assert [r["trained"] for r in ranks] == [[[0, 1]], [[0, 1], [1, 2]], [[1, 2]]]


def test_optimizer_state_travels_on_the_parameters_device(outdir):
    """Rank 0's momentum reaches rank 1 at wrapping, broadcast on the
    parameters' device (the current CUDA device may be another GPU)."""
    zero, one = job(outdir, "state_device")
    assert zero["momentum"] and one["momentum"] == zero["momentum"], (zero, one)


def test_a_forward_under_no_grad_on_one_rank_is_no_step_for_autotune(outdir):
    """A logged prediction on rank 0 (train mode, no_grad) while autotune
    searches counts no step: the counters agree (they were 54 against 40, and
    with decisions falling on different steps the ranks' collectives stopped
    matching: a deadlock until the timeout)."""
    zero, one = job(outdir, "nograd_autotune")
    assert zero["done"] and one["done"]
    assert zero["steps"] == one["steps"], (zero, one)
