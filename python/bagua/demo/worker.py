"""One worker of the demo (started by `python -m bagua.demo` through
`python -m bagua.distributed.run`): trains a small MLP on scikit-learn's
digits once per algorithm, each rank on its shard of the training set, and
rank 0 writes OUT/results.json: per algorithm the wall time, the bytes this
rank sent, the held-out accuracy after each epoch (rank 0's weights; async
averages them first) and the time it was reached (evaluation excluded).
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua import registry
from bagua.torch_api.algorithms import Algorithm
from bagua.torch_api.algorithms.q_adam import QAdamAlgorithm, QAdamOptimizer

from . import traffic

# Option values for a single machine and a run of seconds: flat (one node),
# background averaging often enough to matter in a few seconds.
OPTION_OVERRIDES = {"hierarchical": False, "sync_interval_ms": 20}
SGD_LR, SGD_MOMENTUM = 0.05, 0.9
QADAM_LR = 0.002
QADAM_WARMUP_STEPS = 100  # the original's default; a 1-epoch warm-up diverged after 9 epochs


def load_digits(rank, world, device):
    from sklearn.datasets import load_digits as digits
    from sklearn.model_selection import train_test_split

    x, y = digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x / 16.0, y, test_size=0.2, random_state=0, stratify=y)

    def tensors(a, b):
        return (torch.tensor(a, dtype=torch.float32, device=device),
                torch.tensor(b, dtype=torch.long, device=device))

    return tensors(x_train[rank::world], y_train[rank::world]), tensors(x_test, y_test)


def build_model(device):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10)).to(device)


def make(name, model):
    """(optimizer, algorithm) for registry algorithm `name`, its options at
    their defaults except OPTION_OVERRIDES."""
    if name == "qadam":
        opt = QAdamOptimizer(model.parameters(), lr=QADAM_LR, warmup_steps=QADAM_WARMUP_STEPS)
        return opt, QAdamAlgorithm(opt, hierarchical=False)
    names = {o["name"] for o in registry.entry(name)["options"]}
    options = {k: v for k, v in OPTION_OVERRIDES.items() if k in names}
    return torch.optim.SGD(model.parameters(), lr=SGD_LR, momentum=SGD_MOMENTUM), Algorithm.init(name, **options)


def accuracy(model, eval_model, test):
    # local_sgd and diloco keep their state in the module's state_dict
    # (`_bagua_<name>.*`, docs/algorithms.md); a plain model takes the rest.
    weights = {k: v for k, v in model.state_dict().items() if not k.startswith("_bagua_")}
    eval_model.load_state_dict(weights)
    with torch.no_grad():
        return (eval_model(test[0]).argmax(1) == test[1]).float().mean().item()


def train(name, args, train_set, test, device, rank):
    model = build_model(device)
    eval_model = build_model(device).eval()
    n = len(train_set[0])
    steps_per_epoch = n // args.batch
    try:
        opt, algorithm = make(name, model)
    except (TypeError, ValueError, NotImplementedError) as error:
        # The same on every rank, before any communication: an algorithm
        # added to the registry that needs arguments this demo does not know.
        return {"algorithm": name, "error": f"{type(error).__name__}: {error}"}
    model.with_bagua([opt], algorithm)
    bar = progress(name, args.epochs * steps_per_epoch, rank, args)
    sent = traffic.snapshot()
    curve = [(0.0, accuracy(model, eval_model, test))]
    clock = 0.0
    for epoch in range(args.epochs):
        order = torch.randperm(n, generator=torch.Generator().manual_seed(epoch)).to(device)
        start = time.perf_counter()
        for i in range(steps_per_epoch):
            idx = order[i * args.batch:(i + 1) * args.batch]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(train_set[0][idx]), train_set[1][idx])
            loss.backward()
            opt.step()
            if bar is not None:
                bar.update(1)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        clock += time.perf_counter() - start
        if epoch + 1 == args.epochs and hasattr(model.bagua_algorithm, "abort"):
            model.bagua_algorithm.abort(model)  # async: stop, and average once more
        acc = accuracy(model, eval_model, test)
        curve.append((clock, acc))
        if bar is not None:
            bar.set_postfix(accuracy=f"{acc:.3f}")
    bytes_sent = traffic.sent_since(sent)
    # Every rank counts before any closes its connections: a socket whose peer
    # closed is closed here too (Gloo's loop does so on EOF), and its bytes
    # would go uncounted. Local SGD, DiLoCo and async let ranks end their last
    # steps far apart (DiLoCo's row read 0.00 MB in 2 runs of 3 without this).
    # Bagua's barrier: on the communicator every algorithm already used (torch's
    # would open a NCCL communicator of its own on GPUs).
    bagua.barrier()
    if bar is not None:
        bar.close()
    model.bagua_ddp.close()
    return {"algorithm": name, "wall_s": clock, "bytes_sent": bytes_sent,
            "accuracy": curve[-1][1], "curve": curve, "steps": args.epochs * steps_per_epoch}


def progress(name, total, rank, args):
    """A tqdm bar on rank 0 (None elsewhere or without tqdm)."""
    if rank != 0 or args.no_progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=f"{name:<28}", file=sys.stderr, unit="step", mininterval=0.2,
                bar_format="{desc} {bar:30} {n_fmt}/{total_fmt} {elapsed} {postfix}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--algorithms", default=",".join(registry.available()))
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args()
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", 0))
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
        if int(os.environ.get("LOCAL_WORLD_SIZE", 1)) > torch.cuda.device_count():
            # Ranks sharing a GPU are separate NCCL hosts, so their traffic
            # crosses the network plugin (shared/BENCHMARKING.md).
            os.environ.setdefault("NCCL_HOSTID", f"bagua-demo-{os.environ.get('RANK', 0)}")
    else:
        device = torch.device("cpu")
    bagua.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    train_set, test = load_digits(rank, world, device)
    results = []
    for name in args.algorithms.split(","):
        results.append(train(name, args, train_set, test, device, rank))
        if rank == 0:
            with open(os.path.join(args.out, "results.json"), "w") as f:
                json.dump({"world_size": world, "device": device.type, "epochs": args.epochs,
                           "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
