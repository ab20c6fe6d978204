"""Autotune's settings (`Autotune`, what the engine's `autotune` argument
may be) and its saved state (autotune_state() as JSON, checked when read)."""
import json
import os

FORMAT = "bagua-autotune/1"


class Autotune:
    """Autotune settings (`autotune=True` is `Autotune()`).

    Args:
        budget_steps: training steps the search may take (default 200 for
            the bucket size, 3000 for sync_every); the winner applies from
            the step after them at the latest.
        warmup_steps: steps not measured after each change (default 2, at least 1).
        min_bucket_mb, max_bucket_mb: the bucket sizes tried are the powers
            of two between them (default 0.25 MiB to one bucket for the
            whole model), plus the starting size.
        tune_hierarchical: also try hierarchical on/off where it can differ.
        sync_every_tolerance, min_sync_every, max_sync_every: local SGD and
            DiLoCo tune sync_every instead of the bucket size: the smallest
            power of two in [min, max] (default 4 to 512) whose steps/s are
            within the tolerance (default 0.05) of the same job with no
            communication (docs/autotune.md).
        state: an earlier run's autotune_state() (a dict) or its JSON file:
            start with its winner and do not search.
    """

    def __init__(self, budget_steps=None, warmup_steps=2, min_bucket_mb=0.25, max_bucket_mb=None,
                 tune_hierarchical=True, state=None, sync_every_tolerance=0.05, min_sync_every=4,
                 max_sync_every=512):
        for name, value, low in (("budget_steps", budget_steps, 1),
                                 # >= 1: the step at a change is timed under the
                                 # configuration before it.
                                 ("warmup_steps", warmup_steps, 1),
                                 ("min_sync_every", min_sync_every, 1),
                                 ("max_sync_every", max_sync_every, 1)):
            if value is None and name == "budget_steps":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"bagua: Autotune({name}={value!r}): expected an int >= {low}")
        if min_sync_every > max_sync_every:
            raise ValueError(f"bagua: Autotune(min_sync_every={min_sync_every}) is above "
                             f"max_sync_every={max_sync_every}")
        if not isinstance(sync_every_tolerance, (int, float)) or \
                not 0 < sync_every_tolerance < 1:
            raise ValueError(f"bagua: Autotune(sync_every_tolerance={sync_every_tolerance!r}): "
                             "expected a number in (0, 1)")
        for name, value in (("min_bucket_mb", min_bucket_mb), ("max_bucket_mb", max_bucket_mb)):
            if value is not None and (not isinstance(value, (int, float)) or value <= 0):
                raise ValueError(f"bagua: Autotune({name}={value!r}): expected a positive number")
        self.budget_steps = budget_steps or 200
        self.sync_budget_steps = budget_steps or 3000
        self.warmup_steps = warmup_steps
        self.sync_every_tolerance = float(sync_every_tolerance)
        self.min_sync_every = min_sync_every
        self.max_sync_every = max_sync_every
        self.min_bytes = int(min_bucket_mb * 2**20)
        self.max_bytes = None if max_bucket_mb is None else int(max_bucket_mb * 2**20)
        self.tune_hierarchical = bool(tune_hierarchical)
        self.source = None
        if isinstance(state, (str, os.PathLike)):
            self.source = os.fspath(state)
            state = load_state(state)
        elif state is not None:
            state = check_state(state, "autotune state")
        self.state = state


def resolve(value):
    """An Autotune for the engine's `autotune` argument, or None (off)."""
    if value is None or value is False:
        return None
    if value is True:
        return Autotune()
    if isinstance(value, Autotune):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Autotune(state=value)
    if isinstance(value, dict):
        return Autotune(state=value) if "format" in value else Autotune(**value)
    raise TypeError(f"bagua: autotune must be True, False, a path to an autotune state (JSON), "
                    f"a dict or an Autotune, got {type(value).__name__}")


def load_state(path):
    """The autotune state saved at `path`; ValueError naming the path and
    what is wrong when it cannot be read or is not one."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as error:
        raise ValueError(f"bagua: autotune={os.fspath(path)!r}: cannot read it ({error})") from None
    try:
        state = json.loads(text)
    except ValueError as error:
        raise ValueError(f"bagua: autotune={os.fspath(path)!r}: not JSON ({error})") from None
    return check_state(state, f"autotune={os.fspath(path)!r}")


def check_state(state, what):
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"bagua: {what}: not an autotune state (expected a JSON object with "
                         f"\"format\": \"{FORMAT}\", as autotune_state() writes)")
    if state.get("status") in ("searching", "waiting"):
        raise ValueError(f"bagua: {what}: saved before its search finished (status "
                         f"{state.get('status')!r}); use one saved once autotune_state() says "
                         "\"done\", or search again (autotune=True)")
    winner = state.get("winner")
    if not isinstance(winner, dict):
        raise ValueError(f"bagua: {what}: has no winner (\"winner\": {winner!r})")
    if "sync_every" in winner:  # local SGD / DiLoCo (autotune_sync.py)
        h = winner["sync_every"]
        if not isinstance(h, int) or isinstance(h, bool) or h < 1:
            raise ValueError(f"bagua: {what}: winner.sync_every must be an int >= 1, got {h!r}")
        return state
    size = winner.get("bucket_bytes")
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ValueError(f"bagua: {what}: winner.bucket_bytes must be a positive int, got {size!r}")
    if winner.get("hierarchical") not in (None, True, False):
        raise ValueError(f"bagua: {what}: winner.hierarchical must be true, false or null, got "
                         f"{winner.get('hierarchical')!r}")
    return state


def starting_bucket(options, bucket_bytes):
    """The engine's first bucket size: a loaded state's winner, else its own."""
    if options is not None and options.state is not None:
        return options.state["winner"].get("bucket_bytes", bucket_bytes)
    return bucket_bytes
