"""The sync_every search (local SGD, DiLoCo): the smallest H whose steps/s
stay within `tolerance` of the same job with no communication at all.

Pure logic, no communication (autotune_sync.py runs it on rank 0 and
broadcasts its decisions). By speed alone the largest H always wins; by
quality the smallest does (the more often the ranks sync, the closer the
run is to synchronous training). So the rule weighs both: sync as often as
the link allows at a bounded cost, `tolerance` (default 5%) of the speed
with no communication.

Trials, each `warmup_steps` unmeasured steps and then whole sync periods:
1. the starting H (the algorithm's own sync_every), as the job starts;
2. the reference: no sync at all (H larger than the trial);
3. probes, until the smallest passing candidate is next to the largest
   failing one (or to the smallest candidate). "Passes": reference step
   time / its step time >= 1 - tolerance, a predicate that only gets truer
   as H grows (the sync costs the same or less, spread over more steps).
   Each probe is the candidate a cost model predicts, clamped into the
   interval still open (the middle of it when the model predicts less
   than every open candidate, i.e. no cost or noise): from the last probe at H_m with step time t_m, a
   sync period costs C = H_m (t_m - t_ref) beyond the no-communication
   steps, so t(H) = t_ref + C / H passes from H = C (1 - tol) / (tol t_ref).
   For local SGD (a blocking average of the same bytes every period) C does
   not depend on H and the first probe usually lands; with DiLoCo's overlap
   C shrinks as H grows (more steps to hide the exchange behind), which the
   clamping into the interval absorbs in a probe or two.
A probe that no longer fits the budget is not run; the search then ends
with the smallest passing H measured, or, when none passed, the fastest.
"""
import math

REFERENCE = 0  # the trial with no sync


def sync_candidates(start, low, high, fragments=1, overlap=False):
    """Powers of two in [low, high], plus `start`, none below what the
    algorithm allows (F fragments; 2 with DiLoCo's overlap)."""
    floor = max(int(fragments), 2 if overlap else 1)
    low, high = max(int(low), floor), max(int(high), floor)
    out = {int(start)} if start >= floor else set()
    h = 1
    while h <= high:
        if h >= low:
            out.add(h)
        h *= 2
    return sorted(out)


class SyncEverySearch:
    def __init__(self, candidates, start, tolerance, budget_steps, warmup_steps,
                 min_measured_steps=None):
        if not candidates:
            raise ValueError("autotune: no sync_every candidate")
        if not 0 < tolerance < 1:
            raise ValueError(f"autotune: sync_every tolerance must be in (0, 1), got {tolerance}")
        self.candidates = sorted(candidates)
        self.start = int(start)
        self.tolerance = float(tolerance)
        self.budget_steps = int(budget_steps)
        self.warmup_steps = int(warmup_steps)
        # 32 steps a trial at least; a budget under 384 steps gets shorter trials
        # (budget / 12, at least 4), so that a short search still tries a few H.
        self.min_measured = int(min_measured_steps or min(32, max(4, self.budget_steps // 12)))
        self.times = {}  # H (REFERENCE: no sync) -> seconds per step
        self.order = []  # H of each reported trial
        self.used = 0  # steps of the trials handed out
        self._first = [self.start, REFERENCE]

    # -- trials ---------------------------------------------------------------------
    def measured_steps(self, h):
        """Steps measured in a trial of H: whole periods, at least min_measured."""
        if h == REFERENCE:  # every probe is compared with it: twice as long
            return 2 * self.min_measured
        return h * max(1, math.ceil(self.min_measured / h))

    def trial_steps(self, h):
        return self.warmup_steps + self.measured_steps(h)

    def _fits(self, h):
        return self.used + self.trial_steps(h) <= self.budget_steps

    def next_trial(self):
        """(H or REFERENCE, steps) of the next trial; None when the search is over."""
        while self._first:
            h = self._first.pop(0)
            if h in self.times:
                continue
            if not self._fits(h):
                self._first = []
                return None
            self.used += self.trial_steps(h)
            return h, self.trial_steps(h)
        if REFERENCE not in self.times:
            return None
        open_ = [c for c in self._open() if self._fits(c)]
        if not open_:
            return None
        guess = self._model_guess()
        if guess < open_[0]:
            h = open_[len(open_) // 2]  # the model says nothing (noise, or no cost): bisect
        else:
            above = [c for c in open_ if c >= guess]
            h = above[0] if above else open_[-1]
        self.used += self.trial_steps(h)
        return h, self.trial_steps(h)

    def report(self, h, seconds_per_step):
        self.times[h] = float(seconds_per_step)
        self.order.append(h)

    # -- the rule ---------------------------------------------------------------------
    def ratio(self, h):
        """Its steps/s as a fraction of the reference's (nan if unmeasured)."""
        ref, t = self.times.get(REFERENCE), self.times.get(h)
        if not ref or not t or not math.isfinite(ref) or not math.isfinite(t):
            return math.nan
        return ref / t

    def passes(self, h):
        return self.ratio(h) >= 1 - self.tolerance

    def _measured(self):
        return [h for h in self.candidates if h in self.times]

    def _open(self):
        """Unmeasured candidates between the largest failing and the smallest passing H."""
        measured = self._measured()
        passed = [h for h in measured if self.passes(h)]
        failed = [h for h in measured if not self.passes(h)]
        hi = min(passed) if passed else math.inf
        lo = max((h for h in failed if h < hi), default=0)
        return [c for c in self.candidates if lo < c < hi and c not in self.times]

    def _model_guess(self):
        ref = self.times[REFERENCE]
        probes = [h for h in self.order if h != REFERENCE]
        if not probes or ref <= 0:
            return self.candidates[0]
        last = probes[-1]
        cost = last * (self.times[last] - ref)  # seconds a sync period adds
        if cost <= 0:
            return self.candidates[0]
        return cost * (1 - self.tolerance) / (self.tolerance * ref)

    def best(self):
        """The smallest passing H measured; if none passed, the fastest measured."""
        measured = self._measured()
        if not measured:
            return self.start
        passed = [h for h in measured if self.passes(h)]
        if passed:
            return min(passed)
        return min(measured, key=lambda h: self.times[h])
