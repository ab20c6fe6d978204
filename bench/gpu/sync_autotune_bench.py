"""Autotune of sync_every on the GPU machine (issue 30, part 3): DiLoCo (or
local SGD) starts at a too-small H with `autotune=True`, and the search
picks the smallest H whose steps/s stay within 5% of no communication.
Checked in the same torchrun job against an independent sweep: fresh
seeded models at fixed H = winner / 2, winner, 2 x winner and an engine
that never syncs (H = 1e9: the search's own reference, the same hooks and
no exchange), each timed the same way; plain torch with no engine is
reported too.

The model: algorithms_bench.py's 50M-parameter MLP (3 x 4096 x 4096), SGD,
the same fixed data. DiLoCo: --fragments 3, fp4, overlap (automatic tau).
A configuration is timed over --steps steps (rounded up to whole periods)
after one whole period of warm-up, on the compute stream at both ends (an
exchange in flight on the communicator's stream is steady state); its
steps/s is the slowest rank's.

Run (one GPU, ranks as hosts, under MPS; bench/gpu/run_api_gpu.sh OUT sync_autotune):
  BAGUA_NET_RATE_LIMIT_MBPS=1000 torchrun --standalone --nproc_per_node 4 --no-python \\
    bench/gpu/hostid_exec.sh python3 bench/gpu/sync_autotune_bench.py --out RESULT.json
Rank 0 prints the search, one line per configuration and the verdict.
"""
import argparse
import json
import math
import time

import torch
import torch.distributed as dist

from bagua.torch_api.algorithms import Algorithm
from bagua.torch_api.data_parallel.autotune import Autotune

from algorithms_bench import add_model_arguments, build_model, start


def algorithm(args, sync_every):
    if args.algorithm == "local_sgd":
        return Algorithm.init("local_sgd", sync_every=sync_every)
    return Algorithm.init("diloco", sync_every=sync_every, fragments=args.fragments,
                          compression=args.compression)


def make(args, device, sync_every, autotune=None):
    """(model, optimizer); sync_every None: no communication."""
    model = build_model(args.width, args.layers, device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    if sync_every is not None:
        model.with_bagua([opt], algorithm(args, sync_every), autotune=autotune)
    return model, opt


def stepper(model, opt, data):
    xs, ys = data

    def step(i):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(xs[i % len(xs)]), ys[i % len(ys)]).backward()
        opt.step()
    return step


def timed_rate(step, warmup, steps, device):
    """steps/s of `steps` steps after `warmup` ones, the slowest rank's."""
    for i in range(warmup):
        step(i)
    stream = torch.cuda.current_stream(device) if device.type == "cuda" else None
    if stream is not None:
        stream.synchronize()
    t0 = time.perf_counter()
    for i in range(steps):
        step(i)
    if stream is not None:
        stream.synchronize()
    rate = torch.tensor([steps / (time.perf_counter() - t0)], device=device)
    dist.all_reduce(rate, op=dist.ReduceOp.MIN)
    return float(rate.item())


def close(model):
    engine = model.__dict__.get("bagua_ddp")
    if engine is not None:
        runtime = engine.bagua_algorithm.runtime
        if runtime is not None and hasattr(runtime, "flush"):
            runtime.flush()
        engine.close()


def whole_periods(steps, h):
    return h * max(1, math.ceil(steps / h))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algorithm", default="diloco", choices=["diloco", "local_sgd"])
    p.add_argument("--start-sync-every", type=int, default=8)
    p.add_argument("--fragments", type=int, default=3)
    p.add_argument("--compression", default="fp4")
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--budget", type=int, default=3000)
    p.add_argument("--steps", type=int, default=400)
    add_model_arguments(p, width=4096, layers=3)
    args = p.parse_args()
    device, rank, data = start(args)
    say = print if rank == 0 else (lambda *a, **k: None)

    # The search, from a too-small H.
    model, opt = make(args, device, args.start_sync_every,
                      Autotune(budget_steps=args.budget, sync_every_tolerance=args.tolerance))
    engine = model.bagua_ddp
    step = stepper(model, opt, data)
    t0, i = time.perf_counter(), 0
    while engine.autotune_state()["status"] in ("waiting", "searching") and i < args.budget + 5:
        step(i)
        i += 1
    search_seconds = time.perf_counter() - t0
    state = engine.autotune_state()
    winner = state["winner"]["sync_every"]
    say(f"search: {i} steps, {search_seconds:.1f} s, winner sync_every {winner}")
    tuned = timed_rate(step, 0, whole_periods(args.steps, winner), device)
    close(model)

    # The independent sweep, fresh models: the engine that never syncs (the
    # search's reference: the same hooks, no exchange) first and last, and no
    # engine at all (plain torch) for the record.
    never = 10**9
    rates = {"autotuned": tuned}
    for h in (never, max(winner // 2, 1), winner, 2 * winner, never, None):
        model, opt = make(args, device, h)
        period = args.fragments if h in (None, never) else h
        rate = timed_rate(stepper(model, opt, data), period + 2,
                          whole_periods(args.steps, 2 * winner), device)
        name = "plain_torch" if h is None else "never_syncs" if h == never else f"fixed_{h}"
        rates[name] = max(rates.get(name, 0.0), rate)  # the engine that never syncs: best of 2
        close(model)
    ref = rates["never_syncs"]
    ratios = {k: v / ref for k, v in rates.items()}
    for k, v in rates.items():
        say(f"{k:>12}: {v:8.2f} steps/s  {ratios[k]:.3f}x never syncing")
    half = f"fixed_{max(winner // 2, 1)}"
    if state["winner"]["within_tolerance"]:
        met = ratios[f"fixed_{winner}"] >= 1 - args.tolerance - 0.02 and \
            (winner // 2 < state["candidates"][0] or ratios[half] < 1 - args.tolerance + 0.02)
        rule = (f"its fixed run within {args.tolerance:.0%} of never syncing, less 2 points of "
                "noise; half of it not")
    else:  # no candidate is within the tolerance: the largest allowed, and it is not
        met = winner == max(state["candidates"]) and \
            ratios[f"fixed_{winner}"] < 1 - args.tolerance
        rule = "none within the tolerance: the largest candidate, confirmed outside it"
    say(f"verdict: winner {winner} {'MET' if met else 'NOT MET'} ({rule})")
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({"state": state, "rates": rates, "ratios": ratios, "met": met,
                       "search_steps": i, "search_seconds": search_seconds,
                       "args": vars(args)}, f, indent=1)


if __name__ == "__main__":
    main()
