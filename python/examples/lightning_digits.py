"""The README's Lightning example: an MLP on scikit-learn's digits, trained on
2 CPU processes with Bagua's ByteGrad (use accelerator="gpu" on GPUs).

    python python/examples/lightning_digits.py [--algorithm gradient_allreduce]
"""
import argparse

import lightning as L
import torch
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

from lightning_bagua import BaguaStrategy


class Digits(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                       torch.nn.Linear(64, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--algorithm", default="bytegrad")
    parser.add_argument("--accelerator", default="cpu")
    args = parser.parse_args()
    digits = load_digits()
    data = TensorDataset(torch.tensor(digits.data, dtype=torch.float32) / 16,
                         torch.tensor(digits.target))
    trainer = L.Trainer(accelerator=args.accelerator, devices=2, max_epochs=5, logger=False,
                        enable_checkpointing=False,
                        strategy=BaguaStrategy(algorithm=args.algorithm))
    trainer.fit(Digits(), DataLoader(data, batch_size=64, shuffle=True))
    if trainer.global_rank == 0:
        print(f"done: {trainer.global_step} steps with {args.algorithm}, "
              f"final loss {float(trainer.callback_metrics['train_loss']):.3f}")
