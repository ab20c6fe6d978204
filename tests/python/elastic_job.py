"""Worker for test_elastic.py: training under torchrun's elastic agent
(restart the world) with bagua.torch_api.checkpoint's save_checkpoint and
load_checkpoint; writes OUT.rank<r>.json.

Every --every steps rank 0 saves a checkpoint. With --kill-at K, rank 1 of
the first attempt kills itself (SIGKILL) before step K; torchrun restarts
both workers, which load the newest checkpoint and finish. With --reload-at
S (the reference), no one is killed and the workers reload the checkpoint of
step S in place right after writing it. With --change-model, a restarted
attempt builds a wider model (its load must fail clearly).

After training, each worker closes its engine and builds and closes three
more on a copy of the model (communicators and buckets formed again in the
process), counting its threads and file descriptors each time.
"""
import argparse
import gc
import json
import os
import signal
import time

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua.torch_api.checkpoint import load_checkpoint, save_checkpoint


def counts():
    gc.collect()
    return {"threads": len(os.listdir("/proc/self/task")), "fds": len(os.listdir("/proc/self/fd"))}


def build(hidden):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, 4))


def batch(step, rank, device):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return (torch.randn(8, 16, generator=g).to(device),
            torch.randint(0, 4, (8,), generator=g).to(device))


def train_step(model, opt, step, rank):
    x, y = batch(step, rank, next(model.parameters()).device)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--kill-at", type=int, default=-1)
    p.add_argument("--reload-at", type=int, default=-1)
    p.add_argument("--change-model", action="store_true")
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--device", default="cpu", help="cuda: LOCAL_RANK modulo the GPUs (NCCL)")
    args = p.parse_args()
    device = torch.device("cpu")
    if args.device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) %
                              torch.cuda.device_count())
        torch.cuda.set_device(device)
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))
    bagua.init_process_group()
    rank = dist.get_rank()
    hidden = args.hidden * 2 if args.change_model and attempt > 0 else args.hidden
    model = build(hidden).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    start = load_checkpoint(args.ckpt, model, opt, map_location=device)
    before = counts()
    model.with_bagua([opt], "gradient_allreduce")
    first_step_at = None
    for step in range(start, args.steps):
        if attempt == 0 and rank == 1 and step == args.kill_at:
            with open(args.out + ".killed_at", "w") as f:
                f.write(repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)
        train_step(model, opt, step, rank)
        if first_step_at is None:
            first_step_at = time.time()
        if (step + 1) % args.every == 0:
            save_checkpoint(step + 1, args.ckpt, model, opt, keep=3)
            if step + 1 == args.reload_at:
                load_checkpoint(args.ckpt, model, opt)
    weights = torch.cat([q.detach().reshape(-1) for q in model.parameters()]).cpu().tolist()
    model.bagua_ddp.close()
    after_close = counts()
    reformed = []
    for _ in range(3):
        twin = build(hidden).to(device)
        twin.load_state_dict(model.state_dict())
        twin_opt = torch.optim.SGD(twin.parameters(), lr=0.1)
        twin.with_bagua([twin_opt], "gradient_allreduce")
        train_step(twin, twin_opt, 0, rank)
        twin.bagua_ddp.close()
        del twin, twin_opt
        reformed.append(counts())
    out = {"attempt": attempt, "resumed_from": start, "weights": weights,
           "first_step_at": first_step_at, "before_engine": before, "after_close": after_close,
           "reformed": reformed, "world_size": dist.get_world_size()}
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
