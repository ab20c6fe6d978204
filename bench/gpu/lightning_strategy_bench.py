"""Lightning on --devices GPUs (default 2) with strategy="bagua" against
Lightning's DDPStrategy (issue "Python and Lightning", GPU part; issue 26 on
2 and 4 GPUs). Two tasks:
  --task digits: an MLP on scikit-learn's digits (accuracy: bytegrad must be
                 within 0.5 percentage points of gradient allreduce);
  --task mlp:    a 50M-parameter MLP of 4096-wide layers on fixed synthetic
                 data (steps per second);
  --task both:   digits, then mlp, in the same processes (one launch).
Prints one JSON line {"task", "strategy", "devices", "accuracy", "steps_per_s",
"network"} per task from rank 0. Lightning starts the other processes itself.
QAdam (bagua:qadam) steps with its QAdamOptimizer (lr 0.01 on digits), every
other strategy with SGD momentum, or with torch's Adam at QAdam's learning rate
under --optimizer adam (QAdam's like-for-like baseline). Rates are timed from
step 10; QAdam's from 10 steps past its warm-up (its steady, compressed state),
with "switch_window_s": the 4 steps around the switch (2 warm-up Adam steps,
the switch to compressed momentum, the first compressed step), timed apart.

    python lightning_strategy_bench.py --task digits --strategy bagua:bytegrad
    python lightning_strategy_bench.py --task both --devices 4 --strategy ddp
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
from bagua.torch_api.algorithms.q_adam import QAdamOptimizer
from lightning_bagua import BaguaStrategy


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class Net(L.LightningModule):
    def __init__(self, widths, lr, optimizer="sgd"):
        super().__init__()
        self.optimizer = optimizer
        torch.manual_seed(1234)
        layers = []
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        self.net = torch.nn.Sequential(*layers[:-1])
        self.lr = lr
        self.t0 = None
        self.marks = {}

    def timed_from(self):
        """The first timed step: 10, or for QAdam 10 past its warm-up, so the
        rate is the compressed steady state (the warm-up's Adam steps and the
        one-time switch are timed apart, as switch_window_s)."""
        warmup = getattr(self.trainer.optimizers[0], "warmup_steps", None)
        return 10 if warmup is None else warmup + 10

    def training_step(self, batch, batch_idx):
        step = self.global_step
        warmup = getattr(self.trainer.optimizers[0], "warmup_steps", None)
        if warmup is not None and step in (warmup - 2, warmup + 2) and step not in self.marks:
            sync()
            self.marks[step] = time.perf_counter()
        if step == self.timed_from() and self.t0 is None:
            sync()
            self.t0 = time.perf_counter()
            self.start = step
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def on_train_end(self):
        sync()
        if self.t0 is not None:
            self.rate = (self.global_step - self.start) / (time.perf_counter() - self.t0)
        if len(self.marks) == 2:
            # 4 steps: the last 2 of the warm-up, the switch, the first compressed one
            first, last = sorted(self.marks)
            self.switch_window_s = self.marks[last] - self.marks[first]

    def configure_optimizers(self):
        strategy = self.trainer.strategy
        if isinstance(strategy, BaguaStrategy) and strategy.algorithm == "qadam":
            return QAdamOptimizer(self.parameters(), lr=self.lr / 10, warmup_steps=20)
        if self.optimizer == "adam":
            return torch.optim.Adam(self.parameters(), lr=self.lr / 10)
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32) / 16
    return x, torch.tensor(d.target)


def make_strategy(name, flat=False):
    """A strategy object for one Trainer: "ddp" or "bagua[:ALGORITHM]"; FLAT:
    hierarchical=False (the algorithms that take it default to True, as the
    original's: on one machine the intra-node step then moves full precision)."""
    if name.startswith("bagua:"):
        return BaguaStrategy(algorithm=name.split(":", 1)[1],
                             **({"hierarchical": False} if flat else {}))
    return name


def fit(task, args):
    """Trains one task; rank 0 returns its result (others None)."""
    if task == "digits":
        x, y = digits()
        model = Net([64, 128, 10], lr=0.1, optimizer=args.optimizer)
        loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
        limits = dict(max_epochs=args.epochs)
    else:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(4096, 4096, generator=g)
        y = torch.randint(0, 4096, (4096,), generator=g)
        model = Net([4096] * 4, lr=0.01, optimizer=args.optimizer)
        loader = DataLoader(TensorDataset(x, y), batch_size=256)
        limits = dict(max_steps=args.steps)
    torch.manual_seed(0)
    gpu = args.accelerator == "gpu"
    trainer = L.Trainer(accelerator=args.accelerator, devices=args.devices,
                        strategy=make_strategy(args.strategy, args.flat), logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, **limits)
    trainer.fit(model, loader)
    if trainer.global_rank != 0:
        return None
    qadam = args.strategy == "bagua:qadam"
    result = {"task": task, "strategy": args.strategy, "devices": args.devices,
              "optimizer": "qadam" if qadam else args.optimizer, "flat": args.flat,
              "steps_per_s": getattr(model, "rate", None)}
    if qadam:
        result["timed_from_step"] = model.timed_from()
        result["switch_window_s"] = getattr(model, "switch_window_s", None)
    if task == "digits":
        device = "cuda" if gpu else "cpu"
        model.eval().to(device)
        with torch.no_grad():
            result["accuracy"] = float((model.net(x.to(device)).argmax(1).cpu() == y)
                                       .float().mean())
    return result


def networks():
    """The networks NCCL's INFO logs (NCCL_DEBUG_FILE) say it used."""
    nets = set()
    for path in glob.glob(os.environ.get("NCCL_DEBUG_FILE", "/nonexistent").replace("%p", "*")):
        for line in open(path, errors="replace"):
            if "Using network" in line:
                nets.add(line.split("Using network")[1].strip())
    return sorted(nets)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--task", choices=["digits", "mlp", "both"], default="digits")
    p.add_argument("--strategy", default="bagua")
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--accelerator", default="gpu", help="cpu: a dry run (Gloo)")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--steps", type=int, default=110)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd",
                   help="every strategy but bagua:qadam (always its QAdamOptimizer)")
    p.add_argument("--flat", action="store_true", help="bagua algorithms: hierarchical=False")
    args = p.parse_args()
    tasks = ["digits", "mlp"] if args.task == "both" else [args.task]
    for task in tasks:
        result = fit(task, args)
        if result is not None:
            result["network"] = networks()
            print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
