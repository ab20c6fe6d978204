"""Autotune of sync_every for local SGD and DiLoCo (docs/autotune.md): the
search on made-up step times (the smallest H within the tolerance of no
communication, in a few trials, also under noise), then 2 CPU processes
over Gloo (autotune_sync_job.py): the same changes on every rank at the
same steps, the start points still identical, the tuned schedule kept by
checkpoints and by a saved state; mismatched states and bad settings."""
import random

import pytest

from conftest import load_ranks, run_ranks
from bagua.torch_api.data_parallel.autotune import Autotune
from bagua.torch_api.data_parallel.autotune_sync_search import (REFERENCE, SyncEverySearch,
                                                                sync_candidates)

T0 = 0.010  # seconds per step with no communication


def run_search(cost_of, start=4, tolerance=0.05, budget=3000, noise=0.0, seed=0):
    """Drives the search: a trial at H measures T0 + cost_of(H) / H per step
    (REFERENCE: T0), up to `noise` slower at random."""
    rng = random.Random(seed)
    search = SyncEverySearch(sync_candidates(start, 4, 512), start, tolerance, budget, 2)
    trials = []
    while (trial := search.next_trial()) is not None:
        h, steps = trial
        base = T0 if h == REFERENCE else T0 + cost_of(h) / h
        search.report(h, base * (1 + rng.uniform(0, noise)))
        trials.append((h, steps))
    return search, trials


def smallest_passing(cost_of, tolerance=0.05):
    return min(h for h in sync_candidates(4, 4, 512) if T0 / (T0 + cost_of(h) / h) >= 1 - tolerance)


def test_candidates_are_powers_of_two_with_the_start_and_the_floor():
    assert sync_candidates(50, 4, 512) == [4, 8, 16, 32, 50, 64, 128, 256, 512]
    assert sync_candidates(8, 1, 16, fragments=4) == [4, 8, 16]
    assert sync_candidates(2, 1, 4, overlap=True) == [2, 4]


@pytest.mark.parametrize("sync_cost", [0.001, 0.02, 0.05, 0.1, 0.2])
def test_local_sgd_like_costs_find_the_smallest_passing_h_in_few_trials(sync_cost):
    """A blocking sync of fixed cost C per period: t(H) = T0 + C / H."""
    search, trials = run_search(lambda h: sync_cost)
    assert search.best() == smallest_passing(lambda h: sync_cost)
    assert len(trials) <= 5, trials
    assert search.used <= 3000


def test_overlapped_costs_that_shrink_with_h():
    """DiLoCo's overlap hides an exchange of X seconds behind H/2 steps:
    the visible cost max(0, X - (H/2) T0) plus a fixed 2 ms."""
    def cost(h):
        return max(0.0, 0.8 - h / 2 * T0) + 0.002
    search, trials = run_search(cost)
    assert search.best() == smallest_passing(cost)
    assert len(trials) <= 7, trials


def test_noise_leaves_the_winner_within_a_factor_of_two():
    """Steps up to 4% slower at random: the winner is the true one or its
    neighbour, over 30 seeds."""
    want = smallest_passing(lambda h: 0.1)
    for seed in range(30):
        search, _ = run_search(lambda h: 0.1, noise=0.04, seed=seed)
        assert want / 2 <= search.best() <= want * 2, (seed, search.best())


def test_a_link_too_slow_for_any_h_takes_the_fastest_measured():
    search, _ = run_search(lambda h: 1000.0)
    assert search.best() == 512 and not search.passes(512)


def test_a_small_budget_stops_early_with_what_was_measured():
    search, trials = run_search(lambda h: 1.0, budget=200)
    assert sum(steps for _, steps in trials) <= 200
    assert search.best() in [h for h, _ in trials]


def test_candidates_respect_what_diloco_allows():
    """H >= F, >= 2 with overlap, > an explicit tau: no candidate the runtime refuses."""
    from bagua.torch_api.algorithms.diloco import DiLoCoAlgorithm

    def floor(**options):
        return DiLoCoAlgorithm(**options).reify(None).sync_floor()

    assert floor() == 2 and floor(overlap=False) == 1 and floor(fragments=3) == 3
    assert floor(overlap_steps=10) == 11
    assert sync_candidates(16, 4, 64, fragments=floor(overlap_steps=10)) == [16, 32, 64]


def test_bad_settings_name_the_value():
    with pytest.raises(ValueError, match="min_sync_every=0"):
        Autotune(min_sync_every=0)
    with pytest.raises(ValueError, match="sync_every_tolerance=1.5"):
        Autotune(sync_every_tolerance=1.5)
    with pytest.raises(ValueError, match="above max_sync_every"):
        Autotune(min_sync_every=64, max_sync_every=8)


@pytest.fixture(scope="module", params=["local_sgd", "diloco"])
def job(request, tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("sync") / "job")
    result = run_ranks("autotune_sync_job.py", 2, ["--case", "search,mismatch,small_budget",
                                                   "--algorithm",
                                                   request.param, "--out", prefix], timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return request.param, load_ranks(prefix, 2), result


def test_every_rank_changes_sync_every_at_the_same_steps(job):
    name, (r0, r1), result = job
    state = r0["state"]
    assert state["status"] == "done" and r1["state"] == state, state
    assert state["knob"] == "sync_every" and state["algorithm"] == name
    assert r0["changes"] == r1["changes"]
    winner = state["winner"]["sync_every"]
    assert r0["changes"][-1][1] == winner and r0["final"][0] == winner
    # One change after each trial, to the next trial's H (the reference: H beyond its end).
    trials = state["trials"]
    assert [t["sync_every"] for t in trials[:2]] == [4, None]
    assert r0["changes"][0][1] > trials[1]["measured_steps"]
    assert [c[1] for c in r0["changes"][1:-1]] == [t["sync_every"] for t in trials[2:]]
    assert len(trials) >= 3  # the start fails: at least one probe
    # The job's clock: a step takes step_s + sync_s / H, so H=4 is far too often and
    # the winner is the smallest candidate within 5% of no sync.
    clock = r0["clock"]
    def ratio(h):
        return clock["step_s"] / (clock["step_s"] + clock["sync_s"] / h)
    assert state["start"]["ratio_to_no_communication"] == pytest.approx(ratio(4), rel=0.01)
    assert winner == min(h for h in state["candidates"] if ratio(h) >= 1 - state["tolerance"])
    assert state["winner"]["within_tolerance"]
    assert state["no_communication"]["step_time_s"] == pytest.approx(clock["step_s"], rel=0.01)
    assert "bagua autotune: done at step" in result.stderr
    if name == "diloco":
        assert r0["start_points_identical"] and r1["start_points_identical"]


def test_checkpoints_and_saved_states_keep_the_tuned_h(job):
    _, ranks, _ = job
    for r in ranks:
        assert r["mid_reference"] == 4  # not the trial's H beyond its end
        assert r["restored"] == r["final"]
        assert r["reused"] == {"status": "loaded", "sync_every": r["state"]["winner"]["sync_every"],
                               "changes_after_start": []}


def test_a_bucket_size_state_is_refused_by_name(job):
    _, ranks, _ = job
    for r in ranks:
        assert "holds a bucket size" in r["mismatch"] and "sync_every" in r["mismatch"]


def test_a_budget_too_small_for_the_starting_h_is_refused_at_wrapping(job):
    # (it failed with a TypeError at the first step after the algorithm's warm-up)
    _, ranks, _ = job
    for r in ranks:
        assert "above the budget of 2" in r["small_budget"], r["small_budget"]


def test_a_rank_that_applied_another_h_stops_every_rank(tmp_path):
    prefix = str(tmp_path / "job")
    result = run_ranks("autotune_sync_job.py", 2, ["--case", "diverge", "--out", prefix,
                                                   "--width", "64", "--budget", "100"],
                       timeout=120)
    assert result.returncode == 0, result.stderr[-4000:]
    for r in load_ranks(prefix, 2):
        assert r["diverge"] is not None and "ranks disagree at step" in r["diverge"], r
