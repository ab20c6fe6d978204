"""LoadBalancingDistributedSampler and LoadBalancingDistributedBatchSampler:
the original's scheme (checked against a plain transcription of the
reference's description), balance on a skewed length distribution,
determinism, resuming mid-epoch, equal batch counts, the token budget, and
clear errors for bad input. Pure Python: no processes."""
import math

import numpy as np
import pytest
import torch
from torch.utils.data import DistributedSampler

from bagua.torch_api.contrib import (LoadBalancingDistributedBatchSampler,
                                     LoadBalancingDistributedSampler)

R = 4


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"length": LENGTHS[i % len(LENGTHS)]}


def skewed(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(4.5, 0.9, n), 4, 2048).astype(np.int64)


LENGTHS = skewed(4000)


def samplers(lengths=LENGTHS, **kw):
    return [LoadBalancingDistributedSampler(Sized(len(lengths)), lengths=lengths, num_replicas=R,
                                            rank=r, **kw) for r in range(R)]


def reference_indices(complexities, num_replicas, rank, seed, epoch, random_level, drop_last):
    """The reference's description, written plainly (section 5.3)."""
    n = len(complexities)
    if drop_last and n % num_replicas:
        num_samples = math.ceil((n - num_replicas) / num_replicas)
    else:
        num_samples = math.ceil(n / num_replicas)
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    spread = int((max(complexities) - min(complexities)) * random_level + 1)
    noise = torch.randint(spread, (n,), generator=g).tolist()
    order = sorted(range(n), key=lambda i: complexities[i] + noise[i])
    chunks = []
    for c in range(max(1, num_samples)):
        chunks.append([order[(c * num_replicas + j) % n] for j in range(num_replicas)])
    perm = torch.randperm(len(chunks), generator=g).tolist()[:num_samples]
    return [chunks[c][rank] for c in perm]


@pytest.mark.parametrize("n,random_level,drop_last", [(1000, 0, False), (1003, 0.3, False),
                                                      (1003, 0.1, True), (3, 0, False)])
def test_matches_the_reference_scheme(n, random_level, drop_last):
    lengths = skewed(n, seed=n).tolist()
    for rank in range(R):
        s = LoadBalancingDistributedSampler(Sized(n), lengths=lengths, num_replicas=R, rank=rank,
                                            seed=7, random_level=random_level, drop_last=drop_last)
        for epoch in (0, 3):
            s.set_epoch(epoch)
            assert list(s) == reference_indices(lengths, R, rank, 7, epoch, random_level,
                                                drop_last)


def test_complexity_fn_and_lengths_agree():
    by_fn = LoadBalancingDistributedSampler(Sized(500), lambda s: s["length"], num_replicas=R,
                                            rank=1)
    by_len = LoadBalancingDistributedSampler(Sized(500), lengths=LENGTHS[:500], num_replicas=R,
                                             rank=1)
    assert list(by_fn) == list(by_len)


def per_step_spread(per_rank_costs):
    costs = np.array(per_rank_costs, dtype=np.float64)  # ranks x steps
    return float(np.mean(costs.max(axis=0) - costs.min(axis=0)) / costs.mean())


def test_every_step_is_balanced_on_a_skewed_distribution():
    ranks = samplers()
    balanced = per_step_spread([LENGTHS[s.indices()] for s in ranks])
    plain = per_step_spread([LENGTHS[list(DistributedSampler(Sized(len(LENGTHS)), R, r, seed=0))]
                             for r in range(R)])
    assert balanced < 0.05, balanced
    assert plain > 0.5, plain  # what DistributedSampler gives on the same data
    # Every sample once (no drop_last: the few padded repeats aside).
    seen = np.concatenate([s.indices() for s in ranks])
    assert set(seen.tolist()) == set(range(len(LENGTHS))) and len(seen) == ranks[0].total_size


def test_token_batches_are_balanced_equal_in_number_and_within_budget():
    budget = 4096
    for padded in (True, False):
        ranks = [LoadBalancingDistributedBatchSampler(s, max_tokens=budget, padded=padded)
                 for s in samplers(seed=3)]
        for epoch in (0, 1):
            for b in ranks:
                b.set_epoch(epoch)
            batches = [list(b) for b in ranks]
            assert len({len(b) for b in batches}) == 1 and len(ranks[0]) == len(batches[0])
            for rank_batches in batches:
                for batch in rank_batches:
                    cost = LENGTHS[batch]
                    used = len(batch) * cost.max() if padded else cost.sum()
                    assert used <= budget
            tokens = [[LENGTHS[b].sum() for b in rank_batches] for rank_batches in batches]
            assert per_step_spread(tokens) < 0.05
            everything = sorted(i for rank_batches in batches for b in rank_batches for i in b)
            assert everything == sorted(np.concatenate([s.indices(epoch) for s in
                                                        (b.sampler for b in ranks)]).tolist())
        # Padding to the batch's longest sample wastes little: lengths are sorted within windows.
        if padded:
            real = sum(LENGTHS[b].sum() for b in batches[0])
            padded_total = sum(len(b) * LENGTHS[b].max() for b in batches[0])
            assert real / padded_total > 0.9


def test_deterministic_per_seed_and_epoch():
    a, b, c = (samplers(seed=s)[0] for s in (5, 5, 6))
    assert list(a) == list(b) and list(a) != list(c)
    a.set_epoch(1)
    assert list(a) != list(b)
    ta, tb = (LoadBalancingDistributedBatchSampler(s, max_tokens=3000) for s in
              (samplers(seed=5)[2], samplers(seed=5)[2]))
    assert list(ta) == list(tb)


@pytest.mark.parametrize("batched", [False, True])
def test_resume_mid_epoch_continues_the_same_sequence(batched):
    def make():
        s = samplers(seed=11)[1]
        return LoadBalancingDistributedBatchSampler(s, max_tokens=5000) if batched else s

    full = make()
    full.set_epoch(2)
    expected = list(full)
    run = make()
    run.set_epoch(2)
    it = iter(run)
    k = 11 if batched else 37
    assert len(expected) > 2 * k
    head = [next(it) for _ in range(k)]
    state = run.state_dict()
    assert state["consumed"] == k and state["epoch"] == 2
    resumed = make()
    resumed.load_state_dict(state)
    resumed.set_epoch(2)  # the training loop's call for the resumed epoch keeps the position
    assert head + list(resumed) == expected
    resumed.set_epoch(3)  # the next epoch starts at its beginning
    full.set_epoch(3)
    assert list(resumed) == list(full)
    other = LoadBalancingDistributedSampler(Sized(len(LENGTHS)), lengths=LENGTHS, num_replicas=2,
                                            rank=0, seed=11)
    with pytest.raises(ValueError, match="num_replicas=4, this one has 2"):
        (LoadBalancingDistributedBatchSampler(other, max_tokens=5000) if batched
         else other).load_state_dict(state)


def test_batch_fn_batches_are_padded_to_equal_counts():
    def batch_fn(indices):  # variable counts per rank: rank-dependent batch sizes
        size = 3 if indices[0] % 2 else 10
        return [indices[i:i + size] for i in range(0, len(indices), size)]

    ranks = [LoadBalancingDistributedBatchSampler(s, batch_fn) for s in samplers(LENGTHS[:100])]
    counts = {len(list(b)) for b in ranks}
    assert len(counts) == 1
    dropped = [LoadBalancingDistributedBatchSampler(s, batch_fn, drop_last=True)
               for s in samplers(LENGTHS[:100])]
    assert len({len(list(b)) for b in dropped}) == 1
    assert len(dropped[0]) <= len(ranks[0])


def test_negative_complexities_order_the_samples_as_the_originals_did():
    """complexity_fn=lambda x: -len(x) (longest first) was accepted by the
    original: the ranks still split every sample exactly once."""
    seen = []
    for rank in range(2):
        s = LoadBalancingDistributedSampler(Sized(6), lambda sample: -sample["length"],
                                            num_replicas=2, rank=rank, shuffle=False)
        seen += list(s)
    assert sorted(seen) == list(range(6))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="lengths has 10 entries, the dataset 12"):
        LoadBalancingDistributedSampler(Sized(12), lengths=[1] * 10, num_replicas=2, rank=0)
    with pytest.raises(ValueError, match="complexity of sample 1 is nan"):
        LoadBalancingDistributedSampler(Sized(3), lengths=[1, float("nan"), 2], num_replicas=2,
                                        rank=0)
    with pytest.raises(ValueError, match="complexity of sample 2 is inf"):
        LoadBalancingDistributedSampler(Sized(3), lengths=[1, 2, float("inf")], num_replicas=2,
                                        rank=0)
    negative = LoadBalancingDistributedSampler(Sized(5), lengths=[1, 2, 3, -2, 5],
                                               num_replicas=2, rank=0)
    with pytest.raises(ValueError, match="max_tokens needs complexities >= 0; sample 3's is -2"):
        LoadBalancingDistributedBatchSampler(negative, max_tokens=100)
    with pytest.raises(ValueError, match="not both"):
        LoadBalancingDistributedSampler(Sized(3), len, num_replicas=2, rank=0, lengths=[1, 2, 3])
    with pytest.raises(ValueError, match="Invalid rank 2"):
        LoadBalancingDistributedSampler(Sized(3), lengths=[1, 2, 3], num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid random level 2"):
        LoadBalancingDistributedSampler(Sized(3), lengths=[1, 2, 3], num_replicas=2, rank=0,
                                        random_level=2)
    s = LoadBalancingDistributedSampler(Sized(3), lengths=[1, 200, 3], num_replicas=2, rank=0)
    with pytest.raises(ValueError, match="sample 1 alone has complexity 200 > max_tokens=100"):
        LoadBalancingDistributedBatchSampler(s, max_tokens=100)
    with pytest.raises(ValueError, match="batch_fn or max_tokens"):
        LoadBalancingDistributedBatchSampler(s)
    with pytest.raises(ValueError, match="consumed must be an int in"):
        s.state_dict(consumed=99)
