#!/usr/bin/env python3
"""One rank of slow_link.sh: real NCCL through whichever transport the
environment selects, over the emulated link. all_reduce of integer-valued
float32 (exact with 2 ranks, checked), then DDP training steps of an MLP.
Rank 0 writes one JSON line: {"config", "allreduce": [{bytes, time_s,
algbw_GBps, busbw_GBps, exact}], "ddp": {params, steps, steps_per_s}}.

Usage: slow_link_bench.py --rank R --world N --master ADDR:PORT --config NAME --out FILE
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist


def args_():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--master", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--sizes-mib", default="1,4,16,64,256")
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per size (at least 3 ops)")
    p.add_argument("--ddp-steps", type=int, default=15)
    p.add_argument("--ddp-gap-ms", type=float, default=0.0,
                   help="also time DDP steps with the link idle this long between them (a model's "
                        "compute or data loading): TCP may restart from a small window after idle")
    return p.parse_args()


def data(rank, n):
    g = torch.Generator().manual_seed(1000 + rank)
    return torch.randint(-1000, 1000, (n,), generator=g).float()


def allreduce(rank, world, nbytes, seconds):
    n = nbytes // 4
    mine = data(rank, n).cuda()
    want = sum(data(r, n) for r in range(world)).cuda()
    t = mine.clone()
    dist.all_reduce(t)
    exact = bool(torch.equal(t, want))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    dist.all_reduce(t)
    torch.cuda.synchronize()
    one = time.perf_counter() - t0
    # Rank 0's count for every rank: each timing its own op gave the ranks
    # different counts, and the one with more waited forever for its peer.
    iters = torch.tensor([max(3, int(seconds / max(one, 1e-6)))], device="cuda")
    dist.broadcast(iters, 0)
    iters = int(iters.item())
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / iters
    algbw = nbytes / dt / 1e9
    return {"bytes": nbytes, "iters": iters, "time_s": dt, "algbw_GBps": algbw,
            "busbw_GBps": algbw * 2 * (world - 1) / world, "exact": exact}


def ddp_rate(steps, gap_s=0.0):
    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(64, 2048, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        ddp(x).square().mean().backward()
        opt.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    idle = 0.0
    for _ in range(steps):
        step()
        if gap_s > 0:
            torch.cuda.synchronize()
            t_idle = time.perf_counter()
            time.sleep(gap_s)
            idle += time.perf_counter() - t_idle
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    # busy_ms_per_step: the step's time with the idle gaps taken out (each step synchronised).
    return {"params": sum(p.numel() for p in model.parameters()), "steps": steps,
            "steps_per_s": steps / dt, "gap_ms": gap_s * 1e3,
            "busy_ms_per_step": (dt - idle) / steps * 1e3}


def main():
    a = args_()
    os.environ["NCCL_HOSTID"] = f"slow-link-host-{a.rank}"
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://{a.master}", rank=a.rank,
                            world_size=a.world)
    result = {"config": a.config, "allreduce": [], "ddp": None}
    for mib in (int(s) for s in a.sizes_mib.split(",")):
        result["allreduce"].append(allreduce(a.rank, a.world, mib << 20, a.seconds))
    result["ddp"] = ddp_rate(a.ddp_steps)
    if a.ddp_gap_ms > 0:
        result["ddp_gap"] = ddp_rate(a.ddp_steps, a.ddp_gap_ms / 1e3)
    dist.destroy_process_group()
    if a.rank == 0:
        with open(a.out, "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
