#!/usr/bin/env python3
"""Summary of run_multi_gpu.sh's hierarchical step: for each algorithm, the
largest |hierarchical - flat| over the ranks (tests/python/hier_check.py's
tolerance), the bytes node leaders sent each other and the most any
non-leader sent across nodes (from `ss`, where the machine had it); then
steps/s flat against hierarchical from algorithms_bench.py's JSON.

Usage: hier_summary.py HIER_DIR  (reads HIER_DIR/<algorithm>.rank<r>.json,
HIER_DIR/speed.json; markdown on stdout)
"""
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "python"))
from hier_check import TOLERANCE, cross_node_traffic, weight_check  # noqa: E402


def equality(folder):
    print("| algorithm | largest \\|hier - flat\\| | tolerance | within | leaders' bytes "
          "across nodes | most a non-leader sent across nodes |")
    print("|---|---|---|---|---|---|")
    for algorithm in TOLERANCE:
        paths = sorted(glob.glob(os.path.join(folder, f"{algorithm}.rank*.json")))
        if not paths:
            print(f"| {algorithm} | no result | | | | |")
            continue
        ranks = [json.load(open(p)) for p in paths]
        ranks.sort(key=lambda r: r["rank"])
        checks = [weight_check(algorithm, r) for r in ranks]
        diff = max(d for d, _ in checks)
        tol = min(t for _, t in checks)
        traffic = cross_node_traffic(ranks)
        leaders = others = "no ss"
        if traffic is not None:
            leaders = f"{traffic[0]:,}"
            others = f"{max((s for _, _, s in traffic[1]), default=0):,}"
        ok = all(d <= t for d, t in checks)
        print(f"| {algorithm} | {diff:.3g} | {tol:.3g} | {'yes' if ok else 'NO'} | {leaders} | "
              f"{others} |")


def speed(path):
    if not os.path.exists(path):
        print("\nno steps/s result")
        return
    d = json.load(open(path))
    rates = d["steps_per_s"]
    limit = d.get("rate_limit_mbps") or "none"
    print(f"\nsteps/s (median of {d['args']['rounds']} rounds), {d['world']} ranks, "
          f"rate limit {limit} Mbit/s\n")
    print("| algorithm | flat | hierarchical | hierarchical / flat |")
    print("|---|---|---|---|")
    for name in rates:
        if name.endswith("_hier") or name + "_hier" not in rates:
            continue
        flat = statistics.median(rates[name])
        hier = statistics.median(rates[name + "_hier"])
        print(f"| {name} | {flat:.2f} | {hier:.2f} | {hier / flat:.2f}x |")


if __name__ == "__main__":
    equality(sys.argv[1])
    speed(os.path.join(sys.argv[1], "speed.json"))
