#!/usr/bin/env python3
"""Slims bagua-net-perf JSON files for keeping in the repository.

Drops the per-repetition values ("reps" of every size) and "time_us" (it is
S / algbw_gbps: the same medians, min and max swapped), rounds measured
values to 4 significant digits (far below run-to-run noise), and keeps everything
bench/cpu/report.py and the result READMEs use: per configuration, pattern
and size the min/median/max of bandwidth, time, latency and CPU cost, and
the paired ratio to the reference with its 95% interval. One line per size,
so a diff shows which sizes changed. Marks the file "slimmed": true; the
full file stays in git history (each result README names the commit).

Usage: slim_perf_json.py FILE.json [FILE.json ...]   (rewrites in place)
"""
import json
import sys


def compact(value):
    return json.dumps(value, separators=(", ", ": "))


def rounded(value):
    """`value` with every float rounded to 4 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def slim(data):
    for series in data.get("series", []):
        for size in series.get("sizes", []):
            size.pop("reps", None)
            size.pop("time_us", None)
        series["sizes"] = rounded(series.get("sizes", []))
    data["slimmed"] = True
    return data


def dumps(data):
    """The JSON text: top-level keys one per line, each series' sizes one per line."""
    lines = ["{"]
    keys = list(data)
    for i, key in enumerate(keys):
        end = "," if i + 1 < len(keys) else ""
        if key != "series":
            lines.append(f"  {compact(key)}: {compact(data[key])}{end}")
            continue
        lines.append('  "series": [')
        for j, series in enumerate(data["series"]):
            head = {k: v for k, v in series.items() if k != "sizes"}
            sizes = series.get("sizes", [])
            opening = compact(head)[:-1] + ", " if head else "{"
            lines.append("    " + opening + '"sizes": [')
            for k, size in enumerate(sizes):
                lines.append("      " + compact(size) + ("," if k + 1 < len(sizes) else ""))
            lines.append("    ]}" + ("," if j + 1 < len(data["series"]) else ""))
        lines.append("  ]" + end)
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(paths):
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        if data.get("tool") != "bagua-net-perf":
            print(f"{path}: not a bagua-net-perf file, left alone", file=sys.stderr)
            continue
        text = dumps(slim(data))
        assert json.loads(text) == data
        with open(path, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
