"""What the GPU report and its plots read from the parsed nccl-tests runs
(bench/gpu/nccl_logs.py): per-size values over repetitions, medians, table
cells and ratios, and the best socket configuration. Shared by summarize.py,
nccl_tests_sections.py and plots.py, so none of them imports another for it.
"""

import re
import statistics


LARGE = 64 << 20       # issue 4: bandwidth targets from 64 MiB
SMALL_MAX = 1 << 20    # latency target: 8 B to 1 MiB
RATE_FROM = 16 << 20   # rate-limit target from 16 MiB
OTHER_COLLS = ["all_gather", "reduce_scatter", "sendrecv", "alltoall"]


def human(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def is_rep(tag):
    return re.fullmatch(r"r\d+", tag) is not None


def per_size(runs, idx, tags=is_rep):
    """size -> list of values (idx into Row.oop) over the runs whose tag matches."""
    out = {}
    for tag, run in runs.items():
        if not tags(tag):
            continue
        for r in run.rows:
            v = r.oop[idx]
            if v is not None:
                out.setdefault(r.size, []).append(v)
    return out


def med(vals):
    return statistics.median(vals) if vals else None


def why_missing(runs, tags=is_rep):
    """Short reason for an empty cell: the states of the runs that exist."""
    states = sorted({run.state() for tag, run in runs.items() if tags(tag)})
    return "/".join(states) if states else "no log"


def cell(vals, runs, has_any, nd=2):
    if vals:
        m = med(vals)
        if len(vals) > 1:
            return f"{m:.{nd}f} ({min(vals):.{nd}f}-{max(vals):.{nd}f})"
        return f"{m:.{nd}f}"
    return "-" if has_any else why_missing(runs)


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def large_score(runs):
    """Median over repetitions of the mean busbw at sizes >= 64 MiB."""
    scores = []
    for tag, run in runs.items():
        vals = [r.oop[2] for r in run.rows if r.size >= LARGE] if is_rep(tag) else []
        if vals:
            scores.append(sum(vals) / len(vals))
    return med(scores)


def pick_best_socket(nt, coll="all_reduce"):
    """Best socket config (defaults included) by large-message busbw, or None."""
    best, best_score = None, None
    for (c, cfg), runs in nt.items():
        if c != coll or not cfg.startswith("socket_"):
            continue
        s = large_score(runs)
        if s is not None and (best_score is None or s > best_score):
            best, best_score = cfg, s
    return best, best_score
