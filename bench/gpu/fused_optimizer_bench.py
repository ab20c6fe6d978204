#!/usr/bin/env python3
"""The fused optimizer's step on one GPU (issue 28; docs/fused_optimizer.md),
with torch's implementations and the copy bandwidth measured in the same run.

Parameter sets, built as the issue measured them (fp32):
  large  80 blocks of d=1024: (3d,d) (3d) (d,d) (d) (4d,d) (4d) (d,4d) (d) and
         four (d) each, plus one (50304,d): 1.06B parameters in 961 tensors
  small  100,000 1-D tensors, sizes torch.randint(64, 4097) with seed 0: 208M
Gradients are random and stay in place; 3 warm-up steps; then each step is
timed with CUDA events (min/median/max over the timed steps).

Configurations per set: torch fused/foreach AdamW, torch fused SGD momentum,
torch fused on ONE flat tensor of the same size, Lion (plain PyTorch)
unfused and on one flat tensor, and ours: fuse_optimizer(AdamW), (SGD
momentum), (Lamb) and (Lion), each with check_flatten=True (every tensor
checked every step) and False (use counts only), each on FRESH parameters
(never the tensors an earlier configuration laid out); a configuration that
fell back to the unfused optimizer is marked NOT FUSED. "% bw" = bytes the
step must move / time / copy bandwidth (AdamW 28 B per parameter, SGD
momentum and Lion 20, Lamb 28); copy bandwidth = 2 x bytes of a 4 GiB
device-to-device copy / its time. The slow torch baselines of the small set
run 1-2 steps (0.5-7 s each). The small set also reports our host time
alone (the same number of 1-element tensors). The large set sweeps the
kernels' tuning around the defaults.

Also: end to end (steps/s of a 50M-parameter MLP and of a model of many
small tensors, zero_grad() at torch's default, fused vs torch fused AdamW),
and correctness on the GPU (each path against the unfused optimizer over 100
steps; the CUDA kernels against their CPU reference, bit for bit).

  python3 bench/gpu/fused_optimizer_bench.py --out OUT/fused.json [--parts correctness,large,small,e2e]
  python3 bench/gpu/fused_optimizer_bench.py --device cpu --scale 0.001 --out x.json  (smoke test)
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
sys.path.insert(0, HERE)

from fused_checks import check_correctness  # noqa: E402
from fused_e2e import bench_end_to_end  # noqa: E402
from fused_support import Lion  # noqa: E402

from bagua.torch_api.contrib import Lamb, fuse_optimizer  # noqa: E402
from bagua.torch_api.contrib.fuse import native  # noqa: E402

BYTES_PER_PARAM = {"adamw": 28, "sgd": 20, "lion": 20, "lamb": 28}


def log(*args):
    print(*args, flush=True)


# -- parameter sets -------------------------------------------------------------------
def large_shapes(scale):
    d = max(8, int(1024 * scale ** 0.5))
    blocks = 80
    per_block = [(3 * d, d), (3 * d,), (d, d), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,),
                 (d,), (d,), (d,), (d,)]
    return per_block * blocks + [(max(8, int(50304 * scale ** 0.5)), d)]


def small_shapes(scale):
    n = max(10, int(100_000 * scale))
    sizes = torch.randint(64, 4097, (n,), generator=torch.Generator().manual_seed(0))
    return [(int(s),) for s in sizes]


def make_set(shapes, device):
    """Parameters with random gradients in place (separate allocations)."""
    params = []
    for s in shapes:
        p = torch.nn.Parameter(torch.empty(s, device=device).normal_(0, 0.02))
        p.grad = torch.empty(s, device=device).normal_(0, 1e-3)
        params.append(p)
    return params


def make_flat(params):
    n = sum(p.numel() for p in params)
    flat = torch.nn.Parameter(torch.empty(n, device=params[0].device).normal_(0, 0.02))
    flat.grad = torch.empty(n, device=params[0].device).normal_(0, 1e-3)
    return flat


# -- timing ---------------------------------------------------------------------------------
def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(step, device, warmup, iters):
    """Per-step times in ms (CUDA events on the GPU, wall clock on the CPU)."""
    for _ in range(warmup):
        step()
    sync(device)
    times = []
    for _ in range(iters):
        if device.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            step()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        else:
            t = time.perf_counter()
            step()
            times.append((time.perf_counter() - t) * 1e3)
    return times


def summary(times):
    return dict(min_ms=min(times), median_ms=statistics.median(times), max_ms=max(times),
                steps=len(times))


def copy_bandwidth(device, gib):
    n = int(gib * 2 ** 30) // 4
    src = torch.empty(n, device=device).normal_()
    dst = torch.empty_like(src)
    times = time_steps(lambda: dst.copy_(src), device, 3, 10)
    del src, dst
    med = statistics.median(times)
    return dict(bytes=n * 4, **summary(times), gbps=2 * n * 4 / (med * 1e-3) / 1e9)


# -- configurations -------------------------------------------------------------------------
def torch_opt(kind, params, impl):
    kw = dict(fused=True) if impl == "fused" else dict(foreach=True) if impl == "foreach" else {}
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, **kw)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, **kw)
    if kind == "lion":
        return Lion(params, lr=1e-5, weight_decay=0.01)
    if kind == "lamb":
        return Lamb(params, lr=1e-3, weight_decay=0.01)
    raise ValueError(kind)


def run_config(name, kind, make_opt, device, warmup, iters, numel, bw, results, extra=None,
               fresh=None):
    """Times make_opt(params).step(); params: `fresh()` (new parameters with
    gradients: every fused configuration gets its own, never the tensors an
    earlier one laid out) or None (make_opt takes none)."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    params = fresh() if fresh is not None else None
    sync(device)
    t0 = time.perf_counter()
    opt = make_opt(params) if fresh is not None else make_opt()
    sync(device)
    setup_s = time.perf_counter() - t0
    del params
    times = time_steps(opt.step, device, warmup, iters)
    s = summary(times)
    s.update(name=name, kind=kind, setup_s=setup_s, params=numel)
    s["pct_copy_bw"] = 100.0 * BYTES_PER_PARAM[kind] * numel / (s["median_ms"] * 1e-3) / \
        (bw * 1e9)
    fused = getattr(opt, "_bagua_fused", None)
    if fused is not None:
        s["stats"] = opt.bagua_fused_stats()
        # A configuration that fell back to the unfused optimizer measures nothing of ours.
        s["fused"] = not any(plan.unfused for plan in fused.plans)
        s["native"] = sum(len(plan.natives) for plan in fused.plans)
        s["exact_check"] = "use counts" if not fused.exact else "fields" if all(
            flat.watch.reads_fields for plan in fused.plans for flat in plan.flats) else \
            "accessors"
    if extra:
        s.update(extra)
    results.append(s)
    tag = "" if fused is None else (f"  [fused, {s['native']} native, check by {s['exact_check']}]"
                                    if s["fused"] else "  [NOT FUSED: invalid]")
    log(f"  {name:34s} median {s['median_ms']:9.3f} ms  (min {s['min_ms']:.3f}, max "
        f"{s['max_ms']:.3f}, {s['steps']} steps)  {s['pct_copy_bw']:6.1f}% of copy bw  "
        f"setup {setup_s:.1f}s{tag}")
    del opt
    return s


def host_overhead(shapes, device, kinds, res):
    """Host time of our step alone: the same number of tensors of ONE
    element each (the kernel then takes microseconds), wall clock around
    step() with a synchronize."""
    tiny = [(1,)] * len(shapes)
    for kind in kinds:
        for exact in (True, False):
            opt = fuse_optimizer(torch_opt(kind, make_set(tiny, device), ""), check_flatten=exact)
            for _ in range(3):
                opt.step()
            sync(device)
            times = []
            for _ in range(20):
                t = time.perf_counter()
                opt.step()
                sync(device)
                times.append((time.perf_counter() - t) * 1e3)
            s = summary(times)
            s.update(name=f"host ours {kind} check_flatten={exact}", kind=kind)
            res.append(s)
            log(f"  host time ours {kind:5s} check_flatten={exact!s:5s} median "
                f"{s['median_ms']:.3f} ms (min {s['min_ms']:.3f}) for {len(shapes)} tensors")
            del opt


def bench_set(label, shapes, device, bw, iters, kinds):
    log(f"\n== {label}: {len(shapes)} tensors")
    params = make_set(shapes, device)
    numel = sum(p.numel() for p in params)
    log(f"   {numel / 1e6:.1f}M parameters")
    res = []
    small = label == "small"
    # torch's per-tensor steps on the small set take 0.5-7 s: few of them.
    slow = dict(warmup=1, iters=2) if small else dict(warmup=3, iters=iters)
    fast = dict(warmup=3, iters=iters)
    cuda = device.type == "cuda"
    for kind in kinds:
        if kind in ("adamw", "sgd") and cuda:
            run_config(f"torch fused {kind}", kind, lambda: torch_opt(kind, params, "fused"),
                       device, slow["warmup"], slow["iters"], numel, bw, res)
        if kind == "adamw":
            run_config("torch foreach adamw", kind, lambda: torch_opt(kind, params, "foreach"),
                       device, slow["warmup"], 1 if small else iters // 2, numel, bw, res)
        if kind == "lion":
            run_config("lion unfused (plain PyTorch)", kind, lambda: torch_opt(kind, params, ""),
                       device, 0 if small else 3, 1 if small else iters, numel, bw, res)
        if kind != "lamb":
            flat = make_flat(params)
            impl = "fused" if cuda and kind != "lion" else ""
            run_config(f"{'torch fused ' if impl else ''}{kind} on one flat tensor", kind,
                       lambda: torch_opt(kind, [flat], impl), device, fast["warmup"],
                       fast["iters"], numel, bw, res)
            del flat
    del params
    fresh = lambda: make_set(shapes, device)  # noqa: E731
    for kind in kinds:
        for exact in (True, False):
            run_config(f"ours {kind} check_flatten={exact}", kind,
                       lambda ps: fuse_optimizer(torch_opt(kind, ps, ""), check_flatten=exact),
                       device, fast["warmup"], fast["iters"], numel, bw, res, fresh=fresh)
    if label == "large" and cuda:
        sweep(fresh, device, fast, numel, bw, res)
    if small:
        host_overhead(shapes, device, [k for k in ("adamw", "sgd") if k in kinds], res)
    return dict(tensors=len(shapes), params=numel, configs=res)


def sweep(fresh, device, fast, numel, bw, res):
    """The element-wise kernels' tuning (native.CHUNK_ELEMS, PACK_ELEMS) on
    the large set, around the defaults (8192, auto = 4 for fp32); LAMB's is
    lamb_sweep (--parts lamb)."""
    defaults = (native.CHUNK_ELEMS, native.PACK_ELEMS)
    try:
        for kind in ("adamw", "sgd"):
            for pack, chunk in ((8, 8192), (4, 32768), (4, 2048)):
                native.PACK_ELEMS, native.CHUNK_ELEMS = pack, chunk
                run_config(f"sweep ours {kind} pack={pack} chunk={chunk}", kind,
                           lambda ps: fuse_optimizer(torch_opt(kind, ps, "")), device,
                           fast["warmup"], fast["iters"], numel, bw, res, fresh=fresh)
    finally:
        native.CHUNK_ELEMS, native.PACK_ELEMS = defaults


def lamb_sweep(device, bw, iters):
    """LAMB on the large set against our AdamW: the default (one batch, three
    launches), then the persistent kernel (batches > 1: pass 2 follows pass 1
    batch by batch and finds its data in L2 when a batch's p, m and v fit
    there) by chunk (elements per item), batch, resident blocks per SM and
    lookahead (pass-1 items of the next batch before a batch's pass 2)."""
    shapes = large_shapes(1.0)
    fresh = lambda: make_set(shapes, device)  # noqa: E731
    numel = sum(torch.Size(s).numel() for s in shapes)
    res = []
    fast = dict(warmup=3, iters=iters)
    run_config("ours adamw", "adamw", lambda ps: fuse_optimizer(torch_opt("adamw", ps, "")),
               device, fast["warmup"], fast["iters"], numel, bw, res, fresh=fresh)
    names = ("PACK_ELEMS", "LAMB_CHUNK_ELEMS", "LAMB_BATCH_ELEMS", "LAMB_BLOCKS_PER_SM",
             "LAMB_LOOKAHEAD")
    defaults = tuple(getattr(native, n) for n in names)
    # Lookahead 0 is the grid: blocks/SM x SMs items of chunk elements each
    # (at 2 blocks/SM and chunk 2048, 8.7 MB of the 50 MB L2 on an H100).
    # LAMB_SWEEP="pack/chunk/batchMi/perSm/ahead,..." replaces the grid.
    grid = [(0, 8192, 0, 0, 0), (0, 2048, 4 << 20, 0, 0)]
    grid += [(0, chunk, batch << 20, per_sm, 0) for chunk in (1024, 2048, 4096)
             for batch in (1, 2, 4, 8) for per_sm in (2, 4)]
    grid += [(0, 2048, 4 << 20, 2, ahead) for ahead in (1, 32, 128, 512)]
    if os.environ.get("LAMB_SWEEP"):
        grid = []
        for item in os.environ["LAMB_SWEEP"].split(","):
            pack, chunk, batch, per_sm, ahead = (int(x) for x in item.split("/"))
            grid.append((pack, chunk, batch << 20, per_sm, ahead))
    try:
        for config in grid:
            for n, v in zip(names, config):
                setattr(native, n, v)
            pack, chunk, batch, per_sm, ahead = config
            s = run_config(f"ours lamb pack={pack} chunk={chunk} batch={batch} blocks/SM={per_sm} "
                           f"lookahead={ahead}", "lamb",
                           lambda ps: fuse_optimizer(torch_opt("lamb", ps, "")), device,
                           fast["warmup"], fast["iters"], numel, bw, res, fresh=fresh)
            log(f"    lamb / adamw: {s['median_ms'] / res[0]['median_ms']:.3f}")
    finally:
        for n, v in zip(names, defaults):
            setattr(native, n, v)
    return dict(params=numel, configs=res)


def ratios(entry):
    by = {c["name"]: c["median_ms"] for c in entry["configs"]}
    out = {}

    def ratio(key, a, b):
        if a in by and b in by:
            out[key] = by[a] / by[b]
    for exact in (True, False):
        tag = f"check_flatten={exact}"
        ratio(f"ours adamw / torch fused adamw ({tag})", f"ours adamw {tag}", "torch fused adamw")
        ratio(f"ours sgd / torch fused sgd ({tag})", f"ours sgd {tag}", "torch fused sgd")
        ratio(f"ours lion / lion on one flat tensor ({tag})", f"ours lion {tag}",
              "lion on one flat tensor")
        ratio(f"lion unfused / ours lion ({tag})", "lion unfused (plain PyTorch)",
              f"ours lion {tag}")
        ratio(f"ours lamb / ours adamw ({tag})", f"ours lamb {tag}", f"ours adamw {tag}")
        ratio(f"torch fused adamw / ours adamw ({tag})", "torch fused adamw", f"ours adamw {tag}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON results; a text table next to it (.txt)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--scale", type=float, default=1.0, help="shrink the sets (smoke tests)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--parts", default="correctness,large,small,e2e")
    ap.add_argument("--kinds", default="adamw,sgd,lion,lamb",
                    help="optimizers of the large and small parts")
    args = ap.parse_args()
    device = torch.device(args.device)
    parts = args.parts.split(",")
    result = dict(device=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                  torch=torch.__version__, scale=args.scale)

    def save():  # after every part: a cut run still leaves what it measured
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        write_table(result, os.path.splitext(args.out)[0] + ".txt", quiet=True)

    if "correctness" in parts:
        log("== correctness on " + str(device))
        result["correctness"] = check_correctness(device)
        save()
    bw = copy_bandwidth(device, 4 * min(1.0, args.scale * 100))
    result["copy"] = bw
    log(f"== copy bandwidth: {bw['gbps']:.0f} GB/s (2 x bytes of a "
        f"{bw['bytes'] / 2 ** 30:.2f} GiB copy / its time)")
    kinds = args.kinds.split(",")
    for label, shapes in (("large", large_shapes), ("small", small_shapes)):
        if label in parts:
            result[label] = bench_set(label, shapes(args.scale), device, bw["gbps"],
                                      args.iters, kinds)
            result[label]["ratios"] = ratios(result[label])
            for k, v in result[label]["ratios"].items():
                log(f"  ratio {k}: {v:.3f}")
            save()
    if "lamb" in parts:
        log("\n== LAMB sweep (large set)")
        result["lamb_sweep"] = lamb_sweep(device, bw["gbps"], args.iters)
        save()
    if "e2e" in parts:
        log("\n== end to end (zero_grad() at torch's default)")
        result["end_to_end"] = bench_end_to_end(device, args.scale)
    save()
    write_table(result, os.path.splitext(args.out)[0] + ".txt")


def write_table(result, path, quiet=False):
    lines = [f"device: {result['device']}, torch {result['torch']}, scale {result['scale']}"]
    if "copy" in result:
        lines.append(f"copy bandwidth: {result['copy']['gbps']:.0f} GB/s")
    for label in ("large", "small"):
        if label not in result:
            continue
        e = result[label]
        lines.append(f"\n{label}: {e['params'] / 1e6:.1f}M parameters in {e['tensors']} tensors")
        lines.append(f"| config | median ms | min | max | % copy bw |")
        lines.append("|---|---|---|---|---|")
        for c in e["configs"]:
            pct = f"{c['pct_copy_bw']:.1f}" if "pct_copy_bw" in c else "host only"
            if c.get("fused") is False:
                pct += " (NOT FUSED)"
            lines.append(f"| {c['name']} | {c['median_ms']:.3f} | {c['min_ms']:.3f} | "
                         f"{c['max_ms']:.3f} | {pct} |")
        for k, v in e["ratios"].items():
            lines.append(f"ratio {k}: {v:.3f}")
    for name, e in result.get("end_to_end", {}).items():
        lines.append(f"\nend to end {name} ({e['tensors']} tensors): " + ", ".join(
            f"{k} {v:.2f} steps/s" for k, v in e["steps_per_s"].items()))
    for k, v in result.get("correctness", {}).items():
        if k == "kernels gpu == cpu bitwise":
            lines.append(f"correctness {k}: {v['all']} (" + ", ".join(
                f"{case}: {c['gpu_equals_cpu']}" for case, c in v.items() if case != "all") + ")")
        else:
            lines.append(f"correctness {k}: {v}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    if not quiet:
        log("\n".join(lines))


if __name__ == "__main__":
    main()
