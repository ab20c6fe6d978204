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
  diloco_sgd                      bagua DiLoCo (issue 30): --diloco-sync-every (50),
                                  --diloco-fragments (3: one per layer), overlap
                                  (--diloco-overlap-steps, 0: automatic), --diloco-compression
                                  (fp4); SGD inner steps
  local_sgd_sgd                   bagua local_sgd, sync_every = --diloco-sync-every, SGD
  torch_plsgd_sgd                 PyTorch's post-local SGD: PostLocalSGDOptimizer with
                                  PeriodicModelAverager(period = --diloco-sync-every) on
                                  torch's NCCL group (the same plugin and rate limit)
Bagua's algorithms run with hierarchical=False: on one GPU the "nodes" are
NCCL_HOSTID hosts that torchrun's environment does not know about. A name
ending in "_hier" (ga_sgd_hier, bytegrad_sgd_hier, dec_all_sgd_hier, qadam_hier)
runs it with hierarchical=True: for jobs whose nodes torchrun knows
(--nnodes, LOCAL_WORLD_SIZE; bench/gpu/run_multi_gpu.sh).

Run (one GPU, ranks as hosts, under MPS; shared/BENCHMARKING.md):
  torchrun --standalone --nproc_per_node 4 --no-python bench/gpu/hostid_exec.sh \\
    python3 bench/gpu/algorithms_bench.py --out RESULT.json
Rank 0 writes RESULT.json: per configuration the steps/s of every round
and the bytes each rank sent per step: counted by the runtime for Bagua's
algorithms (the engine's communicator: runtime/comm/counting_communicator.h),
from the same formulas for torch's (ring allreduce of the gradients per
step for DDP, of the weights per average for post-local SGD), 0 without
communication. --slow-steps times the configurations a 1 Gbit/s link
makes take seconds per step (ddp*, ga*, bytegrad*), --long-steps the ones
that communicate every --diloco-sync-every steps (a multiple of it, so every
window holds the same number of syncs).
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
RARE = "nocomm_sgd,ga_sgd,bytegrad_sgd,diloco_sgd,local_sgd_sgd,torch_plsgd_sgd"  # issue 30
LONG = ("async_sgd", "nocomm_sgd", "diloco_sgd", "local_sgd_sgd", "torch_plsgd_sgd")
SLOW = ("ddp", "ga", "bytegrad")


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
    hier = name.endswith("_hier")
    name = name.removesuffix("_hier")
    adam = name.endswith("adam")
    if name == "qadam":
        opt = q_adam.QAdamOptimizer(model.parameters(), lr=1e-4, warmup_steps=args.qadam_warmup)
        model.with_bagua([opt], q_adam.QAdamAlgorithm(opt, hierarchical=hier))
        return model, opt, args.qadam_warmup + args.warmup
    opt = torch.optim.Adam(model.parameters(), lr=1e-4) if adam else \
        torch.optim.SGD(model.parameters(), lr=1e-3)
    if name == "nocomm_sgd":
        return model, opt, args.warmup
    if name == "torch_plsgd_sgd":
        from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
        from torch.distributed.optim import PostLocalSGDOptimizer

        averager = PeriodicModelAverager(period=args.diloco_sync_every, warmup_steps=0)
        return model, PostLocalSGDOptimizer(opt, averager), args.warmup
    if name.startswith("ddp"):
        wrapped = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
        if "bf16" in name:
            wrapped.register_comm_hook(None, default_hooks.bf16_compress_hook)
        return wrapped, opt, args.warmup
    kind = name.split("_")[0]
    if kind == "ga":
        algorithm = Algorithm.init("gradient_allreduce", hierarchical=hier)
    elif kind == "bytegrad":
        algorithm = Algorithm.init("bytegrad", hierarchical=hier)
    elif kind == "dec":
        algorithm = Algorithm.init("decentralized", hierarchical=hier,
                                   peer_selection_mode="all" if "all" in name else "shift_one")
    elif kind == "lpd":
        algorithm = Algorithm.init("low_precision_decentralized", hierarchical=hier)
    elif kind == "diloco":
        algorithm = Algorithm.init("diloco", sync_every=args.diloco_sync_every,
                                   fragments=args.diloco_fragments,
                                   overlap_steps=args.diloco_overlap_steps,
                                   compression=args.diloco_compression)
    elif kind == "local":
        algorithm = Algorithm.init("local_sgd", sync_every=args.diloco_sync_every)
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
    long = name in LONG
    if long:  # one whole sync period first: every fragment exchanged once, connections made
        warmup = max(warmup, args.long_warmup)
    for i in range(warmup):
        step(i)
    # The clock runs from the end of the compute stream's warm-up to the end of its last
    # timed step: an exchange still in flight on a communication stream at either end (a
    # DiLoCo fragment's, applied tau steps later) is steady state, not this window's cost.
    # `drained` also waits for everything in flight at the end (every stream).
    stream_sync = torch.cuda.current_stream().synchronize if device.type == "cuda" else \
        (lambda: None)
    stream_sync()
    averages = lambda: getattr(engine.bagua_algorithm, "averages", 0) if engine else 0  # noqa
    averages_before = averages()
    sent_before = engine.bytes_sent if engine is not None else plsgd_step(opt)
    start = time.perf_counter()
    timed = args.long_steps if long else \
        args.slow_steps if name.split("_")[0] in SLOW else args.steps
    for i in range(timed):
        loss = step(i)
    stream_sync()
    seconds = time.perf_counter() - start
    sync()
    drained = time.perf_counter() - start
    averaged = averages() - averages_before
    if background:
        engine.bagua_algorithm.abort()  # before any other collective
    runtime = getattr(engine.bagua_algorithm, "runtime", None) if engine is not None else None
    if runtime is not None and hasattr(runtime, "flush"):
        runtime.flush()  # DiLoCo: nothing in flight on its NCCL stream during torch's collectives
    sent = bytes_per_step(name, model, engine, opt, sent_before, timed, dist.get_world_size())
    rate = torch.tensor([timed / seconds, timed / drained], device=device)
    dist.all_reduce(rate, op=dist.ReduceOp.MIN)  # the job moves at its slowest rank
    finite = bool(torch.isfinite(loss).item())
    if engine is not None:
        engine.close()
    del called, model, opt
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return float(rate[0].item()), finite, averaged / seconds, sent, float(rate[1].item())


def plsgd_step(opt):
    """The step count of a PostLocalSGDOptimizer's averager (0 for others)."""
    averager = getattr(opt, "averager", None)
    return averager.step if averager is not None else 0


def bytes_per_step(name, model, engine, opt, before, steps, n):
    """Bytes one rank sent per timed step (see the module's docstring)."""
    if engine is not None:
        return (engine.bytes_sent - before) / steps
    ring = 2 * (n - 1) / n * sum(p.numel() * p.element_size() for p in model.parameters())
    if name.startswith("ddp"):
        return ring / (2 if "bf16" in name else 1)
    if name == "torch_plsgd_sgd":
        period = opt.averager.period
        averages = sum(1 for s in range(before, opt.averager.step) if s % period == 0)
        return ring * averages / steps
    return 0.0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default=ALL, help=f"default: all of issue 20; {WEIGHTS!r} for "
                   f"21, {RARE!r} for 30")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--qadam-warmup", type=int, default=4)
    p.add_argument("--async-interval-ms", type=int, default=100)
    p.add_argument("--long-steps", type=int, default=600,
                   help="timed steps of async, nocomm, diloco, local SGD and torch's post-local "
                        "SGD (seconds of averaging rounds; a multiple of --diloco-sync-every)")
    p.add_argument("--slow-steps", type=int, default=20,
                   help="timed steps of ddp*, ga* and bytegrad* (fewer on a 1 Gbit/s link)")
    p.add_argument("--diloco-sync-every", type=int, default=50)
    p.add_argument("--long-warmup", type=int, default=50,
                   help="untimed steps before the --long-steps ones (at least --warmup; default "
                        "one sync period of DiLoCo/local SGD at --diloco-sync-every 50)")
    p.add_argument("--diloco-fragments", type=int, default=3)
    p.add_argument("--diloco-overlap-steps", type=int, default=0, help="0: automatic")
    p.add_argument("--diloco-compression", default="fp4")
    add_model_arguments(p, width=4096, layers=3)
    args = p.parse_args()
    device, rank, data = start(args)
    names = args.configs.split(",")
    results = {n: [] for n in names}
    drained_rates = {n: [] for n in names}
    averages_per_s = {n: [] for n in names}
    sent_per_step = {n: [] for n in names}
    finite = {n: True for n in names}
    for r in range(args.rounds):
        order = names if r % 2 == 0 else list(reversed(names))
        for name in order:
            rate, ok, avg_rate, sent, drained = run_config(name, args, device, data)
            results[name].append(rate)
            drained_rates[name].append(drained)
            averages_per_s[name].append(avg_rate)
            sent_per_step[name].append(sent)
            finite[name] = finite[name] and ok
            if rank == 0:
                extra = f" ({avg_rate:.1f} averages/s)" if avg_rate else ""
                print(f"round {r} {name}: {rate:.2f} steps/s ({drained:.2f} drained), "
                      f"{sent / 1e6:.3f} MB sent per rank per step{extra}", flush=True)
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({"steps_per_s": results, "drained_steps_per_s": drained_rates,
                       "averages_per_s": averages_per_s,
                       "bytes_per_step": sent_per_step,
                       "finite_loss": finite, "world": dist.get_world_size(),
                       "rate_limit_mbps": os.environ.get("BAGUA_NET_RATE_LIMIT_MBPS", ""),
                       "args": vars(args)}, f, indent=1)


if __name__ == "__main__":
    main()
