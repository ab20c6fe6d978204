"""Autotune on the GPU machine (issue 25's target): from a bad bucket size,
autotune reaches >= 95% of the best fixed bucket size's steps/s within 200
steps; the fixed sizes are swept in the same torchrun job, before and after
the autotuned run (A, autotune, A reversed), each configuration on a fresh
seeded model.

The model: 50M parameters as an MLP of `--layers` Linear(width, width)
(default 192 x 512 x 512 = 50.4M, 384 tensors of 1 MiB and 2 KiB). The
runtime never splits a tensor across buckets, so on the 3 x 4096 MLP of
algorithms_bench.py every size up to 64 MiB gives the same 3 buckets and
there is nothing to tune; many smaller tensors are where the bucket size
matters (a bad size means hundreds of collectives per step).

Each timed window is CUDA-synchronized at both ends; a configuration's
steps/s is the slowest rank's. Autotune: `--budget` steps (the winner runs
from step `--budget` at the latest), then `--steps` timed steps.

Run (one GPU, ranks as hosts, under MPS; bench/gpu/run_api_gpu.sh OUT autotune):
  BAGUA_NET_RATE_LIMIT_MBPS=10000 torchrun --standalone --nproc_per_node 4 --no-python \\
    bench/gpu/hostid_exec.sh python3 bench/gpu/autotune_bench.py --out RESULT.json
Rank 0 prints one line per configuration and the verdict, and writes RESULT.json.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

from bagua.torch_api.algorithms import Algorithm
from bagua.torch_api.data_parallel import DistributedDataParallel
from bagua.torch_api.data_parallel.autotune import Autotune

# The same MLP, device choice and fixed data as the algorithms' benchmark.
from algorithms_bench import add_model_arguments, build_model, start


def wrap(args, device, bucket_mb, autotune=None):
    """The model under Bagua's DDP class at `bucket_mb`, and its optimizer."""
    model = build_model(args.width, args.layers, device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    ddp = DistributedDataParallel(model, optimizers=[opt], bucket_cap_mb=bucket_mb,
                                  algorithm=Algorithm.init("gradient_allreduce",
                                                           hierarchical=False),
                                  autotune=autotune)
    return ddp, opt


def run_steps(model, opt, data, n):
    xs, ys = data
    for i in range(n):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(xs[i % len(xs)]), ys[i % len(ys)]).backward()
        opt.step()


def timed(model, opt, data, n, device):
    torch.cuda.synchronize(device) if device.type == "cuda" else None
    start = time.perf_counter()
    run_steps(model, opt, data, n)
    torch.cuda.synchronize(device) if device.type == "cuda" else None
    rate = torch.tensor([n / (time.perf_counter() - start)], device=device)
    dist.all_reduce(rate, op=dist.ReduceOp.MIN)  # the job moves at its slowest rank
    return float(rate.item())


def close(model, device):
    model.close()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def fixed(args, device, data, mb):
    model, opt = wrap(args, device, mb)
    buckets = len(model.bagua_buckets)
    run_steps(model, opt, data, args.warmup)
    rate = timed(model, opt, data, args.steps, device)
    close(model, device)
    return rate, buckets


def autotuned(args, device, data):
    model, opt = wrap(args, device, args.start_mb, Autotune(budget_steps=args.budget))
    torch.cuda.synchronize(device) if device.type == "cuda" else None
    start = time.perf_counter()
    run_steps(model, opt, data, args.budget)
    torch.cuda.synchronize(device) if device.type == "cuda" else None
    tuning_s = time.perf_counter() - start
    state = model.autotune_state()
    rate = timed(model, opt, data, args.steps, device)
    states = [None] * dist.get_world_size()
    dist.all_gather_object(states, state)
    close(model, device)
    return rate, state, tuning_s, all(s == states[0] for s in states)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="0.1,1,4,16,64,256", help="fixed bucket sizes, MiB")
    p.add_argument("--start-mb", type=float, default=0.1, help="autotune's (bad) start")
    p.add_argument("--budget", type=int, default=200)
    p.add_argument("--steps", type=int, default=20, help="timed steps per configuration")
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--target", type=float, default=0.95)
    add_model_arguments(p, width=512, layers=192)
    args = p.parse_args()
    device, rank, data = start(args)
    sizes = [float(s) for s in args.sizes.split(",")]
    rates = {str(mb): [] for mb in sizes}
    buckets = {}

    def sweep(order):
        for mb in order:
            rate, buckets[str(mb)] = fixed(args, device, data, mb)
            rates[str(mb)].append(rate)
            if rank == 0:
                print(f"fixed {mb:g} MiB ({buckets[str(mb)]} buckets): {rate:.2f} steps/s",
                      flush=True)

    sweep(sizes)
    rate, state, tuning_s, agree = autotuned(args, device, data)
    if rank == 0:
        w = state["winner"]
        print(f"autotune from {args.start_mb:g} MiB: {state['status']} after "
              f"{state.get('search_steps')} steps ({tuning_s:.1f} s), winner "
              f"{w['bucket_bytes'] / 2**20:g} MiB ({w.get('buckets')} buckets); then "
              f"{rate:.2f} steps/s; ranks agree: {agree}", flush=True)
    sweep(list(reversed(sizes)))
    if rank != 0:
        return
    medians = {mb: statistics.median(r) for mb, r in rates.items()}
    best = max(medians, key=medians.get)
    ratio = rate / medians[best]
    verdict = "MET" if ratio >= args.target and agree and state["status"] == "done" else "NOT MET"
    print(f"autotuned {rate:.2f} steps/s = {100 * ratio:.1f}% of the best fixed size ({best} "
          f"MiB, {medians[best]:.2f} steps/s); target >= {100 * args.target:.0f}% within "
          f"{args.budget} steps: {verdict}", flush=True)
    with open(args.out, "w") as f:
        json.dump({"fixed_steps_per_s": rates, "fixed_buckets": buckets, "autotuned": rate,
                   "ratio_to_best": ratio, "best_fixed_mb": best, "verdict": verdict,
                   "ranks_agree": agree, "tuning_seconds": tuning_s, "state": state,
                   "world": dist.get_world_size(),
                   "rate_limit_mbps": os.environ.get("BAGUA_NET_RATE_LIMIT_MBPS", ""),
                   "args": vars(args)}, f, indent=1)


if __name__ == "__main__":
    main()
