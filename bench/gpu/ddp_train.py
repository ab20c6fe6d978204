"""Seeded PyTorch DDP job for the GPU proof (issue 4): an MLP of wide Linear
layers (3 x 4096 x 4096 = 50M parameters by default) regressing a fixed
linear teacher on fixed synthetic inputs, started by torchrun.

Prints every step's loss (repr and float.hex, so runs over different NCCL
transports can be compared bit for bit) and the steps per second of the
timed steps. Each rank writes PREFIX.rank<r>.json with the same numbers.

Why the losses should match exactly across transports: with 2 ranks each
gradient element is reduced as a + b, and IEEE addition is commutative, so
every transport and algorithm gives the same bits; the rest of the step is
made deterministic below (no TF32, deterministic algorithms, fixed data).

Run: python3 -m torch.distributed.run --standalone --nproc_per_node 2 \
       ddp_train.py --label bagua --out-json /tmp/ddp_bagua
"""

import argparse
import json
import os
import sys
import time

# cuBLAS needs this before its first handle for deterministic results.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=80, help="total steps, warm-up included")
    p.add_argument("--warmup", type=int, default=10, help="untimed first steps")
    p.add_argument("--batch", type=int, default=256, help="per-rank batch size")
    p.add_argument("--width", type=int, default=4096, help="Linear layer width")
    p.add_argument("--layers", type=int, default=3, help="number of width x width layers")
    p.add_argument("--batches", type=int, default=4, help="distinct fixed batches per rank")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--lr", type=float, default=0.3)
    p.add_argument("--label", default="run", help="transport label echoed in the output")
    p.add_argument("--out-json", default="", help="prefix for per-rank JSON results")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu (gloo) only to try the script on a machine without GPUs")
    return p.parse_args()


def register_pid():
    """Lets run_all.sh reap this worker if its launcher is killed."""
    piddir = os.environ.get("BENCH_PID_DIR")
    if piddir and os.path.isdir(piddir):
        open(os.path.join(piddir, str(os.getpid())), "w").close()


def build_model(width, layers):
    mods = []
    for i in range(layers):
        mods.append(torch.nn.Linear(width, width))
        if i + 1 < layers:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods)


def main():
    args = parse_args()
    register_pid()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(local_rank)
        dev = torch.device("cuda", local_rank)
    else:
        dev = torch.device("cpu")

    def sync():
        if cuda:
            torch.cuda.synchronize(dev)

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)

    t_init = time.perf_counter()
    if cuda:
        dist.init_process_group(backend="nccl", device_id=dev)
    else:
        dist.init_process_group(backend="gloo")
    dist.barrier()
    init_s = time.perf_counter() - t_init

    torch.manual_seed(args.seed)  # same initial weights on every rank
    model = build_model(args.width, args.layers).to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    ddp = DDP(model, device_ids=[local_rank] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

    # Fixed per-rank inputs, so the allreduce really mixes different gradients;
    # targets from one fixed linear "teacher", so the loss visibly falls.
    teacher = torch.randn(args.width, args.width,
                          generator=torch.Generator().manual_seed(args.seed + 7))
    g = torch.Generator().manual_seed(args.seed + 1000 * (rank + 1))
    xs = torch.randn(args.batches, args.batch, args.width, generator=g)
    ys = (xs @ teacher) / args.width ** 0.5
    xs, ys = xs.to(dev), ys.to(dev)
    loss_fn = torch.nn.MSELoss()

    losses = torch.zeros(args.steps, dtype=torch.float32, device=dev)
    t0 = None
    for step in range(args.steps):
        if step == args.warmup:
            sync()
            t0 = time.perf_counter()
        i = step % args.batches
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(xs[i]), ys[i])
        loss.backward()
        opt.step()
        losses[step] = loss.detach()
    sync()
    timed = args.steps - args.warmup
    elapsed = time.perf_counter() - t0 if t0 is not None else float("nan")
    steps_per_s = timed / elapsed if timed > 0 and elapsed > 0 else float("nan")

    vals = losses.tolist()
    result = {
        "label": args.label,
        "rank": rank,
        "world_size": world,
        "params": nparams,
        "grad_bytes_per_step": nparams * 4,
        "steps": args.steps,
        "warmup": args.warmup,
        "timed_steps": timed,
        "elapsed_s": elapsed,
        "steps_per_s": steps_per_s,
        "init_s": init_s,
        "losses": vals,
        "losses_hex": [float(v).hex() for v in vals],
        "torch": torch.__version__,
        "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()) if cuda else "-",
        "device": torch.cuda.get_device_name(dev) if cuda else "cpu",
    }
    if args.out_json:
        with open(f"{args.out_json}.rank{rank}.json", "w") as f:
            json.dump(result, f)
    if rank == 0:
        lines = [f"DDP {args.label} rank 0 step {s} loss {v!r} hex {float(v).hex()}"
                 for s, v in enumerate(vals)]
        lines.append(
            f"DDP {args.label} result params={nparams} world={world} batch={args.batch} "
            f"timed_steps={timed} elapsed_s={elapsed:.4f} steps_per_s={steps_per_s:.3f} "
            f"init_s={init_s:.2f} torch={result['torch']} nccl={result['nccl']}")
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
