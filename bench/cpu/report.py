#!/usr/bin/env python3
"""Turns bagua-net-perf JSON files into a markdown report and PNG plots.

Usage: report.py [--title T] OUT_DIR FILE.json [FILE.json ...]

Writes OUT_DIR/README.md (one table per file and pattern: median GB/s with
min-max of the interleaved repetitions, the plugin's ratio to the plain-TCP
baseline, p50 latency and CPU seconds per GB) and OUT_DIR/<file>_<pattern>.png
when matplotlib is importable. For files named link_<R>gbit.json it adds the
share of the link rate R Gbit/s (R/8 GB/s) the plugin reached. Only values
present in the JSON are reported; a failed configuration says so.
"""
import argparse
import json
import os
import platform
import re
import subprocess


def fmt_size(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def link_rate_gbps(path):
    """GB/s of the emulated link named in the file name, or None."""
    m = re.search(r"link_(\d+(?:\.\d+)?)gbit", os.path.basename(path))
    return float(m.group(1)) / 8 if m else None


def series_by_pattern(data):
    out = {}
    for s in data["series"]:
        out.setdefault(s["pattern"], []).append(s)
    return out


def bagua_vs_tcp(bagua, size, med):
    """The per-round ratio the tool computed (median [95% CI]), else the ratio of medians."""
    z = next((z for z in bagua.get("sizes", []) if z["size"] == size), None)
    paired = (z or {}).get("vs_reference")
    if paired and paired["config"] == "tcp" and paired["algbw_ratio"]["median"] is not None:
        r = paired["algbw_ratio"]
        lo, hi = r["ci95"]
        return f"{r['median']:.2f}x" + (f" [{lo:.2f}-{hi:.2f}]" if lo is not None else "")
    if "bagua" in med and "tcp" in med and med["tcp"] > 0:
        return f"{med['bagua'] / med['tcp']:.2f}x"
    return "-"


def table(path, pattern, series):
    rate = link_rate_gbps(path)
    names = [s["config"] for s in series]
    by_name = {s["config"]: s for s in series}
    lat = pattern == "pingpong"
    head = ["size"] + [f"{n} {'p50 us' if lat else 'GB/s'}" for n in names]
    if "tcp" in by_name and "bagua" in by_name:
        head.append("bagua / tcp (per round, 95% CI)")
    if rate and "bagua" in by_name:
        head.append("bagua % of link")
    head += [f"cpu s/GB {n}" for n in names]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sizes = sorted({z["size"] for s in series for z in s.get("sizes", [])})
    for size in sizes:
        cells = [fmt_size(size)]
        med = {}
        for n in names:
            s = by_name[n]
            z = next((z for z in s.get("sizes", []) if z["size"] == size), None)
            if s.get("failure") or z is None:
                cells.append("failed" if s.get("failure") else "-")
                continue
            key = "p50_us" if lat else "algbw_gbps"
            v = z[key]
            med[n] = v["median"]
            if lat:
                cells.append(f"{v['median']:.1f} ({v['min']:.1f}-{v['max']:.1f})")
            else:
                cells.append(f"{v['median']:.3g} ({v['min']:.3g}-{v['max']:.3g})")
        if "bagua / tcp (per round, 95% CI)" in head:
            cells.append(bagua_vs_tcp(by_name["bagua"], size, med))
        if "bagua % of link" in head:
            cells.append(f"{100 * med['bagua'] / rate:.1f}%" if "bagua" in med else "-")
        for n in names:
            z = next((z for z in by_name[n].get("sizes", []) if z["size"] == size), None)
            cells.append(f"{z['cpu_s_per_gb']['median']:.3f}" if z else "-")
        rows.append("| " + " | ".join(cells) + " |")
    for n in names:
        if by_name[n].get("failure"):
            rows.append(f"\n{n} failed: {by_name[n]['failure']}")
    return "\n".join(rows)


def plot(path, pattern, series, out_png):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    lat = pattern == "pingpong"
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for s in series:
        pts = [(z["size"], z["p50_us" if lat else "algbw_gbps"]["median"]) for z in s.get("sizes", [])]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s["config"])
    rate = link_rate_gbps(path)
    if rate and not lat:
        ax.axhline(rate, color="grey", linestyle="--", label=f"link {rate * 8:g} Gbit/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("p50 latency (us)" if lat else "algbw (GB/s), median")
    ax.set_title(f"{os.path.basename(path)}: {pattern}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--title", default="bagua-net-perf results")
    ap.add_argument("--machine", help="the machine line, when the tables are rebuilt elsewhere"
                    " (default: this machine's CPUs, allowed of online, kernel and git commit)")
    ap.add_argument("out")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    kernel = platform.release()
    allowed = len(os.sched_getaffinity(0))
    cpus = f"{allowed} CPUs" if allowed == os.cpu_count() else f"{allowed} of {os.cpu_count()} CPUs"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
    except OSError:
        commit = "?"
    machine = args.machine or f"{cpus}, kernel {kernel}; plugin from commit {commit or '?'}"
    lines = [f"# {args.title}", "",
             f"Machine: {machine}.",
             "Medians over interleaved repetitions (min-max in parentheses); algbw = S/t,"
             " GB = 1e9 B; cpu = user+sys seconds of the rank processes per GB sent+received.",
             ""]
    for path in args.files:
        with open(path) as f:
            data = json.load(f)
        opts = data.get("options", {})
        lines.append(f"## {os.path.basename(path)}")
        lines.append("")
        lines.append(f"depth {opts.get('depth')}, {opts.get('iters')} timed + {opts.get('warmup')}"
                     f" warm-up iterations per size, {opts.get('reps')} repetitions, data check"
                     f" {'on' if opts.get('check') else 'off'}.")
        for cfg in data.get("configs", []):
            env = ", ".join(f"{k}={v}" for k, v in cfg.get("env", {}).items()) or "defaults"
            lines.append(f"- `{cfg['name']}`: {cfg['kind']}, {env}")
        for pattern, series in series_by_pattern(data).items():
            lines += ["", f"### {pattern}", "", table(path, pattern, series)]
            stem = os.path.splitext(os.path.basename(path))[0]
            png = f"{stem}_{pattern}.png"
            if plot(path, pattern, series, os.path.join(args.out, png)):
                lines += ["", f"![{stem} {pattern}]({png})"]
        lines.append("")
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {os.path.join(args.out, 'README.md')}")


if __name__ == "__main__":
    main()
