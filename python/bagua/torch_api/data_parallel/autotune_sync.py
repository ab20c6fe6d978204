"""Autotune for local SGD and DiLoCo: sync_every (H), chosen online.

The bucket size hardly matters to these algorithms (they communicate once
per H steps, and rebuilding DiLoCo's runtime would restart its start point
from each rank's own weights), so `autotune=True` tunes H instead: the
smallest H whose steps/s stay within `sync_every_tolerance` of the same job
with no communication (autotune_sync_search.py says why and how). As for
the bucket size (autotune.py), rank 0 measures and decides, and every rank
applies the decision at the same step boundary (a training step's forward
pre-hook): the runtime's schedule restarts there with the new H (DiLoCo
applies its updates in flight first), nothing is rebuilt and no state is
lost. After each decision the ranks compare their schedules (one allgather).

The search starts at the first training step after the algorithm's
warm-up (gradient allreduce during the warm-up is not tuned).
"""
import math

import torch

from .autotune import (_log, _nan_none, _rate, allgather_ints, broadcast_ints, broadcast_json,
                       off_reason)
from .autotune_settings import FORMAT
from .autotune_sync_search import REFERENCE, SyncEverySearch, sync_candidates


class SyncEveryTuner:
    """The engine's tuner for local-steps algorithms: status "off",
    "waiting" (warm-up), "searching", "done" or "loaded"."""

    def __init__(self, ddp, options):
        self.ddp = ddp
        self.impl = ddp.bagua_algorithm
        self.options = options
        self.status, self.reason = "off", "autotune not requested"
        self.search, self.current, self.boundary = None, None, None
        self.trials = []
        self._start_time = None
        self._final = None
        self.start = self.impl.sync_every
        off = off_reason(ddp, options)
        if off:
            self.reason = off
            return
        if options.state is not None:
            self._use_loaded(options)
            return
        candidates = sync_candidates(self.start, options.min_sync_every, options.max_sync_every,
                                     fragments=self.impl.sync_floor())
        self.search = SyncEverySearch(candidates, self.start, options.sync_every_tolerance,
                                      options.sync_budget_steps, options.warmup_steps)
        # The starting H's trial must fit, or the search has nothing to
        # compare (it failed at its first step, after the algorithm's warm-up).
        need = self.search.trial_steps(self.start)
        if need > options.sync_budget_steps:
            raise ValueError(
                f"bagua: autotune: the starting sync_every={self.start} needs a trial of {need} "
                f"steps, above the budget of {options.sync_budget_steps}: raise "
                f"Autotune(budget_steps=...) to a few times {need} (the default is 3000)")
        self.status, self.reason = "waiting", "the search starts after the warm-up"

    def _use_loaded(self, options):
        winner = options.state["winner"]
        if "sync_every" not in winner:
            raise ValueError(f"bagua: autotune={options.source or 'state'!r} holds a bucket size "
                             f"(tuned with {options.state.get('algorithm')}); "
                             f"{self.impl.name} tunes sync_every: search again (autotune=True)")
        self.status = "loaded"
        self.reason = f"winner of {options.source or 'a given state'}"
        self._final = dict(options.state, status="loaded", source=options.source)
        self.impl.change_sync_every(int(winner["sync_every"]))
        if self.ddp.rank == 0:
            _log(f"sync_every {winner['sync_every']} from {options.source or 'the given state'}, "
                 "no search")

    # -- per step --------------------------------------------------------------------
    def on_forward(self, step):
        """Called by the engine in each training forward pre-hook (step counts from 1)."""
        if self.status == "waiting" and self.impl.runtime is not None:
            self._begin(step)
        if self.status != "searching":
            return
        h, applied_at = self.current
        measure_from = applied_at + self.options.warmup_steps
        if self.ddp.rank == 0 and step in (measure_from, self.boundary):
            self._mark(step == measure_from)
        if step == self.boundary:
            self._decide(step, h, self.boundary - measure_from)

    def on_reset(self):
        """The algorithm rebuilt itself: the trial's window is void."""
        self._start_time = None

    def _begin(self, step):
        h, steps = self.search.next_trial()  # the starting H: nothing to change
        self.status, self.reason = "searching", "search in progress"
        self.current, self.boundary = (h, step), step + steps
        if self.ddp.rank == 0:
            _log(f"searching sync_every in {self.search.candidates} from {self.start} "
                 f"(tolerance {self.search.tolerance:.0%} of no communication, budget "
                 f"{self.search.budget_steps} steps)")

    def _mark(self, first):
        """Rank 0's clock at the window's ends: on CUDA an event on the
        training's stream (an exchange still in flight on the communicator's
        stream is not waited for); on CPU the host's."""
        if self.ddp.device.type == "cuda":
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.ddp.device))
        else:
            event = _HostClock()
        if first:
            self._start_time = event
        else:
            self._end_time = event

    def _window_seconds(self, measured):
        if self._start_time is None or measured <= 0:
            return math.nan
        self._end_time.synchronize()
        return self._start_time.elapsed_time(self._end_time) / 1000.0 / measured

    def _decide(self, step, h, measured):
        ddp = self.ddp
        msg = [step, 0, 0, 0]  # step, H to apply (REFERENCE: none), its trial's steps, done
        if ddp.rank == 0:
            seconds = self._window_seconds(measured)
            self.search.report(h, seconds)
            self.trials.append({"sync_every": h or None, "step": self.current[1],
                                "measured_steps": measured, "step_time_s": _nan_none(seconds)})
            _log(f"trial {len(self.trials)}: {_describe(h)}: {_rate(seconds)} steps/s over "
                 f"{measured} steps" + self._ratio_note(h))
            trial = self.search.next_trial()
            nxt, steps = (self.search.best(), 0) if trial is None else trial
            msg = [step, nxt, steps, int(trial is None)]
        self._start_time = None
        flush = getattr(self.impl.runtime, "flush", None)
        if flush is not None and ddp.device.type == "cuda":
            flush()  # DiLoCo: no exchange in flight on its communicator beside this one's
        msg = broadcast_ints(ddp, msg)
        if msg[0] != step:
            raise RuntimeError(f"bagua autotune: rank {ddp.rank} is at step {step} but rank 0 "
                               f"decided at step {msg[0]}: the ranks' training steps diverged")
        _, nxt, steps, done = msg
        # The reference trial syncs nothing: H beyond its end for every fragment
        # (a checkpoint taken meanwhile saves the starting H instead).
        self.impl.checkpoint_sync_every = self.start if nxt == REFERENCE else None
        self.impl.change_sync_every(nxt if nxt != REFERENCE else
                                    (steps + 1) * self.impl.sync_floor())
        self._verify(step)
        self.current, self.boundary = (nxt, step), step + steps
        if done:
            self._finish(step, nxt)

    def _verify(self, step):
        runtime = self.impl.runtime
        mine = [step, runtime.sync_every, runtime.schedule_base, runtime.steps]
        rows = allgather_ints(self.ddp, mine)
        for r, row in enumerate(rows):
            if row != rows[self.ddp.rank]:
                raise RuntimeError(
                    f"bagua autotune: ranks disagree at step {step}: rank {self.ddp.rank} has "
                    f"(step, sync_every, schedule base, local steps) = {rows[self.ddp.rank]}, "
                    f"rank {r} has {row}; every rank must change sync_every at the same step")

    def _ratio_note(self, h):
        ratio = self.search.ratio(h)
        if h == REFERENCE or not math.isfinite(ratio):
            return ""
        return f" ({ratio:.3f}x no communication)"

    def _finish(self, step, winner):
        ddp = self.ddp
        self.status, self.reason = "done", f"search finished at step {step}"
        state = None
        if ddp.rank == 0:
            state = self._state_dict(winner, step)
            within = "within" if self.search.passes(winner) else "NOT within (none was)"
            _log(f"done at step {step}: sync_every {winner}: {_rate(self.search.times[winner])} "
                 f"steps/s, {self.search.ratio(winner):.3f}x no communication ({within} "
                 f"{self.search.tolerance:.0%})")
        self._final = broadcast_json(ddp, state)

    # -- export ----------------------------------------------------------------------
    def _state_dict(self, winner, step):
        search = self.search
        return {"format": FORMAT, "status": "done", "knob": "sync_every",
                "algorithm": self.impl.name, "world_size": self.ddp.world_size,
                "device": self.ddp.device.type, "budget_steps": search.budget_steps,
                "search_steps": search.used, "decided_at_step": step,
                "tolerance": search.tolerance, "candidates": list(search.candidates),
                "no_communication": {"step_time_s": _nan_none(search.times.get(REFERENCE))},
                "start": self._entry(self.start),
                "winner": dict(self._entry(winner), within_tolerance=search.passes(winner)),
                "trials": list(self.trials)}

    def _entry(self, h):
        ratio = self.search.ratio(h)
        return {"sync_every": h, "step_time_s": _nan_none(self.search.times.get(h, math.nan)),
                "ratio_to_no_communication": _nan_none(ratio)}

    def state(self):
        """What autotune decided: the JSON-ready dict autotune="file" reads."""
        if self._final is not None:
            return dict(self._final)
        out = {"format": FORMAT, "status": self.status, "reason": self.reason, "knob": "sync_every",
               "algorithm": self.impl.name, "world_size": self.ddp.world_size,
               "winner": {"sync_every": self.impl.sync_every}}
        if self.status == "searching":
            out["trials"] = list(self.trials)
        return out


class _HostClock:
    """time.perf_counter() with a CUDA event's interface (elapsed in ms)."""

    def __init__(self):
        import time
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1000.0


def _describe(h):
    return "no sync (reference)" if h == REFERENCE else f"sync_every {h}"
