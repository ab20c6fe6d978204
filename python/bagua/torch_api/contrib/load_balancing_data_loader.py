"""Load-balanced distributed sampling (the original's scheme, plus lengths
from metadata, token-budget batches and resumable state).

Each epoch: sort the samples by complexity (with `random_level` noise), cut
the sorted list into chunks of `num_replicas` consecutive samples (wrapping
around to fill the last), shuffle the chunks' order with a generator seeded
by seed + epoch, and give rank r element r of every chunk. At every step the
ranks then hold samples of nearly equal complexity, so none waits for a
straggler. The generator is drawn from exactly as the original does, so the
same arguments give the original's order.

New here:
- `lengths=`: complexities as an array (from an index file, a manifest),
  instead of `complexity_fn` applied to every sample (which loads each one).
- LoadBalancingDistributedBatchSampler(sampler, max_tokens=...): batches cut
  so that no rank's batch exceeds the token budget (padded to the batch's
  longest sample, or summed with padded=False), the same count on every
  rank, and similar work on every rank at every step.
- state_dict()/load_state_dict(): resume in the middle of an epoch.
"""
import math

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data.sampler import Sampler

from .. import env

__all__ = ["LoadBalancingDistributedSampler", "LoadBalancingDistributedBatchSampler"]


def _job_size_and_rank(num_replicas, rank):
    initialized = dist.is_available() and dist.is_initialized()
    if num_replicas is None:
        num_replicas = dist.get_world_size() if initialized else env.get_world_size()
    if rank is None:
        rank = dist.get_rank() if initialized else env.get_rank()
    if isinstance(num_replicas, bool) or not isinstance(num_replicas, int) or num_replicas < 1:
        raise ValueError(f"num_replicas must be an int >= 1, got {num_replicas!r}")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < num_replicas:
        raise ValueError(f"Invalid rank {rank!r}, rank should be in the interval "
                         f"[0, {num_replicas - 1}]")
    return num_replicas, rank


def _checked_complexities(values, size, source):
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{source} must be numbers: {e}") from e
    if array.ndim != 1 or len(array) != size:
        raise ValueError(f"{source} has {array.shape[0] if array.ndim == 1 else array.shape} "
                         f"entries, the dataset {size}: one complexity per sample is needed")
    # Any finite numbers order the samples (the original accepted e.g.
    # -len(x)); max_tokens batching needs them >= 0 and checks that itself.
    bad = np.flatnonzero(~np.isfinite(array))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"{source}: complexity of sample {i} is {values[i]!r}; complexities "
                         f"must be finite ({len(bad)} bad in all)")
    if np.all(array == np.floor(array)) and array.max(initial=0) < 2**62:
        return array.astype(np.int64)
    return array


class _Resumable:
    """Position bookkeeping shared by both samplers: how many items of the
    current epoch were handed out, and where a loaded state resumes."""

    def _init_position(self):
        self.epoch = 0
        self._consumed = 0
        self._resume_at = 0

    def _iterate(self, items):
        start, self._resume_at = self._resume_at, 0
        self._consumed = start
        for item in items[start:]:
            self._consumed += 1
            yield item

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch (the shuffle's seed is seed + epoch). Call it before
        each epoch's iterator; a resumed state's epoch keeps its position."""
        if epoch != self.epoch:
            self._resume_at = 0
        self.epoch = epoch

    def _state(self, consumed, identity):
        consumed = self._consumed if consumed is None else consumed
        if isinstance(consumed, bool) or not isinstance(consumed, int) or \
                not 0 <= consumed <= len(self):
            raise ValueError(f"consumed must be an int in [0, {len(self)}], got {consumed!r}")
        return dict(identity, epoch=self.epoch, consumed=consumed)

    def _load(self, state, identity):
        for name, value in identity.items():
            if state.get(name) != value:
                raise ValueError(f"cannot resume: the saved sampler had {name}="
                                 f"{state.get(name)!r}, this one has {value!r}")
        self.epoch = int(state["epoch"])
        self._resume_at = self._consumed = int(state["consumed"])
        if not 0 <= self._resume_at <= len(self):
            raise ValueError(f"cannot resume at item {self._resume_at} of an epoch of {len(self)}")


class LoadBalancingDistributedSampler(_Resumable, Sampler):
    r"""A DistributedSampler that gives every rank, at every step, a sample of
    nearly the same complexity.

    Args:
        dataset: the dataset (only its length is used when `lengths` is given).
        complexity_fn: sample -> complexity (a number >= 0), applied to every
            sample at construction (the original's way; loads each sample).
        num_replicas, rank: the job's size and this rank (default: from
            torch.distributed, else WORLD_SIZE and RANK).
        shuffle: shuffle the chunks' order each epoch (seed + epoch).
        seed: the same on every rank.
        drop_last: drop the tail (the most complex samples, as the original)
            so that the length divides evenly; else wrap around.
        random_level: in [0, 1]; integer noise up to random_level x (max - min)
            added to complexities before sorting: batches vary more across
            epochs, balance less.
        lengths: complexities as a sequence or array, one per sample, instead
            of complexity_fn.
    """

    def __init__(self, dataset, complexity_fn=None, num_replicas=None, rank=None, shuffle=True,
                 seed=0, drop_last=False, random_level=0, lengths=None):
        self.num_replicas, self.rank = _job_size_and_rank(num_replicas, rank)
        self.dataset = dataset
        size = len(dataset)
        if lengths is not None and complexity_fn is not None:
            raise ValueError("pass complexity_fn or lengths, not both")
        if lengths is not None:
            self.complexities = _checked_complexities(lengths, size, "lengths")
        elif callable(complexity_fn):
            values = [complexity_fn(dataset[i]) for i in range(size)]
            self.complexities = _checked_complexities(values, size, "complexity_fn's results")
        else:
            raise ValueError(f"complexity_fn must be callable (or pass lengths=), got "
                             f"{complexity_fn!r}")
        if isinstance(random_level, bool) or not isinstance(random_level, (int, float)) or \
                not 0.0 <= random_level <= 1.0:
            raise ValueError(f"Invalid random level {random_level!r}, should be in the range "
                             "[0.0, 1.0]")
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.random_level = random_level
        if self.drop_last and size % self.num_replicas != 0:
            self.num_samples = math.ceil((size - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(size / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        c = self.complexities
        spread = float(c.max() - c.min()) if len(c) else 0.0
        self.random_number = int(spread * random_level + 1)
        self._sorted = np.argsort(self.complexities, kind="stable")
        self._init_position()

    def chunks(self, epoch=None):
        """(chunks, order) of an epoch: chunks[c] holds num_replicas sample
        indices of adjacent complexity; the epoch visits chunks[order[i]] at
        step i, rank r taking element r."""
        epoch = self.epoch if epoch is None else epoch
        size = len(self.complexities)
        num_chunks = max(1, self.num_samples)
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.seed + epoch)
            if self.random_number > 0:  # always, as the original (noise 0 at level 0)
                noise = torch.randint(self.random_number, (size,), generator=g).numpy()
                ordered = np.argsort(self.complexities + noise, kind="stable")
            else:
                ordered = self._sorted
            order = torch.randperm(num_chunks, generator=g).numpy()
        else:
            ordered = self._sorted
            order = np.arange(num_chunks)
        if size == 0:
            return np.zeros((0, self.num_replicas), dtype=np.int64), order[:0]
        padded = ordered[np.arange(num_chunks * self.num_replicas) % size]
        return padded.reshape(num_chunks, self.num_replicas), order[:self.num_samples]

    def indices(self, epoch=None, rank=None):
        """This rank's (or `rank`'s) sample indices for the epoch."""
        chunks, order = self.chunks(epoch)
        return chunks[order, self.rank if rank is None else rank].tolist()

    def __iter__(self):
        return self._iterate(self.indices())

    def __len__(self):
        return self.num_samples

    def _identity(self):
        return {"num_replicas": self.num_replicas, "dataset_size": len(self.complexities),
                "seed": self.seed, "shuffle": self.shuffle, "drop_last": self.drop_last,
                "random_level": self.random_level}

    def state_dict(self, consumed=None):
        """Epoch and position, to resume mid-epoch. `consumed`: samples the
        training loop has used this epoch (default: handed out by this
        sampler, which runs ahead of the loop by the DataLoader's prefetch).
        The same on every rank: saving rank 0's is enough."""
        return self._state(consumed, self._identity())

    def load_state_dict(self, state):
        """Resumes: the next iterator continues the saved epoch where it
        stopped. Raises ValueError if the job or the dataset differ."""
        self._load(state, self._identity())


class LoadBalancingDistributedBatchSampler(_Resumable, Sampler):
    r"""Batches over a LoadBalancingDistributedSampler, the same number on every
    rank.

    Args:
        sampler: a LoadBalancingDistributedSampler with drop_last=False.
        batch_fn: indices -> list of batches (the original's way): applied to
            every rank's indices; ranks with fewer batches repeat their first
            ones (drop_last=False) or the others drop their last (True).
        drop_last: see batch_fn.
        max_tokens: instead of batch_fn: batches of consecutive chunks, sorted
            by complexity within windows of `sort_window` chunks, cut so that
            on every rank len(batch) x longest sample <= max_tokens (or, with
            padded=False, the sum of the samples' complexities), then
            shuffled. A sample alone above max_tokens is an error.
    """

    def __init__(self, sampler, batch_fn=None, drop_last=False, *, max_tokens=None,
                 sort_window=1024, padded=True):
        if not isinstance(sampler, LoadBalancingDistributedSampler):
            raise ValueError("sampler should be of LoadBalancingDistributedSampler type.")
        if sampler.drop_last:
            raise ValueError("drop_last of sampler should be False")
        if (batch_fn is None) == (max_tokens is None):
            raise ValueError("pass batch_fn or max_tokens (one of them)")
        if max_tokens is not None:
            if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, float)) or \
                    max_tokens <= 0:
                raise ValueError(f"max_tokens must be a positive number, got {max_tokens!r}")
            negative = np.flatnonzero(sampler.complexities < 0)
            if len(negative):
                i = int(negative[0])
                raise ValueError(f"max_tokens needs complexities >= 0; sample {i}'s is "
                                 f"{sampler.complexities[i]} ({len(negative)} negative in all)")
            too_long = np.flatnonzero(sampler.complexities > max_tokens)
            if len(too_long):
                i = int(too_long[0])
                raise ValueError(f"sample {i} alone has complexity {sampler.complexities[i]} > "
                                 f"max_tokens={max_tokens} ({len(too_long)} such samples): "
                                 "raise max_tokens or filter them out")
        if isinstance(sort_window, bool) or not isinstance(sort_window, int) or sort_window < 1:
            raise ValueError(f"sort_window must be an int >= 1, got {sort_window!r}")
        self.sampler = sampler
        self.batch_fn = batch_fn
        self.drop_last = bool(drop_last)
        self.max_tokens = max_tokens
        self.sort_window = sort_window
        self.padded = bool(padded)
        self.num_replicas = sampler.num_replicas
        self.rank = sampler.rank
        self._cache = None
        self._init_position()
        self.epoch = sampler.epoch

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.sampler.set_epoch(epoch)

    def all_batches(self, epoch=None):
        """Every rank's batches for the epoch: a list (one per rank) of lists
        of index lists, all of the same length."""
        epoch = self.epoch if epoch is None else epoch
        if self._cache is not None and self._cache[0] == epoch:
            return self._cache[1]
        chunks, order = self.sampler.chunks(epoch)
        if self.batch_fn is not None:
            batches = self._batches_by_fn(chunks, order)
        else:
            batches = self._batches_by_tokens(chunks, order, epoch)
        self._cache = (epoch, batches)
        return batches

    def _batches_by_fn(self, chunks, order):
        per_rank = [list(self.batch_fn(chunks[order, r].tolist()))
                    for r in range(self.num_replicas)]
        counts = [len(b) for b in per_rank]
        total = min(counts) if self.drop_last else max(counts)
        if total > 0 and min(counts) == 0:
            raise ValueError("batch_fn returned no batch for some rank: nothing to repeat")
        # Repeat a rank's first batches (cyclically: the original's single
        # repetition fell short when a rank had less than half the batches).
        return [[b[i % len(b)] for i in range(total)] for b in per_rank]

    def _batches_by_tokens(self, chunks, order, epoch):
        cost = self.sampler.complexities[chunks[order]].max(axis=1) if len(order) else []
        groups = []  # positions (steps of the sampler's epoch) per batch
        for start in range(0, len(order), self.sort_window):
            window = np.arange(start, min(start + self.sort_window, len(order)))
            window = window[np.argsort(cost[window], kind="stable")]
            current, longest, total = [], 0, 0
            for pos in window.tolist():
                c = cost[pos]
                longest_if, total_if = max(longest, c), total + c
                used = (len(current) + 1) * longest_if if self.padded else total_if
                if current and used > self.max_tokens:
                    groups.append(current)
                    current, longest_if, total_if = [], c, c
                current.append(pos)
                longest, total = longest_if, total_if
            if current:
                groups.append(current)
        if self.sampler.shuffle:
            rng = np.random.default_rng([self.sampler.seed, epoch])
            groups = [groups[i] for i in rng.permutation(len(groups))]
        steps = [order[g] for g in groups]
        return [[chunks[s, r].tolist() for s in steps] for r in range(self.num_replicas)]

    def __iter__(self):
        return self._iterate(self.all_batches()[self.rank])

    def __len__(self):
        return len(self.all_batches()[self.rank])

    def _identity(self):
        return dict(self.sampler._identity(), max_tokens=self.max_tokens,
                    sort_window=self.sort_window, padded=self.padded, drop_last=self.drop_last)

    def state_dict(self, consumed=None):
        """Epoch and position in batches (`consumed`: batches the training
        loop has used this epoch; default: handed out by this sampler)."""
        return self._state(consumed, self._identity())

    def load_state_dict(self, state):
        """Resumes mid-epoch; raises ValueError if the job or data differ."""
        self._load(state, self._identity())
        self.sampler.epoch = self.epoch
