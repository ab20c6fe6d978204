"""Lightning on 2 GPUs with strategy="bagua" against Lightning's DDPStrategy
(issue "Python and Lightning", GPU part). Two tasks:
  --task digits: an MLP on scikit-learn's digits (accuracy: bytegrad must be
                 within 0.5 percentage points of gradient allreduce);
  --task mlp:    a 50M-parameter MLP of 4096-wide layers on fixed synthetic
                 data (steps per second).
Prints one JSON line {"task", "strategy", "accuracy", "steps_per_s", "network"}
from rank 0. Lightning starts the second process itself.

    python lightning_strategy_bench.py --task digits --strategy bagua:bytegrad
    python lightning_strategy_bench.py --task mlp --strategy ddp
"""
import argparse
import glob
import json
import os
import time

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

import lightning_bagua  # noqa: F401  (registers strategy="bagua")
from lightning_bagua import BaguaStrategy


class Net(L.LightningModule):
    def __init__(self, widths, lr):
        super().__init__()
        torch.manual_seed(1234)
        layers = []
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        self.net = torch.nn.Sequential(*layers[:-1])
        self.lr = lr
        self.t0 = None
        self.steps = 0

    def training_step(self, batch, batch_idx):
        if self.global_step == 10 and self.t0 is None:
            torch.cuda.synchronize()
            self.t0 = time.perf_counter()
            self.start = self.global_step
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def on_train_end(self):
        torch.cuda.synchronize()
        if self.t0 is not None:
            self.rate = (self.global_step - self.start) / (time.perf_counter() - self.t0)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32) / 16
    return x, torch.tensor(d.target)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--task", choices=["digits", "mlp"], default="digits")
    p.add_argument("--strategy", default="bagua")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--steps", type=int, default=110)
    args = p.parse_args()
    strategy = args.strategy
    if strategy.startswith("bagua:"):
        strategy = BaguaStrategy(algorithm=strategy.split(":", 1)[1])
    if args.task == "digits":
        x, y = digits()
        model = Net([64, 128, 10], lr=0.1)
        loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
        limits = dict(max_epochs=args.epochs)
    else:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(4096, 4096, generator=g)
        y = torch.randint(0, 4096, (4096,), generator=g)
        model = Net([4096] * 4, lr=0.01)
        loader = DataLoader(TensorDataset(x, y), batch_size=256)
        limits = dict(max_steps=args.steps)
    torch.manual_seed(0)
    trainer = L.Trainer(accelerator="gpu", devices=2, strategy=strategy, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, **limits)
    trainer.fit(model, loader)
    if trainer.global_rank != 0:
        return
    result = {"task": args.task, "strategy": args.strategy,
              "steps_per_s": getattr(model, "rate", None)}
    if args.task == "digits":
        model.eval().cuda()
        with torch.no_grad():
            result["accuracy"] = float((model.net(x.cuda()).argmax(1).cpu() == y).float().mean())
    nets = set()
    for path in glob.glob(os.environ.get("NCCL_DEBUG_FILE", "/nonexistent").replace("%p", "*")):
        for line in open(path, errors="replace"):
            if "Using network" in line:
                nets.add(line.split("Using network")[1].strip())
    result["network"] = sorted(nets)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
