#!/usr/bin/env python3
"""Summarises abi_client_bench.sh's runs.tsv: per size and configuration, the
median of the per-round ratios to tcp (bandwidth and CPU s/GB) with the
distribution-free 95% interval of the median (the binomial sign test's order
statistics, as bagua-net-perf's stats.cc), and the median GB/s.

Usage: abi_client_summary.py RUNS.tsv
"""
import collections
import csv
import math
import statistics
import sys


def median_interval(values, confidence=0.95):
    """(low, high) order statistics bracketing the median, or None when too few."""
    values = sorted(values)
    n = len(values)
    miss = (1 - confidence) / 2
    cdf, j = 0.0, 0
    for i in range(n // 2):
        cdf += math.comb(n, i) / 2 ** n
        if cdf > miss:
            break
        j = i + 1
    return (values[j - 1], values[n - j]) if j else None


def cell(ratios):
    interval = median_interval(ratios)
    text = f"{statistics.median(ratios):.2f}"
    return text + (f" [{interval[0]:.2f}-{interval[1]:.2f}]" if interval else "")


def main(path):
    runs = collections.defaultdict(dict)  # (size, round) -> config -> (gbps, cpu)
    configs = []
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            runs[(int(row["size"]), int(row["round"]))][row["config"]] = (
                float(row["gbps"]), float(row["cpu_s_per_gb"]))
            if row["config"] not in configs:
                configs.append(row["config"])
    sizes = sorted({size for size, _ in runs})
    others = [c for c in configs if c != "tcp"]
    print("| size | tcp GB/s | " + " | ".join(
        f"{c} GB/s | {c} / tcp | {c} cpu/GB / tcp" for c in others) + " |")
    print("|---" * (2 + 3 * len(others)) + "|")
    for size in sizes:
        rounds = [v for (s, _), v in sorted(runs.items()) if s == size and "tcp" in v]
        cells = [f"{size >> 20}M", f"{statistics.median(r['tcp'][0] for r in rounds):.2f}"]
        for c in others:
            pairs = [(r[c], r["tcp"]) for r in rounds if c in r]
            cells.append(f"{statistics.median(p[0][0] for p in pairs):.2f}")
            cells.append(cell([p[0][0] / p[1][0] for p in pairs]))
            cells.append(cell([p[0][1] / p[1][1] for p in pairs]))
        print("| " + " | ".join(cells) + " |")
    print(f"\n{len(rounds)} rounds per size; cells: median of per-round ratios [95% interval]")


if __name__ == "__main__":
    main(sys.argv[1])
