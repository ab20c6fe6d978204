"""Lightning job for the tests: the digits MLP as a LightningModule trained
on 2 CPU processes by Trainer(strategy=...) (Lightning starts the second
process itself by re-running this script). Saves a checkpoint, writes each
rank's weights to OUT.rank<r>.json, then (with --resume) loads the
checkpoint and trains further. --fused: BaguaStrategy(fused_optimizer=True).
Several --strategy values train one after the other in the same two
processes (one Trainer each, as a user's script may; the launch and imports
are paid once), each writing OUT_<strategy>.rank<r>.json."""
import argparse
import json

import lightning as L
import torch
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

import lightning_bagua  # noqa: F401  (registers strategy="bagua")
from bagua.torch_api.algorithms.q_adam import QAdamOptimizer
from bagua.torch_api.data_parallel.autotune import Autotune
from lightning_bagua import BaguaStrategy


class ManualDigits(L.LightningModule):
    """Manual optimization: gradients of two micro-batches accumulated
    (the first under the strategy's no-sync block), one step."""

    def __init__(self, lr=0.5):
        super().__init__()
        self.automatic_optimization = False
        torch.manual_seed(1234)
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 48), torch.nn.ReLU(),
                                       torch.nn.Linear(48, 10))
        self.lr = lr

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        half = len(x) // 2
        with self.trainer.strategy.block_backward_sync():
            self.manual_backward(torch.nn.functional.cross_entropy(self.net(x[:half]), y[:half]))
        self.manual_backward(torch.nn.functional.cross_entropy(self.net(x[half:]), y[half:]))
        opt.step()
        opt.zero_grad()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


class Digits(L.LightningModule):
    def __init__(self, lr=0.5):
        super().__init__()
        self.save_hyperparameters()
        torch.manual_seed(1234)
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 48), torch.nn.BatchNorm1d(48),
                                       torch.nn.ReLU(), torch.nn.Linear(48, 10))

    def training_step(self, batch, batch_idx):
        if batch_idx == 0:  # what bagua.torch_api says during fit (Lightning's teardown
            import bagua.torch_api as bagua_api  # deletes WORLD_SIZE after it)

            self.bagua_env = [bagua_api.is_initialized(), bagua_api.get_rank(),
                              bagua_api.get_world_size(), bagua_api.get_local_rank(),
                              bagua_api.get_local_size()]
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss, sync_dist=True)
        return loss

    def on_train_end(self):
        # Still wrapped here (the strategy unwraps the model after fit): the
        # checkpoint holds local SGD's / DiLoCo's state (_bagua_<name>.*).
        algorithm = getattr(self.trainer.strategy.model, "bagua_algorithm", None)
        self.local_steps = getattr(algorithm, "local_steps", None)
        if getattr(self, "checkpoint_path", None):
            self.trainer.save_checkpoint(self.checkpoint_path)

    def configure_optimizers(self):
        if isinstance(self.trainer.strategy, BaguaStrategy) and \
                self.trainer.strategy.algorithm == "qadam":
            return QAdamOptimizer(self.parameters(), lr=0.01, warmup_steps=10)
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def loader():
    d = load_digits()
    ds = TensorDataset(torch.tensor(d.data, dtype=torch.float32) / 16.0,
                       torch.tensor(d.target, dtype=torch.long))
    return DataLoader(ds, batch_size=64, shuffle=False)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--strategy", nargs="+", default=["bagua"])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--out", required=True)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--manual", action="store_true")
    p.add_argument("--fused", action="store_true", help="BaguaStrategy(fused_optimizer=True)")
    p.add_argument("--options", default="{}", help="the algorithm's options, as JSON")
    args = p.parse_args()
    for strategy in args.strategy:
        out = args.out if len(args.strategy) == 1 else f"{args.out}_{label(strategy)}"
        train(args, strategy, out)


def label(strategy):
    """A file-name form of a strategy name: "bagua:qadam" -> "bagua_qadam"."""
    return strategy.replace(":", "_").replace("+", "_")


def train(args, strategy, out):
    """One strategy: fit, checkpoint, results to OUT.rank<r>.json (and with
    --resume a second Trainer continues from the checkpoint)."""
    def make_strategy():  # a strategy object serves one Trainer
        name = strategy
        options = json.loads(args.options)
        if args.fused:
            options["fused_optimizer"] = True
            if not name.startswith("bagua:"):
                name = "bagua:gradient_allreduce"
        if name == "bagua:local_sgd+autotune":  # sync_every from 4, trials of 4 periods
            name = name[:-len("+autotune")]
            options.update(sync_every=4, autotune=Autotune(budget_steps=36, max_sync_every=16))
        elif name.endswith("+autotune"):
            # Buckets of 1 KiB to start with (this model has 14 KB of gradients),
            # so that bucket sizes give different plans to choose from.
            name = name[:-len("+autotune")]
            options.update(bucket_mb=0.001,
                           autotune=Autotune(budget_steps=36, min_bucket_mb=0.001))
        if name.startswith("bagua:"):
            return BaguaStrategy(algorithm=name.split(":", 1)[1], **options)
        return name

    trainer = L.Trainer(accelerator="cpu", devices=2, strategy=make_strategy(),
                        max_steps=args.steps,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, default_root_dir=out + ".root")
    model = ManualDigits() if args.manual else Digits()
    model.checkpoint_path = out + ".ckpt"
    trainer.fit(model, loader())
    if args.manual:
        trainer.save_checkpoint(out + ".ckpt")
    with torch.no_grad():
        d = load_digits()
        x = torch.tensor(d.data, dtype=torch.float32) / 16.0
        model.eval()
        accuracy = float((model.net(x).argmax(1) == torch.tensor(d.target)).float().mean())
    # Parameters only: buffers are synced from rank 0 before each forward (as
    # DDP does), so after the last forward they hold each rank's last update.
    weights = torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()
    result = {"weights": weights, "accuracy": accuracy,
              "strategy": type(trainer.strategy).__name__, "rank": trainer.global_rank,
              "fused": [getattr(o, "_bagua_fused", None) is not None
                        for o in trainer.optimizers]}
    if isinstance(trainer.strategy, BaguaStrategy):
        result["autotune"] = trainer.strategy.autotune_state()
        result["bagua_env"] = getattr(model, "bagua_env", None)
    if args.resume:
        trainer2 = L.Trainer(accelerator="cpu", devices=2, strategy=make_strategy(),
                             max_steps=args.steps + 10, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             default_root_dir=out + ".root")
        resumed = Digits()
        trainer2.fit(resumed, loader(), ckpt_path=out + ".ckpt")
        result["resumed_step"] = trainer2.global_step
        result["resumed_weights"] = torch.cat([p.detach().flatten()
                                               for p in resumed.parameters()]).tolist()
        result["resumed_local_steps"] = resumed.local_steps
    with open(f"{out}.rank{trainer.global_rank}.json", "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
