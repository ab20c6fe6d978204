"""The load-balanced batch sampler's target on CPU (issue 23): a
variable-length sequence model trained with torch DDP (gloo) on 2 ranks, one
thread each, samples of skewed lengths (log-normal, 8..512 tokens):

  baseline  DistributedSampler + batches of --batch samples padded to the
            batch's longest sample;
  balanced  LoadBalancingDistributedSampler(lengths=...) +
            LoadBalancingDistributedBatchSampler(max_tokens = batch x mean
            length): about as many steps per epoch as the baseline, every
            sample once per epoch (equal samples per epoch).

Reported: steps/s and samples/s per epoch, repetitions interleaved (baseline,
balanced, baseline, ...), and padded tokens per epoch. Target: balanced
steps/s >= 1.5x the baseline's.

  python bench/cpu/lb_sampler_bench.py [--reps 3] [--samples 2048] [--json OUT]
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from bagua.torch_api.contrib import (LoadBalancingDistributedBatchSampler,
                                     LoadBalancingDistributedSampler)

VOCAB = 1000


class Sequences(Dataset):
    def __init__(self, n, seed=0):
        rng = np.random.default_rng(seed)
        self.lengths = np.clip(rng.lognormal(4.3, 0.8, n), 8, 512).astype(np.int64)
        self.tokens = [torch.from_numpy(rng.integers(1, VOCAB, L)) for L in self.lengths]
        self.labels = rng.integers(0, 10, n)

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        return self.tokens[i], int(self.labels[i])


def pad_collate(batch):
    longest = max(len(t) for t, _ in batch)
    tokens = torch.zeros(len(batch), longest, dtype=torch.int64)
    for row, (t, _) in enumerate(batch):
        tokens[row, :len(t)] = t
    return tokens, torch.tensor([y for _, y in batch])


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64, padding_idx=0)
        self.conv1 = nn.Conv1d(64, 128, 5, padding=2)
        self.conv2 = nn.Conv1d(128, 128, 5, padding=2)
        self.head = nn.Linear(128, 10)

    def forward(self, tokens):
        mask = (tokens != 0).unsqueeze(1).float()
        x = self.embed(tokens).transpose(1, 2)
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        pooled = (x * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        return self.head(pooled)


def loader_for(method, data, rank, world, batch, epoch):
    if method == "baseline":
        sampler = DistributedSampler(data, world, rank, shuffle=True, seed=0)
        sampler.set_epoch(epoch)
        return DataLoader(data, batch_size=batch, sampler=sampler, collate_fn=pad_collate)
    sampler = LoadBalancingDistributedSampler(data, lengths=data.lengths, num_replicas=world,
                                              rank=rank, seed=0)
    budget = int(batch * data.lengths.mean())
    batches = LoadBalancingDistributedBatchSampler(sampler, max_tokens=budget)
    batches.set_epoch(epoch)
    return DataLoader(data, batch_sampler=batches, collate_fn=pad_collate)


def worker(rank, world, store_path, args, out):
    torch.set_num_threads(1)
    store = dist.FileStore(store_path, world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    data = Sequences(args.samples)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Model())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    results = []
    order = ["baseline", "balanced"] * args.reps
    for i, method in enumerate(order):
        loader = loader_for(method, data, rank, world, args.batch, epoch=i)
        steps = samples = padded = 0
        dist.barrier()
        t = time.perf_counter()
        for tokens, labels in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(tokens), labels).backward()
            opt.step()
            steps += 1
            samples += len(labels)
            padded += tokens.numel()
        dist.barrier()
        elapsed = time.perf_counter() - t
        results.append({"method": method, "steps": steps, "samples": samples,
                        "padded_tokens": padded, "seconds": elapsed})
    if rank == 0:
        with open(out, "w") as f:
            json.dump(results, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--json")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        mp.spawn(worker, args=(args.world, os.path.join(tmp, "store"), args, out),
                 nprocs=args.world)
        with open(out) as f:
            results = json.load(f)
    data = Sequences(args.samples)
    print(f"# {args.world} ranks x 1 thread, {args.samples} samples, lengths 8..512 "
          f"(mean {data.lengths.mean():.0f}, median {np.median(data.lengths):.0f}), "
          f"baseline batch {args.batch}, budget {int(args.batch * data.lengths.mean())} tokens")
    for r in results:
        print(json.dumps(r))
    print("\n| sampler | steps/epoch (rank 0) | samples/epoch (rank 0) | padded tokens/epoch | "
          "steps/s min / median / max | samples/s median |")
    print("|---|---|---|---|---|---|")
    rate, sample_rate = {}, {}
    for method in ("baseline", "balanced"):
        rows = [r for r in results if r["method"] == method]
        sps = [r["steps"] / r["seconds"] for r in rows]
        rate[method] = sps
        sample_rate[method] = [r["samples"] / r["seconds"] for r in rows]
        samples_per_s = statistics.median(r["samples"] / r["seconds"] for r in rows)
        print(f"| {method} | {rows[0]['steps']} | {rows[0]['samples']} | "
              f"{rows[0]['padded_tokens']} | {min(sps):.2f} / {statistics.median(sps):.2f} / "
              f"{max(sps):.2f} | {samples_per_s:.1f} |")
    ratios = [b / a for a, b in zip(rate["baseline"], rate["balanced"])]
    sample_ratios = [b / a for a, b in zip(sample_rate["baseline"], sample_rate["balanced"])]
    print(f"\nbalanced / baseline per interleaved pair: steps/s "
          f"{', '.join(f'{x:.2f}' for x in ratios)} (target >= 1.5: "
          f"{'met' if min(ratios) >= 1.5 else 'NOT met'}); samples/s (epoch time) "
          f"{', '.join(f'{x:.2f}' for x in sample_ratios)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
