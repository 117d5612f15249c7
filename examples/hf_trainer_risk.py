"""Train a tiny classifier on the digits with DP-SGD (Opacus) inside a Hugging Face ``Trainer``, logging its risk.

    python examples/hf_trainer_risk.py --max-steps 200 --max-gamma 0.3

Opacus makes the model, optimizer and data loader private (per-example clipping, Gaussian noise,
Poisson sampling); the ``Trainer`` runs the loop; ``rerokit.integrations.transformers.RiskCallback``
reads the steps from the Opacus accountant, adds ``privacy/gamma`` (certified reconstruction bound
for a prior of ``--prior-size`` candidates), ``privacy/tpr_at_fpr_1pct`` and ``privacy/epsilon`` to
every log, and stops training before gamma would exceed ``--max-gamma``. The last line printed is
one JSON object: gamma, epsilon, steps, stopped_early, test accuracy and the settings.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import warnings

import numpy as np
import torch
from opacus import PrivacyEngine
from torch import nn
from torch.utils.data import DataLoader, Dataset
from transformers import Trainer, TrainingArguments

from rerokit.data import load_digits
from rerokit.integrations.transformers import RiskCallback


class Digits(Dataset):
    """The digits as the dicts a ``Trainer`` feeds to ``model(**batch)``."""

    def __init__(self, X: torch.Tensor, y: torch.Tensor):
        self.X, self.y = X.reshape(len(X), -1), y

    def __len__(self) -> int:
        return len(self.X)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"pixel_values": self.X[i], "labels": self.y[i]}


class TinyClassifier(nn.Module):
    """64 -> 32 (tanh) -> 10; returns the loss first, as Trainer expects."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor | None = None, **_: object):
        logits = self.net(pixel_values)
        if labels is None:
            return (logits,)
        return (nn.functional.cross_entropy(logits, labels), logits)


class DPTrainer(Trainer):
    """A Trainer that trains on Opacus' Poisson-sampled loader (the one the accountant assumes)."""

    def __init__(self, *a, dp_loader: DataLoader, **kw):
        super().__init__(*a, **kw)
        self.dp_loader = dp_loader

    def get_train_dataloader(self) -> DataLoader:
        return self.dp_loader

    def training_step(self, *a, **kw):
        # Opacus' optimizer keeps per-example gradients that only its own zero_grad clears (the
        # Trainer calls model.zero_grad()); one batch per optimizer step, so clear before each.
        self.optimizer.zero_grad()
        return super().training_step(*a, **kw)


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
    p.add_argument("--out-dir", default=None, help="the Trainer's output_dir (default: a temporary folder; nothing "
                   "is saved)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", module="opacus")
    warnings.filterwarnings("ignore", message=".*[Ff]ull backward hook.*")

    torch.manual_seed(args.seed)
    ds = load_digits()
    perm = np.random.default_rng(args.seed).permutation(ds.n)
    n_test = ds.n // 5
    X, y = torch.as_tensor(ds.X), torch.as_tensor(ds.y)
    train = Digits(X[perm[n_test:]], y[perm[n_test:]])
    test = Digits(X[perm[:n_test]], y[perm[:n_test]])

    model = TinyClassifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    engine = PrivacyEngine(accountant="rerokit")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=DataLoader(train, batch_size=args.batch_size),
        noise_multiplier=args.noise_multiplier, max_grad_norm=1.0, poisson_sampling=True)
    callback = RiskCallback(engine, prior=args.prior_size, delta=args.delta, max_gamma=args.max_gamma,
                            max_epsilon=args.max_epsilon, card=args.card)
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="hf_trainer_risk_")
    targs = TrainingArguments(
        output_dir=out_dir, max_steps=args.max_steps,
        logging_steps=max(args.max_steps // 5, 1), save_strategy="no", report_to="none", max_grad_norm=0.0,
        use_cpu=True, disable_tqdm=True, seed=args.seed, dataloader_num_workers=0)
    trainer = DPTrainer(model=model, args=targs, optimizers=(optimizer, None), dp_loader=loader)
    callback.attach(trainer)
    trainer.train()

    model.eval()
    with torch.no_grad():
        acc = float((model(test.X)[0].argmax(1) == test.y).float().mean())
    s = callback.summary
    out = {"gamma": s["gamma"], "epsilon": s["epsilon"], "tpr_at_fpr_1pct": s["tpr_at_fpr_1pct"], "steps": s["steps"],
           "stopped_early": s["stopped_early"], "stop_reason": s["stop_reason"], "trainer_steps": trainer.state.global_step,
           "test_accuracy": acc, "prior_size": args.prior_size, "delta": args.delta,
           "noise_multiplier": args.noise_multiplier, "sample_rate": engine.accountant.history[0][1], "seed": args.seed,
           "card": s["card"]}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
