"""Train a small CNN with Opacus to a target reconstruction risk, on the embedded digits.

    python examples/opacus_target_risk.py --target-gamma 0.2 --prior-size 10 --epochs 15

The noise multiplier is calibrated so that, after the planned epochs, no attacker who knows
every other training image and a prior of ``--prior-size`` candidates for the target can
reconstruct it with probability above ``--target-gamma`` (Hayes et al. 2023, certified by
rerokit). Every epoch the script logs the risk spent so far (gamma, epsilon) and the test
accuracy; at the end it prints the certified risks of the finished run (measured with the
defaults: noise multiplier 1.971, gamma <= 0.2, epsilon 1.81 at delta 1e-5, test accuracy about 0.9).
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
import torch
from opacus import PrivacyEngine
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from rerokit.data import load_digits
from rerokit.opacus import EpsilonTarget, make_private_with_reconstruction_risk


def small_cnn(num_classes: int = 10) -> nn.Module:
    """conv 1->16 (3x3) - tanh - max-pool - conv 16->32 (3x3) - tanh - max-pool - linear (no BatchNorm,
    which DP-SGD's per-sample gradients do not allow; tanh keeps activations bounded under noise)."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.Tanh(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.Tanh(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, num_classes),
    )


def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        acc = float((model(X).argmax(1) == y).float().mean())
    model.train()
    return acc


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target-gamma", type=float, default=0.2, help="reconstruction success not to exceed (default 0.2)")
    p.add_argument("--prior-size", type=int, default=10, help="candidates in the adversary's prior (default 10)")
    p.add_argument("--target-epsilon", type=float, default=None, help="also meet this epsilon (at --delta)")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps (smoke tests)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the final summary as one JSON object")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", module="opacus")  # secure-RNG and hook notices, not errors
    warnings.filterwarnings("ignore", message="Full backward hook")

    torch.manual_seed(args.seed)
    ds = load_digits()
    perm = np.random.default_rng(args.seed).permutation(ds.n)
    n_test = ds.n // 5
    X, y = torch.as_tensor(ds.X), torch.as_tensor(ds.y)
    X_test, y_test = X[perm[:n_test]], y[perm[:n_test]]
    train = TensorDataset(X[perm[n_test:]], y[perm[n_test:]])

    model = small_cnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loader = DataLoader(train, batch_size=args.batch_size)
    engine = PrivacyEngine()
    model, optimizer, loader = make_private_with_reconstruction_risk(
        engine, model, optimizer, loader, target_gamma=args.target_gamma, prior=args.prior_size,
        epochs=args.epochs, max_grad_norm=args.max_grad_norm,
        target_epsilon=None if args.target_epsilon is None else EpsilonTarget(args.target_epsilon, delta=args.delta),
    )
    acc_ = engine.accountant
    print(f"noise multiplier {optimizer.noise_multiplier:.4f} for gamma <= {args.target_gamma} "
          f"(prior of {args.prior_size}) after {args.epochs} epochs of {len(loader)} steps", flush=True)
    loss_fn = nn.CrossEntropyLoss()
    steps = 0
    for epoch in range(args.epochs):
        for xb, yb in loader:
            if args.max_steps is not None and steps >= args.max_steps:
                break
            optimizer.zero_grad()
            if len(xb):
                loss_fn(model(xb), yb).backward()
            optimizer.step()
            steps += 1
        if steps == 0:
            continue
        risk = acc_.get_risk(delta=args.delta)
        print(f"epoch {epoch + 1}: steps {len(acc_)}, gamma <= {risk.gamma:.4f}, epsilon = {risk.epsilon:.3f}, "
              f"test accuracy {accuracy(model, X_test, y_test):.3f}", flush=True)
        if args.max_steps is not None and steps >= args.max_steps:
            break
    risk = acc_.get_risk(delta=args.delta)
    summary = {"noise_multiplier": optimizer.noise_multiplier, "steps": len(acc_),
               "test_accuracy": accuracy(model, X_test, y_test), "risk": risk.to_dict(), "seed": args.seed}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"final: {risk}; test accuracy {summary['test_accuracy']:.3f}")
    return summary


if __name__ == "__main__":
    main()
