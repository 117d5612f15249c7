"""Benchmark: the optimal analytic attack (paper 004, Cor. 1) on 1,000 digits targets, each one
DP-SGD step of batch size 1.

Three ways, all measured in this run:
  * baseline: a fresh Opacus GradSampleModule + DPOptimizer built for every target (naive);
  * opacus:   one module/optimizer reused across targets (rerokit.attacks.analytic.OpacusAnalyticAttack);
  * vmap:     per-sample gradients of all targets at once with torch.func (vectorized_analytic_attack).
The reused-Opacus and vmap paths give identical reconstructions (checked here and in tests).
Prints seconds per run and the speed-up over the baseline. Timings on a shared machine are noisy.

    python benchmarks/analytic_attack.py [--targets 1000] [--rows 1] [--repeats 3]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from _timing import best_time

from rerokit.attacks.analytic import OpacusAnalyticAttack, target_generator, vectorized_analytic_attack
from rerokit.data import load_dataset


def naive_fresh_optimizer(X: np.ndarray, rows: int, sigma: float, clip: float, seed: int) -> np.ndarray:
    """Baseline: build the Opacus objects anew for every target."""
    out = np.empty_like(X)
    for i in range(len(X)):
        att = OpacusAnalyticAttack(X.shape[1], rows, sigma, clip, seed=seed)
        out[i] = att.reconstruct(X[i], target_generator(seed, i))[0]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--sigma", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    X = load_dataset("digits").flat[: a.targets].astype(np.float64)
    seed = 0
    t_base, base = best_time(lambda: naive_fresh_optimizer(X, a.rows, a.sigma, a.clip, seed), a.repeats)
    t_opacus, op = best_time(lambda: OpacusAnalyticAttack(64, a.rows, a.sigma, a.clip, seed=seed).run(X), a.repeats)
    t_vmap, vm = best_time(lambda: vectorized_analytic_attack(X, a.rows, a.sigma, a.clip, seed=seed), a.repeats)
    assert np.allclose(op.reconstructions, vm.reconstructions, rtol=1e-12, atol=1e-12)
    assert np.allclose(base, vm.reconstructions, rtol=1e-12, atol=1e-12)
    print(f"digits, {len(X)} targets, M={a.rows}, sigma={a.sigma}, C={a.clip}, threads={a.threads}, best of {a.repeats}")
    print(f"baseline (fresh Opacus optimizer per target): {t_base:8.3f} s")
    print(f"opacus   (reused module/optimizer)           : {t_opacus:8.3f} s   speed-up x{t_base / t_opacus:6.1f}")
    print(f"vmap     (torch.func, vectorised)            : {t_vmap:8.3f} s   speed-up x{t_base / t_vmap:6.1f}")


if __name__ == "__main__":
    main()
