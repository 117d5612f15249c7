"""Train a tiny classifier on the digits with DP-SGD (Opacus) in PyTorch Lightning, logging its risk.

    python examples/lightning_risk.py --max-steps 200 --max-gamma 0.3

The LightningModule makes its model, optimizer and data loader private with an Opacus
``PrivacyEngine`` (per-example clipping, Gaussian noise, Poisson sampling) and keeps the engine as
``self.privacy_engine``, where ``rerokit.integrations.lightning.RiskCallback`` finds the accountant.
The callback logs ``privacy/gamma`` (certified reconstruction bound for a prior of
``--prior-size`` candidates), ``privacy/tpr_at_fpr_1pct`` and ``privacy/epsilon`` through
``self.log`` and sets ``trainer.should_stop`` before gamma would exceed ``--max-gamma``. The last
line printed is one JSON object: gamma, epsilon, steps, stopped_early, test accuracy and the settings.
"""

from __future__ import annotations

import argparse
import json
import logging
import warnings

import numpy as np
import torch
from opacus import PrivacyEngine
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning.pytorch as pl
except ImportError:  # the standalone package
    import pytorch_lightning as pl

from rerokit.data import load_digits
from rerokit.integrations.lightning import RiskCallback


class DPDigits(pl.LightningModule):
    """64 -> 32 (tanh) -> 10, trained with Opacus' DP-SGD on Poisson-sampled batches."""

    def __init__(self, train: TensorDataset, *, noise_multiplier: float, batch_size: int, lr: float):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))
        self.train_set, self.noise_multiplier, self.batch_size, self.lr = train, noise_multiplier, batch_size, lr
        self.privacy_engine = PrivacyEngine(accountant="rerokit")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def setup(self, stage: str) -> None:
        # before Lightning asks for the optimizer or the data: both come from Opacus
        optimizer = torch.optim.SGD(self.net.parameters(), lr=self.lr)
        self.net, self._optimizer, self._loader = self.privacy_engine.make_private(
            module=self.net, optimizer=optimizer, data_loader=DataLoader(self.train_set, batch_size=self.batch_size),
            noise_multiplier=self.noise_multiplier, max_grad_norm=1.0, poisson_sampling=True)

    def configure_optimizers(self):
        return self._optimizer

    def train_dataloader(self) -> DataLoader:
        return self._loader

    def training_step(self, batch, batch_idx):
        x, y = batch
        if len(x) == 0:  # Poisson sampling can draw an empty batch: a zero loss keeps the step (noise only)
            return sum(p.sum() * 0.0 for p in self.net.parameters())
        return nn.functional.cross_entropy(self.net(x), y)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-steps", type=int, default=200, help="optimizer steps to train at most (default 200)")
    p.add_argument("--noise-multiplier", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=64, help="expected (Poisson) batch size")
    p.add_argument("--prior-size", type=int, default=10, help="candidates in the adversary's prior (default 10)")
    p.add_argument("--max-gamma", type=float, default=None, help="stop before gamma would exceed this")
    p.add_argument("--max-epsilon", type=float, default=None, help="stop before epsilon would exceed this")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--card", default=None, help="write the HTML risk card of the finished run here")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", module="opacus")
    warnings.filterwarnings("ignore", message=".*(does not have many workers|[Ff]ull backward hook).*")
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)

    pl.seed_everything(args.seed, verbose=False)
    ds = load_digits()
    perm = np.random.default_rng(args.seed).permutation(ds.n)
    n_test = ds.n // 5
    X, y = torch.as_tensor(ds.X).reshape(ds.n, -1), torch.as_tensor(ds.y)
    train = TensorDataset(X[perm[n_test:]], y[perm[n_test:]])
    X_test, y_test = X[perm[:n_test]], y[perm[:n_test]]

    module = DPDigits(train, noise_multiplier=args.noise_multiplier, batch_size=args.batch_size, lr=args.lr)
    callback = RiskCallback(prior=args.prior_size, delta=args.delta, max_gamma=args.max_gamma,
                            max_epsilon=args.max_epsilon, card=args.card)
    trainer = pl.Trainer(max_steps=args.max_steps, accelerator="cpu", devices=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         log_every_n_steps=max(args.max_steps // 5, 1), callbacks=[callback],
                         use_distributed_sampler=False)
    trainer.fit(module)

    module.eval()
    with torch.no_grad():
        acc = float((module(X_test).argmax(1) == y_test).float().mean())
    s = callback.summary
    out = {"gamma": s["gamma"], "epsilon": s["epsilon"], "tpr_at_fpr_1pct": s["tpr_at_fpr_1pct"], "steps": s["steps"],
           "stopped_early": s["stopped_early"], "stop_reason": s["stop_reason"], "trainer_steps": trainer.global_step,
           "test_accuracy": acc, "prior_size": args.prior_size, "delta": args.delta,
           "noise_multiplier": args.noise_multiplier, "sample_rate": module.privacy_engine.accountant.history[0][1], "seed": args.seed,
           "card": s["card"]}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
