"""Autotuning in the training processes: the engine's bucket size (and
hierarchical on/off where the algorithm has it and the job spans several
nodes of several ranks) chosen online from measured step times. No service:
rank 0 measures and decides (autotune_search.py), broadcasts each decision
on the engine's own communicator at a step boundary (the forward pre-hook of
a training step), and every rank rebuilds its buckets at that same step.
After each decision the ranks compare what they applied (one allgather); a
rank that differs is a RuntimeError on every rank, not a hang. The settings
themselves are compared when the engine is built (every engine, tuned or
not), so a job whose ranks were given different `autotune` arguments fails
at once naming them.

    model = bagua.BaguaDistributedDataParallel(model, autotune=True)
    ...
    model.autotune_state("autotune.json")     # the winner and every trial
    # a later run starts at the winner, no search:
    model = bagua.BaguaDistributedDataParallel(model, autotune="autotune.json")
"""
import json
import logging
import math
import sys
import time

import torch

from .. import env
from ..collectives import _call
from ..process_group import _node_of_ranks
from .autotune_search import Candidate, SuccessiveHalving, bucket_sizes, format_bytes
from .autotune_settings import FORMAT, Autotune, load_state, resolve, starting_bucket  # noqa: F401

_logger = logging.getLogger("bagua.autotune")


# -- small exchanges on the engine's communicator --------------------------------------
def _ints(ddp, values):
    return torch.tensor([int(v) for v in values], dtype=torch.int64, device=ddp.device)


def broadcast_ints(ddp, values):
    t = _ints(ddp, values)
    _call(ddp.backend(), ddp.device, "broadcast", t.data_ptr(), t.numel() * 8, 0)
    return t.cpu().tolist()


def allgather_ints(ddp, values):
    mine = _ints(ddp, values)
    rows = torch.empty(ddp.world_size * mine.numel(), dtype=torch.int64, device=ddp.device)
    _call(ddp.backend(), ddp.device, "allgather", mine.data_ptr(), rows.data_ptr(),
          mine.numel() * 8)
    return rows.view(ddp.world_size, -1).cpu().tolist()


def _hier_code(h):
    return -1 if h is None else int(bool(h))


def check_supported(ddp, options):
    """ValueError when autotune is asked for an algorithm that cannot
    rebuild its buckets mid-training (checked before anything starts)."""
    if options is None or ddp.world_size == 1:
        return
    unsupported = getattr(ddp.bagua_algorithm, "autotune_unsupported", None)
    if unsupported:
        raise ValueError(f"bagua: autotune with {type(ddp.bagua_algorithm).__name__}: "
                         f"{unsupported}")


def from_environment(ddp):
    """The options of an engine built without an `autotune` argument:
    Autotune() when $BAGUA_AUTOTUNE (the launchers' --autotune_level, as in
    the original) is above 0, else None. An algorithm that cannot be tuned
    is then trained untuned, with a warning: the original tuned every
    algorithm's buckets from the launcher, so its scripts must still run."""
    level = env.get_autotune_level()
    if level <= 0:
        return None
    unsupported = getattr(ddp.bagua_algorithm, "autotune_unsupported", None)
    if unsupported:
        if ddp.rank == 0:
            _log(f"off: $BAGUA_AUTOTUNE={level} asks for it, but not with "
                 f"{type(ddp.bagua_algorithm).__name__}: {unsupported}", logging.WARNING)
        return None
    if ddp.rank == 0 and ddp.world_size > 1:
        _log(f"on: $BAGUA_AUTOTUNE={level} (--autotune_level); autotune=False turns it off")
    return Autotune()


def off_reason(ddp, options):
    """Why a tuner does nothing (logged for world size 1), or None."""
    if options is None:
        return "autotune not requested"
    if ddp.world_size == 1:
        reason = "world size 1: nothing is communicated, so there is nothing to tune"
        _log(f"off ({reason})", logging.WARNING)
        return reason
    return None


def broadcast_json(ddp, obj):
    """Rank 0's JSON-able `obj` on every rank (its length, then its bytes)."""
    data = json.dumps(obj).encode() if ddp.rank == 0 else b""
    size = broadcast_ints(ddp, [len(data)])[0]
    t = torch.zeros(size, dtype=torch.uint8, device=ddp.device)
    if ddp.rank == 0:
        t.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
    _call(ddp.backend(), ddp.device, "broadcast", t.data_ptr(), size, 0)
    return json.loads(t.cpu().numpy().tobytes().decode())


def check_settings_agree(ddp, options):
    """Every rank was given the same autotune settings (one allgather)."""
    if ddp.world_size == 1:
        return
    if options is None:
        mine = [0] * 10
    else:
        winner = (options.state or {}).get("winner", {})
        mine = [2 if options.state else 1, options.budget_steps, options.warmup_steps,
                options.min_bytes, options.max_bytes or 0, int(options.tune_hierarchical),
                winner.get("bucket_bytes", 0) * 4 + _hier_code(winner.get("hierarchical")) + 1
                + winner.get("sync_every", 0) * 2**40,
                round(options.sync_every_tolerance * 1e6), options.min_sync_every,
                options.max_sync_every]
    rows = allgather_ints(ddp, mine)
    names = ["mode (0 off, 1 search, 2 from a state)", "budget_steps", "warmup_steps",
             "min bucket bytes", "max bucket bytes", "tune_hierarchical", "loaded winner",
             "sync_every_tolerance (ppm)", "min_sync_every", "max_sync_every"]
    for r, row in enumerate(rows):
        if row != rows[ddp.rank]:
            field = next(i for i, (a, b) in enumerate(zip(row, rows[ddp.rank])) if a != b)
            raise ValueError(
                f"bagua: ranks disagree about autotune: rank {ddp.rank} has {names[field]} = "
                f"{rows[ddp.rank][field]}, rank {r} has {row[field]}; every rank must pass the "
                "same autotune argument (and the same state file contents)")


def make_tuner(ddp, options, start_hierarchical):
    """The engine's tuner: of sync_every for the algorithms that have one
    (local SGD, DiLoCo: autotune_sync.py), else of the bucket size."""
    if getattr(ddp.bagua_algorithm, "autotune_knob", None) == "sync_every":
        from .autotune_sync import SyncEveryTuner
        return SyncEveryTuner(ddp, options)
    return Autotuner(ddp, options, start_hierarchical)


class Autotuner:
    """The bucket-size tuner: status "off", "searching", "done" or "loaded"."""

    def __init__(self, ddp, options, start_hierarchical):
        self.ddp = ddp
        self.options = options
        self.status, self.reason = "off", "autotune not requested"
        self.trials, self.search, self.boundary = [], None, None
        self.current = None  # (candidate index, step it was applied at)
        self._times = {}
        self._final = None
        self.start = {"bucket_bytes": ddp.bucket_bytes, "hierarchical": start_hierarchical}
        self.hierarchical = start_hierarchical
        off = off_reason(ddp, options)
        if off:
            self.reason = off
            return
        check_supported(ddp, options)
        if options.state is not None:
            self._use_loaded(options)
            return
        self._start_search(ddp, options, start_hierarchical)

    # -- setup ---------------------------------------------------------------------------
    def _use_loaded(self, options):
        state = options.state
        if "bucket_bytes" not in state["winner"]:
            raise ValueError(f"bagua: autotune={options.source or 'state'!r} holds sync_every "
                             f"(tuned with {state.get('algorithm')}); "
                             f"{_algorithm_name(self.ddp)} tunes the bucket size: search again "
                             "(autotune=True)")
        self.status = "loaded"
        self.reason = f"winner of {options.source or 'a given state'}"
        self._final = dict(state, status="loaded", source=options.source)
        if self.ddp.rank == 0:
            notes = []
            for key, here in (("algorithm", _algorithm_name(self.ddp)),
                              ("world_size", self.ddp.world_size)):
                if state.get(key) not in (None, here):
                    notes.append(f"tuned with {key} {state.get(key)}, this job has {here}")
            winner = Candidate(state["winner"]["bucket_bytes"], self.hierarchical,
                               len(self.ddp.bagua_buckets))
            _log(f"{winner.describe()} from {options.source or 'the given state'}, no search"
                 + (f" ({'; '.join(notes)})" if notes else ""))

    def _start_search(self, ddp, options, start_hierarchical):
        candidates = self._candidates(ddp, options, start_hierarchical)
        if len(candidates) == 1:
            self.status = "done"
            self.reason = "every bucket size tried gives the same buckets: nothing to tune"
            self._final = self._state_dict(candidates, 0, steps=0)
            if ddp.rank == 0:
                _log(f"{candidates[0].describe()}: {self.reason}")
            return
        # The last decision is taken at a step's start: with budget - 1 steps
        # of trials, the winner runs from step `budget` at the latest.
        self.search = SuccessiveHalving(candidates, options.budget_steps - 1, options.warmup_steps)
        self.status, self.reason = "searching", "search in progress"
        if ddp.rank == 0:
            _log(f"searching {len(candidates)} bucket plans in {self.search.planned_steps()} "
                 f"steps ({self.search.rounds} rounds of successive halving), starting from "
                 f"{candidates[0].describe()}")
        index, steps = self.search.next_trial()  # the start: the same on every rank
        self.current = (index, 1)
        self.boundary = 1 + steps

    def _candidates(self, ddp, options, start_hierarchical):
        """Distinct (bucket plan, hierarchical) configurations; the start first."""
        tensors = ddp._bagua_tensors
        total = sum(t.bagua_getter_closure().numel() * t.bagua_getter_closure().element_size()
                    for t in tensors)
        hiers = [start_hierarchical]
        if options.tune_hierarchical and start_hierarchical is not None and _hierarchy_differs(ddp):
            hiers = [start_hierarchical, not start_hierarchical]
        sizes = bucket_sizes(ddp.bucket_bytes, options.min_bytes, options.max_bytes or total)

        def build(sizes):
            seen, out = set(), []
            for h in hiers:
                for size in [ddp.bucket_bytes] + [s for s in sizes if s != ddp.bucket_bytes]:
                    plan = tuple(len(b) for b in ddp._split_into_buckets(tensors, size))
                    if (plan, h) not in seen:
                        seen.add((plan, h))
                        out.append(Candidate(size, h, len(plan)))
            return out

        out = build(sizes)
        while not SuccessiveHalving.fits(len(out), options.budget_steps - 1, options.warmup_steps):
            if len(sizes) <= 2:
                raise ValueError(
                    f"bagua: Autotune(budget_steps={options.budget_steps}) is too small to try "
                    f"even {len(out)} configurations; give at least "
                    f"{SuccessiveHalving.needed_steps(len(out), options.warmup_steps) + 1} steps")
            sizes = sizes[::2] + ([sizes[-1]] if len(sizes) % 2 == 0 else [])
            out = build(sizes)
        return out

    # -- per step --------------------------------------------------------------------------
    def on_forward(self, step):
        """Called by the engine in each training forward pre-hook (step counts from 1)."""
        if self.status != "searching":
            return
        index, applied_at = self.current
        measure_from = applied_at + self.options.warmup_steps
        if self.ddp.rank == 0 and step >= measure_from:
            if self.ddp.device.type == "cuda" and step in (measure_from, self.boundary):
                torch.cuda.synchronize(self.ddp.device)
            self._times[step] = time.perf_counter()
        if step == self.boundary:
            self._decide(step, index, measure_from)

    def on_reset(self):
        """The algorithm rebuilt itself (need_reset): this trial's times are void."""
        self._times = {}

    def _decide(self, step, index, measure_from):
        """Rank 0 reports the trial and picks the next configuration; every
        rank applies it now and checks the others did the same."""
        ddp = self.ddp
        msg = [step, index, 0, 0, 0, 0]  # step, candidate, steps, done, bucket bytes, hier
        if ddp.rank == 0:
            seconds = self._step_seconds(measure_from, step)
            trial_round = self.search.round
            self.search.report(index, seconds)
            c = self.search.candidates[index]
            self.trials.append(dict(c.as_dict(), round=trial_round, step=self.current[1],
                                    measured_steps=len(seconds),
                                    step_time_s=_nan_none(_median(seconds))))
            _log(f"trial {len(self.trials)}: {c.describe()}: "
                 f"{_rate(_median(seconds))} steps/s over {len(seconds)} steps")
            trial = self.search.next_trial()
            nxt, steps = (self.search.best(), 0) if trial is None else trial
            chosen = self.search.candidates[nxt]
            msg = [step, nxt, steps, int(trial is None), chosen.bucket_bytes,
                   _hier_code(chosen.hierarchical)]
        self._times = {}
        msg = broadcast_ints(ddp, msg)
        if msg[0] != step:
            raise RuntimeError(f"bagua autotune: rank {ddp.rank} is at step {step} but rank 0 "
                               f"decided at step {msg[0]}: the ranks' training steps diverged")
        _, nxt, steps, done, bucket_bytes, hier = msg
        self._apply(bucket_bytes, None if hier < 0 else bool(hier))
        self._verify(step)
        self.current, self.boundary = (nxt, step), step + steps
        if done:
            self._finish(step, nxt)

    def _apply(self, bucket_bytes, hierarchical):
        if (bucket_bytes, hierarchical) != (self.ddp.bucket_bytes, self.hierarchical):
            self.ddp._rebuild_buckets(bucket_bytes, hierarchical)
            self.hierarchical = hierarchical

    def _verify(self, step):
        ddp = self.ddp
        mine = [step, ddp.bucket_bytes, _hier_code(self.hierarchical), len(ddp.bagua_buckets),
                ddp._generation]
        rows = allgather_ints(ddp, mine)
        for r, row in enumerate(rows):
            if row != rows[ddp.rank]:
                raise RuntimeError(
                    f"bagua autotune: ranks disagree at step {step}: rank {ddp.rank} applied "
                    f"{_describe_row(rows[ddp.rank])}, rank {r} applied {_describe_row(row)}; "
                    "every rank must rebuild the same buckets at the same step")

    def _step_seconds(self, first, last):
        """Seconds per measured step in [first, last): each step's own time
        on CPU; on CUDA (asynchronous host) the window's mean, synchronized
        at both ends, once per step."""
        times = self._times
        if first not in times or last not in times or last <= first:
            return []
        if self.ddp.device.type == "cuda":
            return [(times[last] - times[first]) / (last - first)] * (last - first)
        return [times[s + 1] - times[s] for s in range(first, last) if s + 1 in times]

    def _finish(self, step, winner):
        ddp = self.ddp
        self.status, self.reason = "done", f"search finished at step {step}"
        state = None
        if ddp.rank == 0:
            state = self._state_dict(self.search.candidates, winner, steps=step - 1)
            best, start = self.search.candidates[winner], self.search.candidates[0]
            gain = start.score() / best.score() if best.score() > 0 else math.nan
            _log(f"done after {step - 1} steps: winner {best.describe()}: "
                 f"{_rate(best.score())} steps/s; start {start.describe()}: "
                 f"{_rate(start.score())} steps/s ({gain:.2f}x)")
        self._final = broadcast_json(ddp, state)

    # -- export ----------------------------------------------------------------------------
    def _state_dict(self, candidates, winner, steps):
        best = candidates[winner]
        return {"format": FORMAT, "status": "done", "algorithm": _algorithm_name(self.ddp),
                "world_size": self.ddp.world_size, "device": self.ddp.device.type,
                "tensors": len(self.ddp._bagua_tensors), "budget_steps": self.options.budget_steps,
                "search_steps": steps, "start": dict(candidates[0].as_dict(),
                                                     step_time_s=_nan_none(candidates[0].score())),
                "winner": dict(best.as_dict(), step_time_s=_nan_none(best.score())),
                "trials": list(self.trials)}

    def state(self):
        """What autotune decided: the JSON-ready dict autotune="file" reads."""
        if self._final is not None:
            return dict(self._final)
        out = {"format": FORMAT, "status": self.status, "reason": self.reason,
               "algorithm": _algorithm_name(self.ddp), "world_size": self.ddp.world_size,
               "winner": {"bucket_bytes": self.ddp.bucket_bytes,
                          "hierarchical": self.hierarchical}}
        if self.status == "searching":
            out["trials"] = list(self.trials)
        return out


def _hierarchy_differs(ddp):
    """Hierarchical communication differs from flat: several nodes, each
    with several of the engine's ranks."""
    nodes = _node_of_ranks()
    per_node = {}
    for r in ddp.comm.ranks:
        per_node[nodes[r]] = per_node.get(nodes[r], 0) + 1
    return len(per_node) > 1 and max(per_node.values()) > 1


def _algorithm_name(ddp):
    impl = ddp.bagua_algorithm
    return getattr(impl, "name", type(impl).__name__)


def _describe_row(row):
    step, size, hier, buckets, generation = row
    h = {-1: "", 0: ", flat", 1: ", hierarchical"}.get(hier, f", hierarchical={hier}")
    return f"bucket {format_bytes(size)} ({buckets} buckets{h}, build {generation})"


def _median(values):
    values = sorted(values)
    if not values:
        return math.nan
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _rate(seconds):
    return f"{1 / seconds:.2f}" if seconds and math.isfinite(seconds) else "n/a"


def _nan_none(x):
    return None if x is None or not math.isfinite(x) else x


def _log(message, level=logging.INFO):
    """The autotuner's lines (rank 0's trials and winner): on stderr, unless
    the application configured logging (then through it, logger
    "bagua.autotune")."""
    if not _logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("bagua autotune: %(message)s"))
        _logger.addHandler(handler)
        _logger.setLevel(logging.INFO)
    _logger.log(level, message)

