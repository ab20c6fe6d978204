#!/usr/bin/env python3
"""One markdown table per bagua-net-perf JSON in raw/: per pattern and size, the
per-round ratio to the reference configuration (median [95% CI]) that the tool
computed, for bandwidth and CPU per GB, and each configuration's median.
Usage: summarize.py FILE.json ..."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "cpu"))
from report import fmt_size  # noqa: E402


def ratio(r):
    lo, hi = r["ci95"]
    ci = f" [{lo:.2f}-{hi:.2f}]" if lo is not None else ""
    return f"{r['median']:.2f}x{ci}"


for path in sys.argv[1:]:
    data = json.load(open(path))
    print(f"\n{path} ({data['options']['reps']} rounds)\n")
    print("| pattern | size | config | GB/s | p50 us | cpu s/GB | algbw / ref | cpu / ref |")
    print("|---|---|---|---|---|---|---|---|")
    for s in data["series"]:
        for z in s["sizes"]:
            vs = z.get("vs_reference")
            cells = [s["pattern"], fmt_size(z["size"]), s["config"],
                     f"{z['algbw_gbps']['median']:.3g}", f"{z['p50_us']['median']:.1f}",
                     f"{z['cpu_s_per_gb']['median']:.3g}",
                     f"{ratio(vs['algbw_ratio'])} vs {vs['config']}" if vs else "reference",
                     ratio(vs["cpu_ratio"]) if vs else ""]
            print("| " + " | ".join(cells) + " |")
