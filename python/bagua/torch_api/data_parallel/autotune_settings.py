"""Autotune's settings (`Autotune`, what the engine's `autotune` argument
may be) and its saved state (autotune_state() as JSON, checked when read)."""
import json
import os

FORMAT = "bagua-autotune/1"


class Autotune:
    """Autotune settings (`autotune=True` is `Autotune()`).

    Args:
        budget_steps: training steps the search may take (default 200); the
            winner applies from the step after them.
        warmup_steps: steps not measured after each rebuild (default 2).
        min_bucket_mb, max_bucket_mb: the bucket sizes tried are the powers
            of two between them (default 0.25 MiB to one bucket for the
            whole model), plus the starting size.
        tune_hierarchical: also try hierarchical on/off where it can differ.
        state: an earlier run's autotune_state() (a dict) or its JSON file:
            start with its winner and do not search.
    """

    def __init__(self, budget_steps=200, warmup_steps=2, min_bucket_mb=0.25, max_bucket_mb=None,
                 tune_hierarchical=True, state=None):
        for name, value, low in (("budget_steps", budget_steps, 1),
                                 ("warmup_steps", warmup_steps, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"bagua: Autotune({name}={value!r}): expected an int >= {low}")
        for name, value in (("min_bucket_mb", min_bucket_mb), ("max_bucket_mb", max_bucket_mb)):
            if value is not None and (not isinstance(value, (int, float)) or value <= 0):
                raise ValueError(f"bagua: Autotune({name}={value!r}): expected a positive number")
        self.budget_steps = budget_steps
        self.warmup_steps = warmup_steps
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
    winner = state.get("winner")
    if not isinstance(winner, dict):
        raise ValueError(f"bagua: {what}: has no winner (\"winner\": {winner!r})")
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
        return options.state["winner"]["bucket_bytes"]
    return bucket_bytes
