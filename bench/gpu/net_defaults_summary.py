#!/usr/bin/env python3
"""Summary of net_defaults.sh: per collective and rank count, the median over repetitions of
each config's out-of-place time (<= 1 MiB) and busbw (above), the ratios
against socket defaults and tuned, the channels NCCL chose, #wrong, and the host's
loopback TCP ceiling (limit.txt) where measured.

Usage: net_defaults_summary.py OUT_DIR  (markdown on stdout)
"""
import collections
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nccl_logs  # noqa: E402

_CHANNELS = re.compile(r"(\d+) coll channels")
_TUNER = re.compile(r"TUNER/Plugin: Using (\S+) \((v\d+)\)")
_TAG = re.compile(r"^([a-z_]+?)__(.+)__r(\d+)_(\d+)\.log$")


def channels(log_path):
    """'16' or '16 (tuner Bagua v5)': the coll channels NCCL created and the tuner it used."""
    found, tuners = set(), set()
    for path in glob.glob(log_path[:-len(".log")] + ".nccl.*.log"):
        with open(path, errors="replace") as f:
            text = f.read()
        found.update(int(m.group(1)) for m in _CHANNELS.finditer(text))
        tuners.update(f"{m.group(1)} {m.group(2)}" for m in _TUNER.finditer(text))
    out = ",".join(str(c) for c in sorted(found)) or "?"
    return out + (f" (tuner {', '.join(sorted(tuners))})" if tuners else "")


def load(out):
    """{(collective, ranks): {config: {size: [(time_us, busbw)...]}}}, channels, wrong."""
    table = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    chans = collections.defaultdict(set)
    wrong = collections.Counter()
    failed = []
    for path in sorted(glob.glob(os.path.join(out, "*__*__r*_*.log"))):
        m = _TAG.search(os.path.basename(path))
        if not m or ".nccl." in path:
            continue
        config, ranks = m.group(2), (m.group(1), int(m.group(3)))
        run = nccl_logs.parse_nccl_tests(path)
        if not run.rows or not run.concluded:
            failed.append(os.path.basename(path))
            continue
        wrong[(ranks, config)] += run.wrong_total()
        chans[(ranks, config)].add(channels(path))
        for row in run.rows:
            table[ranks][config][row.size].append((row.oop[0], row.oop[2]))
    return table, chans, wrong, failed


def fmt_size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main(out):
    table, chans, wrong, failed = load(out)
    for ranks in sorted(table):
        configs = list(table[ranks])
        coll, n = ranks
        print(f"\n## {coll}, {n} ranks (median of repetitions; time in us <= 1 MiB, busbw GB/s "
              "above)\n")
        ratio_cols = [c for c in ("socket", "socket_tuned") if c in configs]
        print("| size | " + " | ".join(configs) + " | " +
              " | ".join(f"bagua / {c}" for c in ratio_cols) + " |")
        print("|---" * (1 + len(configs) + len(ratio_cols)) + "|")
        sizes = sorted({s for c in configs for s in table[ranks][c]})
        for size in sizes:
            small = size <= (1 << 20)
            vals = {}
            for c in configs:
                pts = table[ranks][c].get(size)
                if pts:
                    vals[c] = statistics.median(p[0] if small else p[1] for p in pts)
            cells = [f"{vals[c]:.1f}" if c in vals else "-" for c in configs]
            ratios = []
            for c in ratio_cols:
                if "bagua" in vals and c in vals and vals[c] > 0:
                    # >= 1 is better for Bagua-Net in both halves of the table.
                    r = vals[c] / vals["bagua"] if small else vals["bagua"] / vals[c]
                    ratios.append(f"{r:.2f}x")
                else:
                    ratios.append("-")
            print(f"| {fmt_size(size)} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        print("\nchannels (NCCL's 'coll channels'), #wrong: " + "; ".join(
            f"{c} {'/'.join(sorted(chans[(ranks, c)]))} ch, {wrong[(ranks, c)]} wrong" for c in configs))
    if failed:
        print("\nruns without a concluded table: " + ", ".join(failed))
    limit_path = os.path.join(out, "limit.txt")
    if os.path.exists(limit_path):
        with open(limit_path) as f:
            lines = [line.rstrip() for line in f if line.strip()]
        print("\nThe host's ceiling for busbw (bench/gpu/tcp_limit.py, loopback TCP; mem_limit.py, "
              "memory passes; before and after the sweeps):\n")
        print("\n".join(f"    {line}" for line in lines))


if __name__ == "__main__":
    main(sys.argv[1])
