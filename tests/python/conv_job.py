"""Worker for the convergence test (torchrun, 4 CPU processes): trains an
MLP on scikit-learn's digits (1197 training images split across the ranks,
600 held out) with several algorithms and seeds in one job, and writes each
final held-out accuracy to OUT.rank0.json.

Pairs compared by the test: gradient_allreduce + SGD against decentralized
(all, shift_one), low-precision decentralized and asynchronous model average
(+ SGD); gradient_allreduce + Adam against QAdam (warm-up of a fifth of the
steps)."""
import argparse
import json
import time

import torch
from sklearn.datasets import load_digits

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import async_model_average, decentralized, gradient_allreduce, q_adam


def data():
    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32) / 16.0
    y = torch.tensor(d.target, dtype=torch.long)
    g = torch.Generator().manual_seed(0)
    order = torch.randperm(len(x), generator=g)
    x, y = x[order], y[order]
    return (x[:1197], y[:1197]), (x[1197:], y[1197:])


def train(config, seed, steps, rank, world):
    (x, y), (tx, ty) = data()
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    if config in ("qadam", "adam"):
        opt = q_adam.QAdamOptimizer(net.parameters(), lr=3e-3, warmup_steps=steps // 5) \
            if config == "qadam" else torch.optim.Adam(net.parameters(), lr=3e-3)
        algorithm = q_adam.QAdamAlgorithm(opt, hierarchical=False) if config == "qadam" else \
            gradient_allreduce.GradientAllReduceAlgorithm()
    else:
        opt = torch.optim.SGD(net.parameters(), lr=0.2, momentum=0.9)
        if config == "sgd":
            algorithm = gradient_allreduce.GradientAllReduceAlgorithm()
        elif config == "lpd":
            algorithm = decentralized.LowPrecisionDecentralizedAlgorithm(hierarchical=False)
        elif config == "async":
            algorithm = async_model_average.AsyncModelAverageAlgorithm(sync_interval_ms=1,
                                                                       warmup_steps=steps // 5)
        else:
            algorithm = decentralized.DecentralizedAlgorithm(
                hierarchical=False, peer_selection_mode=config.split(":")[1])
    net.with_bagua([opt], algorithm)
    mine = torch.arange(rank, len(x), world)
    g = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        idx = mine[torch.randint(0, len(mine), (16,), generator=g)]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
        opt.step()
        if config == "async":
            # A step of a real model takes milliseconds: the background
            # averages then come every few steps, not every few hundred.
            time.sleep(0.005)
    if config == "async":
        net.bagua_algorithm.abort(net)  # stops the background rounds, averages once more
    # Decentralized ranks hold different models: evaluate their average,
    # the model one would checkpoint.
    with torch.no_grad():
        flat = torch.cat([p.reshape(-1) for p in net.parameters()])
        bagua.allreduce_inplace(flat, op=bagua.ReduceOp.AVG)
        offset = 0
        for p in net.parameters():
            p.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        net.eval()
        return float((net(tx).argmax(1) == ty).float().mean())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=250)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--configs", default="sgd,decentralized:all,decentralized:shift_one,lpd,async,"
                                        "adam,qadam")
    args = p.parse_args()
    bagua.init_process_group()
    rank, world = bagua.get_rank(), bagua.get_world_size()
    results = {c: [train(c, seed, args.steps, rank, world) for seed in range(args.seeds)]
               for c in args.configs.split(",")}
    if rank == 0:
        with open(f"{args.out}.rank0.json", "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
