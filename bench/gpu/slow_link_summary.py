#!/usr/bin/env python3
"""Summary of slow_link.sh: per all_reduce size, each config's median busbw
and algorithm bandwidth as a share of the line rate; DDP steps/s; exactness.

Usage: slow_link_summary.py OUT_DIR RATE_GBIT  (markdown on stdout)
"""
import collections
import json
import os
import statistics
import sys


def main(out, rate_gbit):
    line_GBps = float(rate_gbit) / 8
    runs = collections.defaultdict(list)
    path = os.path.join(out, "results.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    runs[r["config"]].append(r)
    if not runs:
        print("no results (every run failed: see the rank logs)")
        return
    configs = list(runs)
    sizes = sorted({a["bytes"] for rs in runs.values() for r in rs for a in r["allreduce"]})
    print(f"\nall_reduce, 2 ranks over {rate_gbit} Gbit/s ({line_GBps:.2f} GB/s): "
          "algbw GB/s (share of line rate), median of repetitions\n")
    print("| size | " + " | ".join(configs) + " |")
    print("|---" * (1 + len(configs)) + "|")
    for size in sizes:
        cells = []
        for c in configs:
            vals = [a["algbw_GBps"] for r in runs[c] for a in r["allreduce"] if a["bytes"] == size]
            if vals:
                m = statistics.median(vals)
                cells.append(f"{m:.3f} ({100 * m / line_GBps:.0f}%)")
            else:
                cells.append("-")
        print(f"| {size >> 20} MiB | " + " | ".join(cells) + " |")
    print("\nDDP (MLP 6 x Linear(2048, 2048), batch 64), steps/s, median: " + "; ".join(
        f"{c} {statistics.median(r['ddp']['steps_per_s'] for r in runs[c]):.2f}" for c in configs))
    gapped = [c for c in configs if all("ddp_gap" in r for r in runs[c])]
    if gapped:
        gap = runs[gapped[0]][0]["ddp_gap"]["gap_ms"]
        print(f"DDP with the link idle {gap:g} ms between steps: ms per step without the gap, "
              "median: " + "; ".join(
                  f"{c} {statistics.median(r['ddp_gap']['busy_ms_per_step'] for r in runs[c]):.1f}"
                  for c in gapped))
    inexact = [c for c in configs for r in runs[c] for a in r["allreduce"] if not a["exact"]]
    print(f"\nexact all_reduce results: {'all' if not inexact else 'NOT for ' + ', '.join(sorted(set(inexact)))}; "
          f"runs per config: " + ", ".join(f"{c} {len(runs[c])}" for c in configs))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
