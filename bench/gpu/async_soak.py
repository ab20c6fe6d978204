"""Soak of the asynchronous model average on GPUs: trains for --seconds
with background averaging (NCCL through whatever transport the environment
selects, NCCL's default protocols, LL128 included), and every
--cycle-seconds calls abort() (collective: rounds stop, one synchronous
average), checks that every rank holds bit-identical weights, and resume()s.
A hang shows as the launcher's timeout; every cycle is logged with a
timestamp. Rank 0 writes OUT: cycles, averages, steps, whether every check
passed, and the first error.

  torchrun --standalone --nproc_per_node 4 --no-python bench/gpu/hostid_exec.sh \\
    python3 bench/gpu/async_soak.py --seconds 570 --out soak.json
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import async_model_average as am


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=570)
    p.add_argument("--cycle-seconds", type=float, default=3)
    p.add_argument("--interval-ms", type=int, default=50)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    torch.cuda.set_device(device)
    bagua.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
                              torch.nn.Linear(args.width, args.width)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    net.with_bagua([opt], am.AsyncModelAverageAlgorithm(sync_interval_ms=args.interval_ms,
                                                         warmup_steps=5))
    x = torch.randn(128, args.width, device=device, generator=None) + rank
    start, cycles, steps, identical, error = time.time(), 0, 0, True, None
    try:
        while time.time() - start < args.seconds:
            cycle_end = time.time() + args.cycle_seconds
            net.bagua_algorithm.resume(net)
            while time.time() < cycle_end:
                opt.zero_grad()
                net(x).square().mean().backward()
                opt.step()
                steps += 1
            net.bagua_algorithm.abort(net)
            w = torch.cat([q.detach().reshape(-1) for q in net.parameters()])
            everyone = torch.empty(world * w.numel(), device=device)
            bagua.allgather(w, everyone)
            ok = all(torch.equal(c, w) for c in everyone.view(world, -1))
            identical = identical and ok
            cycles += 1
            if rank == 0:
                print(f"{time.time() - start:7.1f}s cycle {cycles}: identical={ok} "
                      f"averages={net.bagua_algorithm.averages} steps={steps}", flush=True)
    except Exception as e:  # noqa: BLE001 - recorded, then raised
        error = f"{type(e).__name__}: {e}"
        raise
    finally:
        if rank == 0:
            with open(args.out, "w") as f:
                json.dump({"seconds": time.time() - start, "cycles": cycles, "steps": steps,
                           "averages": net.bagua_algorithm.averages, "identical": identical,
                           "world": world, "error": error,
                           "nccl_proto": os.environ.get("NCCL_PROTO", "default")}, f)


if __name__ == "__main__":
    main()
