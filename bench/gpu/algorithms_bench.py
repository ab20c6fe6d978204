"""Training steps per second of Bagua's algorithms against what users run
today, all in one torchrun job so every configuration shares the machine
state, measured in interleaved rounds (A B C ... A B C ...).

The model is bench/gpu/ddp_train.py's: an MLP of `--layers` Linear(width,
width) (3 x 4096 x 4096 = 50M parameters), per-rank batch 256, fixed data.
Each configuration builds a fresh seeded model, wraps it, runs `--warmup`
untimed steps (QAdam: its whole warm-up, so the timed steps are the
compressed ones), then `--steps` timed steps (CUDA synchronized around them).

Configurations (--configs, comma separated):
  ddp_sgd, ddp_bf16_sgd           torch DDP (+ bf16_compress_hook), SGD
  ga_sgd, bytegrad_sgd            bagua gradient_allreduce / bytegrad, SGD
  dec_all_sgd, dec_shift_one_sgd  bagua decentralized, SGD
  ddp_adam, ddp_bf16_adam         torch DDP (+ bf16 hook), Adam
  ga_adam, qadam                  bagua gradient_allreduce + Adam; QAdam
  lpd_sgd                         bagua low_precision_decentralized, SGD
  async_sgd                       bagua async model average (--async-interval-ms), SGD
  nocomm_sgd                      no communication at all (each rank alone), SGD
Bagua's algorithms run with hierarchical=False: on one GPU the "nodes" are
NCCL_HOSTID hosts that torchrun's environment does not know about.

Run (one GPU, ranks as hosts, under MPS; shared/BENCHMARKING.md):
  torchrun --standalone --nproc_per_node 4 --no-python bench/gpu/hostid_exec.sh \\
    python3 bench/gpu/algorithms_bench.py --out RESULT.json
Rank 0 writes RESULT.json: per configuration the steps/s of every round.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import Algorithm, q_adam

ALL = ("ddp_sgd,ddp_bf16_sgd,ga_sgd,bytegrad_sgd,dec_shift_one_sgd,dec_all_sgd,"
       "ddp_adam,ddp_bf16_adam,ga_adam,qadam")
WEIGHTS = "ga_sgd,dec_shift_one_sgd,lpd_sgd,async_sgd,nocomm_sgd"  # issue 21's comparison


def add_model_arguments(p, width, layers):
    """--width, --layers, --batch, --out, --device (what every job here takes)."""
    p.add_argument("--width", type=int, default=width)
    p.add_argument("--layers", type=int, default=layers)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda", help="cpu: a dry run of the script (Gloo)")


def start(args):
    """(device, rank, fixed data): the device chosen, the job joined, and four
    seeded (input, target) batches per rank on the device."""
    device = pick_device(args.device)
    bagua.init_process_group()
    rank = dist.get_rank()
    g = torch.Generator(device="cpu").manual_seed(rank)
    data = ([torch.randn(args.batch, args.width, generator=g).to(device) for _ in range(4)],
            [torch.randn(args.batch, args.width, generator=g).to(device) for _ in range(4)])
    return device, rank, data


def pick_device(name):
    """This rank's device: cuda (LOCAL_RANK modulo the GPUs, made current) or cpu."""
    if name != "cuda":
        return torch.device("cpu")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device


def build_model(width, layers, device):
    torch.manual_seed(1234)
    mods = []
    for i in range(layers):
        mods.append(torch.nn.Linear(width, width))
        if i + 1 < layers:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods).to(device)


def wrap(name, model, device, args):
    """(model to call, optimizer, warm-up steps) for configuration `name`."""
    adam = name.endswith("adam")
    if name == "qadam":
        opt = q_adam.QAdamOptimizer(model.parameters(), lr=1e-4, warmup_steps=args.qadam_warmup)
        model.with_bagua([opt], q_adam.QAdamAlgorithm(opt, hierarchical=False))
        return model, opt, args.qadam_warmup + args.warmup
    opt = torch.optim.Adam(model.parameters(), lr=1e-4) if adam else \
        torch.optim.SGD(model.parameters(), lr=1e-3)
    if name == "nocomm_sgd":
        return model, opt, args.warmup
    if name.startswith("ddp"):
        wrapped = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
        if "bf16" in name:
            wrapped.register_comm_hook(None, default_hooks.bf16_compress_hook)
        return wrapped, opt, args.warmup
    kind = name.split("_")[0]
    if kind == "ga":
        algorithm = Algorithm.init("gradient_allreduce", hierarchical=False)
    elif kind == "bytegrad":
        algorithm = Algorithm.init("bytegrad", hierarchical=False)
    elif kind == "dec":
        algorithm = Algorithm.init("decentralized", hierarchical=False,
                                   peer_selection_mode="all" if "all" in name else "shift_one")
    elif kind == "lpd":
        algorithm = Algorithm.init("low_precision_decentralized", hierarchical=False)
    else:
        algorithm = Algorithm.init("async", sync_interval_ms=args.async_interval_ms)
    model.with_bagua([opt], algorithm)
    return model, opt, args.warmup


def run_config(name, args, device, data):
    model = build_model(args.width, args.layers, device)
    called, opt, warmup = wrap(name, model, device, args)
    xs, ys = data

    def step(i):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(called(xs[i % len(xs)]), ys[i % len(ys)])
        loss.backward()
        opt.step()
        return loss

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    engine = model.__dict__.get("bagua_ddp")
    background = engine is not None and hasattr(engine.bagua_algorithm, "abort")
    if not background:
        dist.barrier()  # (while async rounds run, no other NCCL collective: docs/algorithms.md)
    for i in range(warmup):
        step(i)
    sync()
    averages = lambda: getattr(engine.bagua_algorithm, "averages", 0) if engine else 0  # noqa
    averages_before = averages()
    start = time.perf_counter()
    timed = args.long_steps if name in ("async_sgd", "nocomm_sgd") else args.steps
    for i in range(timed):
        loss = step(i)
    sync()
    seconds = time.perf_counter() - start
    averaged = averages() - averages_before
    if background:
        engine.bagua_algorithm.abort()  # before any other collective
    rate = torch.tensor([timed / seconds], device=device)
    dist.all_reduce(rate, op=dist.ReduceOp.MIN)  # the job moves at its slowest rank
    finite = bool(torch.isfinite(loss).item())
    if engine is not None:
        engine.close()
    del called, model, opt
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return float(rate.item()), finite, averaged / seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default=ALL, help=f"default: all of issue 20; {WEIGHTS!r} for 21")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--qadam-warmup", type=int, default=4)
    p.add_argument("--async-interval-ms", type=int, default=100)
    p.add_argument("--long-steps", type=int, default=600,
                   help="timed steps of async_sgd and nocomm_sgd (seconds of averaging rounds)")
    add_model_arguments(p, width=4096, layers=3)
    args = p.parse_args()
    device, rank, data = start(args)
    names = args.configs.split(",")
    results = {n: [] for n in names}
    averages_per_s = {n: [] for n in names}
    finite = {n: True for n in names}
    for r in range(args.rounds):
        order = names if r % 2 == 0 else list(reversed(names))
        for name in order:
            rate, ok, avg_rate = run_config(name, args, device, data)
            results[name].append(rate)
            averages_per_s[name].append(avg_rate)
            finite[name] = finite[name] and ok
            if rank == 0:
                extra = f" ({avg_rate:.1f} averages/s)" if avg_rate else ""
                print(f"round {r} {name}: {rate:.2f} steps/s{extra}", flush=True)
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({"steps_per_s": results, "averages_per_s": averages_per_s,
                       "finite_loss": finite, "world": dist.get_world_size(),
                       "rate_limit_mbps": os.environ.get("BAGUA_NET_RATE_LIMIT_MBPS", ""),
                       "args": vars(args)}, f, indent=1)


if __name__ == "__main__":
    main()
