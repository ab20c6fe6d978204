"""Plots for bench/gpu/summarize.py: busbw against message size, log-2 x
axis, one line per transport (median over repetitions, min-max band).
Uses matplotlib's Agg backend (no display on the GPU machine).
"""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import gpu_runs  # noqa: E402


def _size_label(n):
    return gpu_runs.human(n).replace(" ", "")


_PALETTE = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
            "tab:pink", "tab:gray", "tab:olive", "tab:cyan"]


def _color(report, cfg):
    """One colour per configuration across every plot."""
    labels = _order(report, None)
    return _PALETTE[labels.index(cfg) % len(_PALETTE)] if cfg in labels else "black"


def _draw(ax, report, coll, cfgs, best):
    drawn, missing = 0, []
    for cfg in cfgs:
        runs = report.runs(coll, cfg)
        vals = gpu_runs.per_size(runs, 2)
        if not vals:
            missing.append(f"{cfg}: {gpu_runs.why_missing(runs)}")
            continue
        xs = sorted(vals)
        ys = [gpu_runs.med(vals[x]) for x in xs]
        lo = [min(vals[x]) for x in xs]
        hi = [max(vals[x]) for x in xs]
        bold = cfg.startswith("bagua") or cfg == best
        label = cfg + (" (best socket)" if cfg == best else "")
        color = _color(report, cfg)
        ax.plot(xs, ys, marker="o" if bold else None, markersize=3, color=color,
                linewidth=2.2 if bold else 1.0, alpha=1.0 if bold else 0.7, label=label)
        if any(top > bottom for bottom, top in zip(lo, hi)):
            ax.fill_between(xs, lo, hi, color=color, alpha=0.15)
        drawn += 1
    ax.set_xscale("log", base=2)
    ticks = [1 << k for k in range(3, 31, 3)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([_size_label(t) for t in ticks], rotation=45, fontsize=7)
    ax.set_xlabel("size (nccl-tests' size column)")
    ax.set_ylabel("busbw (GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    if drawn:
        ax.legend(fontsize=7, loc="upper left")
    if missing:
        ax.text(0.98, 0.02, "no data: " + "; ".join(missing), transform=ax.transAxes,
                ha="right", va="bottom", fontsize=7, color="darkred")
    return drawn


def _order(report, coll):
    """Bagua first, then the socket defaults, then the rest (coll None: all)."""
    cfgs = sorted({c for (cl, c) in report.nt if coll is None or cl == coll})
    first = [c for c in cfgs if c.startswith("bagua")]
    first += [c for c in ["socket_default"] if c in cfgs]
    return first + [c for c in cfgs if c not in first]


def write_all(report, out_dir):
    paths = []
    fig, ax = plt.subplots(figsize=(9, 5.5))
    _draw(ax, report, "all_reduce", _order(report, "all_reduce"), report.best)
    ax.set_title("all_reduce, 2 GPUs over the network transport (loopback), nccl-tests -g 2")
    fig.tight_layout()
    p = os.path.join(out_dir, "gpu_allreduce.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for ax, coll in zip(axes.flat, gpu_runs.OTHER_COLLS):
        _draw(ax, report, coll, _order(report, coll), report.best_run)
        ax.set_title(coll)
    fig.tight_layout()
    p = os.path.join(out_dir, "gpu_collectives.png")
    fig.savefig(p, dpi=100)
    plt.close(fig)
    paths.append(p)
    return paths
