"""Convergence of DiLoCo against gradient allreduce on a character-level
language model (issue 30): a small transformer trained on the Python
standard library's own .py sources (read at run time from this
interpreter's stdlib, so every machine has the text), 4 processes on CPU
(Gloo), equal samples seen by both (same per-rank batch, same steps), and
the validation loss of the model each ends with, 3 seeds.

  gradient_allreduce   AdamW on gradients averaged every step
  diloco               AdamW inner steps on each rank's own batches;
                       DiLoCo H = --sync-every (50), outer SGD lr 0.7,
                       Nesterov momentum 0.9, compression --compression
                       (fp4), no overlap (the steps are a multiple of H, so
                       every rank ends on the synced start point)
  diloco_streaming     the same with --fragments (2) and overlap; evaluated
                       on the average of the ranks' weights

Target: DiLoCo's mean validation loss within 3% of gradient allreduce's.

  torchrun --standalone --nproc_per_node 4 bench/cpu/diloco_convergence.py --out RESULT.json

Too slow for CI on 2 cores (minutes); its result is recorded in
bench/results/ (tests/python/test_local_updates.py says where).
"""
import argparse
import glob
import json
import math
import os
import sysconfig
import time

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import diloco, gradient_allreduce


def corpus(max_bytes):
    """The stdlib's top-level .py files in name order, as bytes (tokens 0..255)."""
    files = sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))
    text = bytearray()
    read = 0
    for path in files:
        with open(path, "rb") as f:
            text += f.read()
        read += 1
        if len(text) >= max_bytes:
            break
    data = torch.frombuffer(bytearray(text[:max_bytes]), dtype=torch.uint8).long()
    cut = int(len(data) * 0.9)
    return data[:cut], data[cut:], read


class CharLM(torch.nn.Module):
    def __init__(self, context, width, layers, heads):
        super().__init__()
        self.embed = torch.nn.Embedding(256, width)
        self.position = torch.nn.Parameter(torch.zeros(context, width))
        block = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                                 batch_first=True, norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, 256)
        # Not a buffer: the engine would broadcast it before every forward.
        self.mask = torch.nn.Transformer.generate_square_subsequent_mask(context)

    def forward(self, x):
        h = self.embed(x) + self.position[:x.shape[1]]
        h = self.blocks(h, mask=self.mask[:x.shape[1], :x.shape[1]], is_causal=True)
        return self.head(self.norm(h))


def batch(data, generator, size, context):
    start = torch.randint(0, len(data) - context - 1, (size,), generator=generator)
    idx = start[:, None] + torch.arange(context + 1)
    tokens = data[idx]
    return tokens[:, :-1], tokens[:, 1:]


def validation_loss(net, val, args):
    g = torch.Generator().manual_seed(12345)
    total = 0.0
    with torch.no_grad():
        for _ in range(args.val_batches):
            x, y = batch(val, g, 32, args.context)
            total += float(torch.nn.functional.cross_entropy(net(x).flatten(0, 1), y.flatten()))
    return total / args.val_batches


def run(config, seed, train, val, args, rank, world):
    torch.manual_seed(seed)
    net = CharLM(args.context, args.width, args.layers, args.heads)
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01)
    # Linear warm-up over the first 5% of the steps, then cosine decay to 10%.
    warm = max(1, args.steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * (
        0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, max(0, s - warm) / (args.steps - warm)))))
        if args.cosine else 1.0)
    if config == "gradient_allreduce":
        algorithm = gradient_allreduce.GradientAllReduceAlgorithm()
    else:
        streaming = config == "diloco_streaming"
        algorithm = diloco.DiLoCoAlgorithm(sync_every=args.sync_every, outer_lr=args.outer_lr,
                                           outer_momentum=0.9, nesterov=True,
                                           fragments=args.fragments if streaming else 1,
                                           overlap=streaming, compression=args.compression,
                                           warmup_steps=args.diloco_warmup)
    net.with_bagua([opt], algorithm)
    sent_before = net.bagua_ddp.bytes_sent  # after the initial broadcast
    g = torch.Generator().manual_seed(1000 * seed + rank)
    start = time.time()
    for step in range(args.steps):
        x, y = batch(train, g, args.batch, args.context)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x).flatten(0, 1), y.flatten()).backward()
        opt.step()
        schedule.step()
    seconds = time.time() - start
    bytes_per_step = (net.bagua_ddp.bytes_sent - sent_before) / args.steps
    net.bagua_ddp.close()
    with torch.no_grad():  # the ranks' average (identical ranks: themselves)
        for p in net.parameters():
            dist.all_reduce(p.data)
            p.data /= world
    return validation_loss(net, val, args), seconds, bytes_per_step


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default="gradient_allreduce,diloco,diloco_streaming")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--batch", type=int, default=16, help="sequences per rank per step")
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--sync-every", type=int, default=50)
    p.add_argument("--outer-lr", type=float, default=0.7)
    p.add_argument("--fragments", type=int, default=2)
    p.add_argument("--compression", default="fp4")
    p.add_argument("--cosine", type=int, default=0, help="1: inner lr warm-up then cosine decay")
    p.add_argument("--diloco-warmup", type=int, default=0,
                   help="DiLoCo's warmup_steps (gradient allreduce first)")
    p.add_argument("--corpus-bytes", type=int, default=4 << 20)
    p.add_argument("--val-batches", type=int, default=40)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    bagua.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    train, val, files = corpus(args.corpus_bytes)
    configs, seeds = args.configs.split(","), [int(s) for s in args.seeds.split(",")]
    results = {c: {"val_loss": [], "seconds": [], "bytes_per_step": []} for c in configs}
    for seed in seeds:
        for config in configs:
            loss, seconds, sent = run(config, seed, train, val, args, rank, world)
            results[config]["val_loss"].append(loss)
            results[config]["seconds"].append(seconds)
            results[config]["bytes_per_step"].append(sent)
            if rank == 0:
                print(f"seed {seed} {config}: validation loss {loss:.4f} "
                      f"({seconds:.0f} s, {sent / 1e3:.1f} kB sent per rank per step)", flush=True)
    if rank == 0:
        means = {c: sum(r["val_loss"]) / len(r["val_loss"]) for c, r in results.items()}
        base = means.get("gradient_allreduce")
        for c, m in means.items():
            rel = f" ({100 * (m / base - 1):+.2f}% vs gradient_allreduce)" if base else ""
            print(f"mean validation loss {c}: {m:.4f}{rel}  (uniform: {math.log(256):.3f})")
        with open(args.out, "w") as f:
            json.dump({"results": results, "mean_val_loss": means, "world": world,
                       "train_tokens": len(train), "val_tokens": len(val), "stdlib_files": files,
                       "params": sum(p.numel() for p in CharLM(args.context, args.width,
                                                               args.layers, args.heads)
                                     .parameters()),
                       "args": vars(args)}, f, indent=1)


if __name__ == "__main__":
    main()
