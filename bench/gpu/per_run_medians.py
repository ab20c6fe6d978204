#!/usr/bin/env python3
"""Per-sweep times and their medians from a net_defaults.sh output folder.

Usage: per_run_medians.py [--sizes 8,64,...] DIR [OUT]. For every
all_reduce__NAME__rN_K.log in DIR: one line "NAME__rN_K t8 t64 t512 t4K" (us,
out-of-place time at each size, by default 8 B / 64 B / 512 B / 4 KiB; "-"
where the sweep had no such size), written to OUT if given; then, per
configuration with its "_b" twin folded in (the ABBA order's second name), the
median of each column.
"""
import collections
import glob
import os
import re
import statistics
import sys

SIZES = (8, 64, 512, 4096)


def times(path, sizes):
    found = {}
    for line in open(path):
        f = line.split()
        if len(f) > 5 and f[0].isdigit() and int(f[0]) in sizes and int(f[0]) not in found:
            found[int(f[0])] = f[5]
    return [found.get(s, "-") for s in sizes]


def label(size):
    return f"{size // 1024}K" if size >= 1024 and size % 1024 == 0 else f"{size}B"


def main():
    args = sys.argv[1:]
    sizes = SIZES
    if len(args) > 1 and args[0] == "--sizes":
        sizes = tuple(int(v) for v in args[1].split(","))
        args = args[2:]
    folder = args[0]
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "all_reduce__*__r*_*.log"))):
        if ".nccl." in path:
            continue
        rows.append((os.path.basename(path)[len("all_reduce__"):-len(".log")], times(path, sizes)))
    if len(args) > 1:
        with open(args[1], "w") as out:
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
        print(config, len(runs), "median " + "/".join(label(s) for s in sizes) + ":", medians)


if __name__ == "__main__":
    main()
