"""Issue 30's table from algorithms_bench.py results (run_api_gpu.sh's
`diloco` step): per link (the JSON's rate limit) and configuration the
median steps/s over the rounds, the min-max range, the median with the
drain of what is in flight at the end counted (algorithms_bench.py), and
the bytes each rank sent per step; then the targets' ratios, measured in the same run:
DiLoCo >= 0.9x no communication, >= 10x gradient allreduce, >= 3x ByteGrad,
its bytes per step <= 1/100 of gradient allreduce's, local SGD >= 1.0x
torch's post-local SGD.

    python3 bench/gpu/diloco_summary.py RESULT.json [RESULT.json ...]
"""
import json
import statistics
import sys

NAMES = {
    "nocomm_sgd": "no communication",
    "ga_sgd": "bagua gradient_allreduce",
    "bytegrad_sgd": "bagua bytegrad",
    "diloco_sgd": "bagua diloco (H={h}, {f} fragments, overlap, {c})",
    "local_sgd_sgd": "bagua local_sgd (H={h})",
    "torch_plsgd_sgd": "torch PostLocalSGDOptimizer + PeriodicModelAverager (H={h})",
}
TARGETS = [  # (what, numerator, denominator, field, bound, at least?)
    ("diloco / no communication, steps/s", "diloco_sgd", "nocomm_sgd", "steps", 0.9, True),
    ("diloco / gradient_allreduce, steps/s", "diloco_sgd", "ga_sgd", "steps", 10.0, True),
    ("diloco / bytegrad, steps/s", "diloco_sgd", "bytegrad_sgd", "steps", 3.0, True),
    ("diloco / gradient_allreduce, bytes per step", "diloco_sgd", "ga_sgd", "bytes", 0.01, False),
    ("local_sgd / torch post-local SGD, steps/s", "local_sgd_sgd", "torch_plsgd_sgd", "steps",
     1.0, True),
]


def link(result):
    mbps = result.get("rate_limit_mbps") or ""
    return f"{int(mbps) / 1000:g} Gbit/s per rank" if mbps else "no rate limit"


def summarize(result):
    rows = {}
    for name, rates in result["steps_per_s"].items():
        sent = result.get("bytes_per_step", {}).get(name, [])
        drained = result.get("drained_steps_per_s", {}).get(name, [])
        rows[name] = {"steps": statistics.median(rates), "lo": min(rates), "hi": max(rates),
                      "drained": statistics.median(drained) if drained else float("nan"),
                      "bytes": statistics.median(sent) if sent else float("nan")}
    return rows


def main(paths):
    for path in paths:
        with open(path) as f:
            result = json.load(f)
        rows = summarize(result)
        args = result.get("args", {})
        rounds = len(next(iter(result["steps_per_s"].values())))
        names = {k: v.format(h=args.get("diloco_sync_every"), f=args.get("diloco_fragments"),
                             c=args.get("diloco_compression")) for k, v in NAMES.items()}
        print(f"\n### {link(result)} ({result['world']} ranks, {rounds} rounds)\n")
        print("| configuration | steps/s (median, range) | drained | MB sent per rank per step |")
        print("|---|---|---|---|")
        for name, row in rows.items():
            print(f"| {names.get(name, name)} | {row['steps']:.2f} "
                  f"({row['lo']:.2f}-{row['hi']:.2f}) | {row['drained']:.2f} | "
                  f"{row['bytes'] / 1e6:.3f} |")
        print("\n| target | measured | bound | met |")
        print("|---|---|---|---|")
        for what, a, b, field, bound, at_least in TARGETS:
            if a not in rows or b not in rows or not rows[b][field]:
                continue
            ratio = rows[a][field] / rows[b][field]
            met = ratio >= bound if at_least else ratio <= bound
            sign = ">=" if at_least else "<="
            print(f"| {what} | {ratio:.4g} | {sign} {bound:g} | {'yes' if met else 'NO'} |")


if __name__ == "__main__":
    main(sys.argv[1:])
