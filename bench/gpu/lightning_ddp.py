"""Lightning job with the stock DDPStrategy on 2 GPUs, for the GPU proof of
issue 4: the plugin must be a drop-in for any NCCL job, so nothing here
knows about Bagua except the final check of NCCL's own log.

Trains a small MLP on fixed synthetic regression data for --steps steps,
prints the first and final loss and the steps per second, and with
--expect-net NAME checks that NCCL's debug files (NCCL_DEBUG_FILE, with %h
and %p read as wildcards) say "Using network NAME"; exits 3 if not.

Run: python3 lightning_ddp.py --steps 300 --expect-net Bagua
(Lightning starts the second process itself, re-running this script.)
"""

import argparse
import glob
import os
import re
import sys
import time

import torch

try:
    import lightning as L
    from lightning.pytorch.strategies import DDPStrategy
except ImportError:  # only the older package name is installed
    import pytorch_lightning as L
    from pytorch_lightning.strategies import DDPStrategy


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=20, help="steps before timing starts")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--samples", type=int, default=8192)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--accelerator", default="gpu", help="gpu, or cpu to try it without GPUs")
    p.add_argument("--expect-net", default="", help="NCCL network name that must be in use")
    p.add_argument("--root-dir", default="", help="Lightning's default_root_dir")
    p.add_argument("--label", default="lightning")
    return p.parse_args()


class Mlp(L.LightningModule):
    def __init__(self, width, layers, lr, warmup):
        super().__init__()
        mods = []
        for i in range(layers):
            mods.append(torch.nn.Linear(width, width))
            if i + 1 < layers:
                mods.append(torch.nn.ReLU())
        self.net = torch.nn.Sequential(*mods)
        self.lr = lr
        self.warmup = warmup
        self.losses = []
        self.t0 = None
        self.t1 = None
        self.timed_steps = 0

    def _sync(self):
        if torch.cuda.is_available() and self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.losses.append(loss.detach())
        return loss

    def on_train_batch_start(self, batch, batch_idx):
        if self.global_step == self.warmup and self.t0 is None:
            self._sync()
            self.t0 = time.perf_counter()
            self.step0 = self.global_step

    def on_train_end(self):
        self._sync()
        self.t1 = time.perf_counter()
        if self.t0 is not None:
            self.timed_steps = self.global_step - self.step0

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def register_pid():
    """Lets run_all.sh reap this process if its launcher is killed."""
    piddir = os.environ.get("BENCH_PID_DIR")
    if piddir and os.path.isdir(piddir):
        open(os.path.join(piddir, str(os.getpid())), "w").close()


def check_nccl_log(expect):
    """Returns (found, files, lines) for "Using network <expect>" in NCCL's logs."""
    pattern = os.environ.get("NCCL_DEBUG_FILE", "")
    if not pattern:
        return False, 0, ["NCCL_DEBUG_FILE is not set: cannot check"]
    files = glob.glob(re.sub(r"%[hp]", "*", pattern))
    wanted = re.compile(r"Using network " + re.escape(expect) + r"\b")
    seen = []
    for path in files:
        with open(path, errors="replace") as f:
            for line in f:
                if "Using network" in line:
                    seen.append(line.strip())
    return any(wanted.search(s) for s in seen), len(files), seen[:4]


def main():
    args = parse_args()
    register_pid()
    L.seed_everything(args.seed, workers=True)
    g = torch.Generator().manual_seed(args.seed)
    x = torch.randn(args.samples, args.width, generator=g)
    teacher = torch.randn(args.width, args.width, generator=g)
    y = (x @ teacher) / args.width ** 0.5  # a learnable target: the loss falls
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y), batch_size=args.batch, shuffle=False,
        drop_last=True)
    model = Mlp(args.width, args.layers, args.lr, args.warmup)
    trainer = L.Trainer(
        accelerator=args.accelerator, devices=args.devices, strategy=DDPStrategy(),
        max_steps=args.steps, max_epochs=-1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        log_every_n_steps=50, default_root_dir=args.root_dir or None)
    t_fit = time.perf_counter()
    trainer.fit(model, loader)
    fit_s = time.perf_counter() - t_fit

    rank = trainer.global_rank
    first = model.losses[0].item() if model.losses else float("nan")
    final = model.losses[-1].item() if model.losses else float("nan")
    timed = model.timed_steps
    span = (model.t1 - model.t0) if model.t0 is not None and model.t1 is not None else 0.0
    sps = timed / span if timed > 0 and span > 0 else float("nan")
    line = (f"LIGHTNING {args.label} rank {rank} world {trainer.world_size} "
            f"steps {trainer.global_step} first_loss {first!r} final_loss {final!r} "
            f"steps_per_s {sps:.3f} fit_s {fit_s:.2f} strategy {type(trainer.strategy).__name__} "
            f"backend {getattr(trainer.strategy, 'process_group_backend', '?')}")
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

    if args.expect_net and rank == 0:
        found, nfiles, seen = check_nccl_log(args.expect_net)
        sys.stdout.write(
            f"LIGHTNING {args.label} net_check expect={args.expect_net} "
            f"{'OK' if found else 'FAIL'} files={nfiles} seen={seen}\n")
        sys.stdout.flush()
        if not found:
            sys.exit(3)


if __name__ == "__main__":
    main()
