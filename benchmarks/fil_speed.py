"""Benchmark: per-sample FIL accounting (Guo et al. 2022, Alg. 1) for the digits MLP 64-10-10
(tanh) over 100 DP-SGD steps, n = 1797, Poisson sample rate q = 0.05 (about 90 samples per
step) - the issue's target is under a minute.

Measured in this run:
  * vmap-jvp (exact): ``rerokit.training.fil.dpsgd_fil`` with all d = 64 coordinates (Eq. 5
    by JVPs vmapped over samples and coordinates), 100 steps;
  * vmap-jvp (sampled): the same with ``--coords`` coordinates per sample and step (unbiased);
  * baseline: a per-sample Python loop computing the full Jacobian d g~ / dx with
    ``torch.func.jacrev`` for each sample in the batch, on ``--baseline-steps`` steps and
    EXTRAPOLATED linearly to 100 steps. Its per-step traces are checked to equal the JVP ones.
Prints seconds and ratios. Timings on a shared machine are noisy: run it when ``uptime`` shows
an idle machine.

    python benchmarks/fil_speed.py [--steps 100] [--coords 16] [--baseline-steps 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch.func import jacrev

from rerokit.data import load_dataset
from rerokit.training.fil import clipped_grad_fn, clipped_grad_jacobian_trace, dpsgd_fil
from rerokit.training.models import make_mlp
from rerokit.training.settings import DPSGDSettings
from rerokit.training.fil import FILOptions


def baseline_traces(module, params, X, Y, clip):
    """Full Jacobian per sample, one sample at a time (no vmap)."""
    fn = clipped_grad_fn(module, clip)
    out = torch.empty(X.shape[0], dtype=X.dtype)
    for i in range(X.shape[0]):
        J = jacrev(lambda x: fn(params, x, Y[i]))(X[i])
        out[i] = (J**2).sum()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--coords", type=int, default=16)
    ap.add_argument("--baseline-steps", type=int, default=3)
    ap.add_argument("--sample-rate", type=float, default=0.05)
    a = ap.parse_args()
    ds = load_dataset("digits")
    X = torch.as_tensor(np.asarray(ds.flat), dtype=torch.float32)
    Y = torch.as_tensor(np.asarray(ds.y))
    torch.manual_seed(0)
    module = make_mlp(64, [10], 10, activation="tanh")
    st = DPSGDSettings(noise_multiplier=1.0, clip=1.0, steps=a.steps, lr=0.5, sample_rate=a.sample_rate)

    # Warm-up (first functorch call pays one-off setup).
    dpsgd_fil(module, X, Y, st.replace(steps=1), seed=0)
    t = time.perf_counter()
    exact = dpsgd_fil(module, X, Y, st, seed=0)
    t_exact = time.perf_counter() - t
    t = time.perf_counter()
    sampled = dpsgd_fil(module, X, Y, st, seed=0, fil=FILOptions(coords=a.coords))
    t_sampled = time.perf_counter() - t

    # Baseline on a few steps' batches (same batch sizes), checked against the JVP traces.
    gen = torch.Generator().manual_seed(0)
    params = {k: v.detach().clone() for k, v in module.named_parameters()}
    fn = clipped_grad_fn(module, 1.0)
    t_base = 0.0
    for _ in range(a.baseline_steps):
        idx = torch.nonzero(torch.rand(X.shape[0], generator=gen) < a.sample_rate).reshape(-1)
        t = time.perf_counter()
        b = baseline_traces(module, params, X[idx], Y[idx], 1.0)
        t_base += time.perf_counter() - t
        j = clipped_grad_jacobian_trace(fn, params, X[idx], Y[idx])
        torch.testing.assert_close(b, j, rtol=1e-4, atol=1e-6)
    t_base_total = t_base / a.baseline_steps * a.steps

    rel = np.abs(sampled.dfil - exact.dfil).sum() / exact.dfil.sum()
    print(f"digits MLP 64-10-10 tanh, n={X.shape[0]}, q={a.sample_rate}, T={a.steps}, threads={torch.get_num_threads()}")
    print(f"vmap-jvp exact (64 coords):        {t_exact:8.2f} s   max dFIL {exact.dfil.max():.4g}, median MSE bound {np.median(exact.mse_lower_bound):.4g}")
    print(f"vmap-jvp sampled ({a.coords} coords):     {t_sampled:8.2f} s   relative L1 difference of dFIL vs exact {rel:.3f}")
    print(f"baseline per-sample jacrev loop:   {t_base_total:8.2f} s   (extrapolated from {a.baseline_steps} steps; traces match)")
    print(f"speed-up exact vs baseline: {t_base_total / t_exact:.1f}x; sampled vs baseline: {t_base_total / t_sampled:.1f}x")
    print(f"target (< 60 s for {a.steps} steps): exact {'met' if t_exact < 60 else 'NOT met'}, sampled {'met' if t_sampled < 60 else 'NOT met'}")


if __name__ == "__main__":
    main()
