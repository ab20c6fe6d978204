"""Local SGD and DiLoCo on CPU (Gloo), 2 and 4 processes, against pure
torch.distributed references written in local_updates_job.py: local SGD
with sync_every=1 is gradient allreduce, DiLoCo with sync_every=1, outer_lr=1,
outer_momentum=0 is parameter averaging, and streaming DiLoCo (fragments,
overlap, Nesterov outer momentum) follows its documented schedule, delay
and mixing rule; checkpoints restart exactly; bad input names the argument.
Convergence on a character-level language model: bench/cpu/diloco_convergence.py
(too slow for CI; its result is in bench/results)."""
import os

import pytest

from conftest import load_ranks, run_ranks

ALL = "local_sgd_vs_allreduce,diloco_vs_averaging,diloco_vs_reference"


def run(outdir, nproc, cases):
    prefix = os.path.join(outdir, f"local{nproc}")
    result = run_ranks("local_updates_job.py", nproc, ["--cases", cases, "--out", prefix],
                      timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return load_ranks(prefix, nproc)


def check_references(ranks, h=4, fragments=2, tau=2, steps=13):
    for r in ranks:
        assert r["local_sgd_max_diff"] <= 1e-6, r["local_sgd_max_diff"]
        assert r["local_sgd_syncs"] == 6
        assert r["local_sgd_weights"] == ranks[0]["local_sgd_weights"]
        assert r["averaging_max_diff"] <= 1e-6, r["averaging_max_diff"]
        assert r["averaging_weights"] == ranks[0]["averaging_weights"]
        assert r["reference_max_diff"] <= 1e-5, r["reference_max_diff"]
        assert r["reference_max_x0_diff"] <= 1e-5, r["reference_max_x0_diff"]
        assert r["start_points_identical"]
        schedule = {f: [s for s in range(1, steps + 1)
                        if s >= (f + 1) * h // fragments and (s - (f + 1) * h // fragments) % h == 0]
                    for f in range(fragments)}
        assert schedule == {0: [2, 6, 10], 1: [4, 8, 12]}
        for f in range(fragments):
            # The start point moves at the fragment's syncs and nowhere else.
            assert r["x0_changed_at"][str(f)] == schedule[f], (f, r["x0_changed_at"])
            for step, per_fragment in enumerate(r["sync_log"], start=1):
                sent = [s for s in schedule[f] if s <= step]
                applied = [s + tau for s in schedule[f] if s + tau <= step]
                assert per_fragment[f] == [sent[-1] if sent else 0,
                                           applied[-1] if applied else 0], (f, step)
        assert r["local_steps"] == steps
        assert r["bytes_per_step"] > 0


def test_two_processes_references_checkpoint_and_bad_fragments(outdir):
    ranks = run(outdir, 2, ALL + ",checkpoint,bad_fragments")
    check_references(ranks)
    for r in ranks:
        assert r["checkpoint_max_diff"] == 0.0, r["checkpoint_max_diff"]
        assert r["checkpoint_due"] == [8, 0]  # saved with fragment 0's update in flight
        assert "_bagua_diloco.x0.0" in r["checkpoint_keys"]
        assert "_bagua_diloco.residual.1" in r["checkpoint_keys"]
        assert "fragments (9) is larger than the number of parameter tensors (8)" in \
            r["bad_fragments_error"], r["bad_fragments_error"]


def test_four_processes_references(outdir):
    check_references(run(outdir, 4, ALL))


def test_bad_options_name_the_argument():
    from bagua.torch_api.algorithms import diloco, local_sgd

    with pytest.raises(ValueError, match="local_sgd: sync_every must be at least 1, got 0"):
        local_sgd.LocalSGDAlgorithm(sync_every=0)
    with pytest.raises(ValueError, match="diloco: sync_every must be at least 1, got 0"):
        diloco.DiLoCoAlgorithm(sync_every=0, overlap=False)
    with pytest.raises(ValueError, match="compression must be None .* got 'zstd'"):
        diloco.DiLoCoAlgorithm(compression="zstd")
    with pytest.raises(ValueError, match="fragments \\(8\\) must not exceed sync_every \\(4\\)"):
        diloco.DiLoCoAlgorithm(sync_every=4, fragments=8)
    with pytest.raises(ValueError, match="overlap needs sync_every >= 2"):
        diloco.DiLoCoAlgorithm(sync_every=1)
    with pytest.raises(ValueError, match="warmup_steps must be >= 0"):
        diloco.DiLoCoAlgorithm(warmup_steps=-1)


def test_selectable_by_name_everywhere():
    import bagua.registry as registry
    from bagua.torch_api.algorithms import Algorithm, diloco, local_sgd
    from lightning_bagua import BaguaStrategy

    assert {"local_sgd", "diloco"} <= set(registry.available())
    assert isinstance(Algorithm.init("diloco", sync_every=50, compression="fp4"),
                      diloco.DiLoCoAlgorithm)
    assert isinstance(Algorithm.init("local_sgd", sync_every=50), local_sgd.LocalSGDAlgorithm)
    assert BaguaStrategy(algorithm="diloco", sync_every=50, compression=None).algorithm == "diloco"
    with pytest.raises(ValueError, match="fragments \\(8\\) must not exceed sync_every \\(4\\)"):
        BaguaStrategy(algorithm="diloco", sync_every=4, fragments=8)
