#!/usr/bin/env python3
"""Per-sweep times and their medians from a net_defaults.sh output folder.

Usage: per_run_medians.py DIR [OUT]. For every all_reduce__NAME__rN_K.log in
DIR: one line "NAME__rN_K t8 t64 t512 t4K" (us, out-of-place time at
8 B / 64 B / 512 B / 4 KiB; "-" where the sweep had no such size), written to
OUT if given; then, per configuration with its "_b" twin folded in (the ABBA
order's second name), the median of each column.
"""
import collections
import glob
import os
import re
import statistics
import sys

SIZES = (8, 64, 512, 4096)


def times(path):
    found = {}
    for line in open(path):
        f = line.split()
        if len(f) > 5 and f[0].isdigit() and int(f[0]) in SIZES and int(f[0]) not in found:
            found[int(f[0])] = f[5]
    return [found.get(s, "-") for s in SIZES]


def main():
    folder = sys.argv[1]
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "all_reduce__*__r*_*.log"))):
        if ".nccl." in path:
            continue
        rows.append((os.path.basename(path)[len("all_reduce__"):-len(".log")], times(path)))
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as out:
            for name, t in rows:
                out.write(" ".join([name] + t) + "\n")
    by_config = collections.defaultdict(list)
    for name, t in rows:
        config = re.sub(r"_b$", "", name.split("__")[0])
        by_config[config].append(t)
    for config, runs in sorted(by_config.items()):
        medians = []
        for column in zip(*runs):
            values = [float(v) for v in column if v != "-"]
            medians.append(round(statistics.median(values), 1) if values else "-")
        print(config, len(runs), "median 8B/64B/512B/4K:", medians)


if __name__ == "__main__":
    main()
