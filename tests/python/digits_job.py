"""Training job for the Python tests: an MLP on scikit-learn's bundled
digits data (no download), started by torchrun with N ranks (or alone with
--single for the full-batch reference). Each rank takes its share of every
full batch (rows rank, rank + N, ...), so gradient allreduce over N ranks
equals single-process training on the full batch. Writes, per rank,
OUT.rank<r>.json with the first and last loss, accuracy and the weights.
"""
import argparse
import json
import os

import torch
from sklearn.datasets import load_digits


def data():
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.long)
    return x, y


def model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(64, 48), torch.nn.ReLU(), torch.nn.Linear(48, 10))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--algorithm", default="gradient_allreduce")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--single", action="store_true")
    p.add_argument("--error-feedback", action="store_true")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    x, y = data()
    net = model()
    rank, size = 0, 1
    wrapped = net
    if not args.single:
        import torch.distributed as dist

        import bagua

        dist.init_process_group("gloo")
        rank, size = dist.get_rank(), dist.get_world_size()
        opts = {"error_feedback": True} if args.error_feedback else {}
        wrapped = bagua.BaguaDistributedDataParallel(net, args.algorithm, **opts)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr)
    losses = []
    for step in range(args.steps):
        lo = (step * args.batch) % (len(x) - args.batch)
        xb, yb = x[lo:lo + args.batch], y[lo:lo + args.batch]
        mine = slice(rank, None, size)
        loss = torch.nn.functional.cross_entropy(wrapped(xb[mine]), yb[mine])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    with torch.no_grad():
        accuracy = float((net(x).argmax(1) == y).float().mean())
    weights = torch.cat([p.detach().flatten() for p in net.parameters()]).tolist()
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump({"losses": losses, "accuracy": accuracy, "weights": weights,
                   "world": size, "pid": os.getpid()}, f)
    if not args.single:
        wrapped.close()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
