"""The autotuner's search: successive halving over bucket plans.

Pure logic, no communication (autotune.py runs it on rank 0 and broadcasts
its decisions). The candidates are configurations (bucket size, hierarchical
on/off) whose bucket plans differ; the budget is a number of training steps.

Successive halving (Jamieson and Talwalkar, 2016): every candidate gets a
short trial; the faster half is kept and each survivor gets a trial twice as
long; and so on until one is left. Each round spends about the same share
of the budget, so R = ceil(log2(K)) rounds of about budget / R steps. A
trial's first `warmup_steps` steps after the buckets are rebuilt are not
measured (allocations, the first launch of each bucket). Each round ranks
its candidates by the lower quartile of the step times measured in that
round: measured close together in time, and in alternating order from round
to round, so that a machine warming up or getting busier (seen here: 2x
over the first second) does not favour the candidates measured last.

Why not a Gaussian process (the original's scikit-optimize) or optuna: the
space is a few dozen discrete points at most, once configurations with
identical bucket plans are merged, and often fewer than ten; the budget is
a few hundred noisy steps. A GP needs about as many initial random points as
there are candidates before it models anything (the original used 20), and
it adds a dependency every rank must have in the same version; successive
halving needs none, is deterministic, and gives every survivor more
measurements as the gap between them narrows.
"""
import math


class Candidate:
    """One configuration to try: `bucket_bytes`, `hierarchical` (None where
    the algorithm has no such option) and the number of buckets it plans."""

    def __init__(self, bucket_bytes, hierarchical, buckets):
        self.bucket_bytes = int(bucket_bytes)
        self.hierarchical = hierarchical
        self.buckets = int(buckets)
        self.samples = []  # seconds per measured step, every trial

    def score(self):
        """Step time in seconds: the lower quartile of every measured step
        (inf before any). Interference from other processes only ever adds
        time, often for several steps in a row, so a low quantile tracks the
        configuration's own cost better than the median or the mean."""
        return lower_quartile(self.samples)

    def describe(self):
        size = format_bytes(self.bucket_bytes)
        hier = "" if self.hierarchical is None else \
            (", hierarchical" if self.hierarchical else ", flat")
        return f"bucket {size} ({self.buckets} buckets{hier})"

    def as_dict(self):
        return {"bucket_bytes": self.bucket_bytes, "hierarchical": self.hierarchical,
                "buckets": self.buckets}


def lower_quartile(values):
    if not values:
        return math.inf
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 4]


def format_bytes(n):
    if n >= 2**20:
        return f"{n / 2**20:.3g} MiB"
    return f"{n / 2**10:.3g} KiB"


class SuccessiveHalving:
    """The schedule of trials: next_trial() -> (candidate index, steps) until
    it returns None; report(index, step_seconds) after each trial. Index 0 is
    the starting configuration: it is tried first (no rebuild)."""

    def __init__(self, candidates, budget_steps, warmup_steps, min_measured=2):
        if not candidates:
            raise ValueError("autotune: no candidate configuration")
        self.candidates = list(candidates)
        self.budget_steps = int(budget_steps)
        self.warmup_steps = int(warmup_steps)
        self.survivors = list(range(len(self.candidates)))
        self.rounds = max(1, math.ceil(math.log2(len(self.candidates)))) \
            if len(self.candidates) > 1 else 0
        self.round = 0
        self._queue = []
        self._per_round = self.budget_steps // self.rounds if self.rounds else 0
        if not self.fits(len(self.candidates), budget_steps, warmup_steps, min_measured):
            raise ValueError(f"autotune: a budget of {budget_steps} steps is too small for "
                             f"{len(self.candidates)} candidates (at least "
                             f"{self.needed_steps(len(self.candidates), warmup_steps, min_measured)}"
                             " steps)")
        self._start_round()

    @staticmethod
    def needed_steps(n, warmup_steps, min_measured=2):
        """The smallest budget that gives n candidates min_measured steps each."""
        rounds = max(1, math.ceil(math.log2(n))) if n > 1 else 0
        return rounds * n * (warmup_steps + min_measured)

    @staticmethod
    def fits(n, budget_steps, warmup_steps, min_measured=2):
        return budget_steps >= SuccessiveHalving.needed_steps(n, warmup_steps, min_measured)

    def _start_round(self):
        self._round_samples = {}
        if len(self.survivors) <= 1:
            self._queue = []
            return
        steps = self._per_round // len(self.survivors)
        order = self.survivors if self.round % 2 == 0 else self.survivors[::-1]
        self._queue = [(i, steps) for i in order]

    def next_trial(self):
        """(candidate index, steps including the warm-up) or None when done."""
        return self._queue[0] if self._queue else None

    def report(self, index, step_seconds):
        """The measured step times of the trial next_trial() returned."""
        expected, _ = self._queue[0]
        if index != expected:
            raise ValueError(f"autotune: a result for candidate {index}, expected {expected}")
        self.candidates[index].samples.extend(float(s) for s in step_seconds)
        self._round_samples[index] = [float(s) for s in step_seconds]
        self._queue.pop(0)
        if self._queue:
            return
        ranked = sorted(self.survivors,
                        key=lambda i: (lower_quartile(self._round_samples.get(i, [])), i))
        self.survivors = ranked[:math.ceil(len(ranked) / 2)]
        self.round += 1
        self._start_round()

    def done(self):
        return not self._queue

    def best(self):
        """Index of the best candidate measured so far (the winner once done)."""
        if self.done() and self.survivors:
            return self.survivors[0]
        measured = [i for i, c in enumerate(self.candidates) if c.samples]
        if not measured:
            return 0
        return min(measured, key=lambda i: (self.candidates[i].score(), i))

    def planned_steps(self):
        """Steps the whole schedule takes (at most the budget)."""
        total, n = 0, len(self.candidates)
        for _ in range(self.rounds):
            total += (self._per_round // n) * n
            n = math.ceil(n / 2)
        return total


def bucket_sizes(start_bytes, min_bytes, max_bytes):
    """The sizes to try: powers of two from min_bytes to the first power of
    two >= max_bytes (one bucket for the whole model), plus the start."""
    sizes = {int(start_bytes)}
    p = max(10, math.floor(math.log2(max(min_bytes, 1))))
    top = max(min_bytes, max_bytes)
    while True:
        sizes.add(2**p)
        if 2**p >= top:
            break
        p += 1
    return sorted(s for s in sizes if s >= min(min_bytes, start_bytes))
