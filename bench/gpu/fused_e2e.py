"""End to end part of fused_optimizer_bench.py: steps/s of training with
zero_grad() at torch's default (set_to_none=True), torch's fused AdamW
against ours (check_flatten True and False), on a 50M-parameter MLP and on a
model of many small tensors; the configurations interleaved twice, the best
of the two kept."""
import time

import torch

from bagua.torch_api.contrib import fuse_optimizer


def log(*args):
    print(*args, flush=True)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class ManySmall(torch.nn.Module):
    """Many small tensors: `blocks` x (Linear(w, w) + LayerNorm(w)), 4 tensors each."""

    def __init__(self, blocks, width):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.LayerNorm(width))
            for _ in range(blocks))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x)) + x
        return x


def train_rate(model, make_opt, x, y, device, warmup, iters):
    opt = make_opt(model.parameters())

    def step():
        opt.zero_grad()  # torch's default: set_to_none=True
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    for _ in range(warmup):
        step()
    sync(device)
    t = time.perf_counter()
    for _ in range(iters):
        step()
    sync(device)
    return iters / (time.perf_counter() - t)


def bench_end_to_end(device, scale):
    cuda = device.type == "cuda"
    out = {}
    width = max(64, int(4096 * scale ** 0.5))
    models = {
        "mlp_50m": (lambda: torch.nn.Sequential(
            torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
            torch.nn.ReLU(), torch.nn.Linear(width, width)), width, 256),
        "many_small": (lambda: ManySmall(max(10, int(1500 * scale ** 0.5)), 128), 128, 64),
    }
    for name, (build, w, batch) in models.items():
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(batch, w, generator=gen).to(device)
        y = torch.randn(batch, w, generator=gen).to(device)
        rates = {}
        configs = [("torch fused adamw" if cuda else "torch adamw",
                    lambda ps: torch.optim.AdamW(ps, lr=1e-4, fused=cuda or None)),
                   ("ours adamw", lambda ps: fuse_optimizer(torch.optim.AdamW(ps, lr=1e-4))),
                   ("ours adamw check_flatten=False", lambda ps: fuse_optimizer(
                       torch.optim.AdamW(ps, lr=1e-4), check_flatten=False))]
        for rnd in range(2):  # interleaved: A B C A B C
            for label, make in configs:
                torch.manual_seed(0)
                model = build().to(device)
                rate = train_rate(model, make, x, y, device, 5, 30 if cuda else 3)
                rates.setdefault(label, []).append(rate)
                del model
        tensors = len(list(build().parameters()))
        out[name] = dict(tensors=tensors, steps_per_s={k: max(v) for k, v in rates.items()},
                         all_runs=rates)
        log(f"  {name} ({tensors} tensors): " + ", ".join(
            f"{k} {max(v):.2f} steps/s" for k, v in rates.items()))
    return out
