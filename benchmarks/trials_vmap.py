"""Benchmark: 1,000 informed-adversary DP-SGD trials of the digits MLP, vectorised vs per-trial loops.

Setting (Hayes et al. 2023 App. A, digits analogue of MNIST): make_mlp(64, [10], 10) (P = 760),
|D-| = 999 plus one target (n = 1000), full batch (q = 1), T = 100 steps, C = 0.1, sigma = 1,
recording what the prior-aware attack needs (theta_t and gbar_t: record="gbar_only").

Measured in the same run:
  * vectorised: train_dpsgd_many over all trials (method "linear": exact per-sample clipping by
    ghost norms for MLPs; optionally also "vmap": vmap over trials of vmap(grad) over samples);
  * loop baselines, measured on a few trials and EXTRAPOLATED linearly to all trials (said in the
    output): a Python loop of train_dpsgd(method="vmap") (per-sample grads by vmap(grad), one
    trial at a time) and a loop of Opacus training (record_opacus_transcript).
It also checks that trial 0 of the vectorised run equals the sequential run with the same seed.
Timings on the shared 2-core machine are noisy (other jobs run); the load average is printed.
Measured 06:15-06:20 UTC (load average 5-8 on 2 cores): vectorised 47 s with --threads 1 and 186 s
with torch's default 2 threads (oversubscription); loops 2,200 s (train_dpsgd vmap) and 1,500 s
(Opacus) extrapolated from 2 trials at 1 thread -> 47x and 33x speed-ups.

    python benchmarks/trials_vmap.py [--trials 1000] [--steps 100] [--loop-trials 3] [--threads 1]
                                     [--shadow-models 1000] [--also-vmap]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from rerokit.data import load_dataset
from rerokit.training import FunctionalModel, make_mlp, train_dpsgd, train_dpsgd_many
from rerokit.training.opacus_adapter import record_opacus_transcript
from rerokit.training.settings import DPSGDSettings, EngineOptions


def make_trials(K: int, n: int, seed: int):
    """Per trial: n distinct digits (the first one is the target z*, the rest D-)."""
    ds = load_dataset("digits")
    rng = np.random.default_rng(seed)
    idx = np.stack([rng.choice(ds.n, size=n, replace=False) for _ in range(K)])
    X = torch.from_numpy(ds.X[idx])  # (K, n, 1, 8, 8)
    y = torch.from_numpy(ds.y[idx])
    return X, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--clip", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=10.0)
    ap.add_argument("--loop-trials", type=int, default=3, help="trials timed in the per-trial loop baselines")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave torch's default)")
    ap.add_argument("--chunk-size", type=int, default=None)
    ap.add_argument("--also-vmap", action="store_true", help="also time train_dpsgd_many(options=EngineOptions(method='vmap')) on --loop-trials*4 trials")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shadow-models", type=int, default=0,
                    help="also time N RecoNN-style shadow models: fixed D- shared (shared=), one varying point, record=False")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, load average {os.getloadavg()}")
    print(f"setting: digits MLP 64-10-10, K={a.trials} trials, n={a.n} (|D-|={a.n - 1} + target), T={a.steps}, "
          f"q=1, C={a.clip}, sigma={a.sigma}, lr={a.lr}, record='gbar_only'")
    fm = FunctionalModel(make_mlp(64, [10], 10))
    theta0 = fm.init_flat(a.seed)
    X, y = make_trials(a.trials, a.n, a.seed)
    st = DPSGDSettings(noise_multiplier=a.sigma, clip=a.clip, steps=a.steps, lr=a.lr, sample_rate=1.0)

    t = time.perf_counter()
    R = train_dpsgd_many(fm, theta0, X, y, st, seed=a.seed, target_index=0, record="gbar_only", options=EngineOptions(method="linear", chunk_size=a.chunk_size, progress=True))
    t_vec = time.perf_counter() - t
    mb = (R.transcript.thetas.numel() + R.transcript.gbar.numel()) * 4 / 2**20
    print(f"vectorised (linear)  : {t_vec:8.1f} s for {a.trials} trials ({1e3 * t_vec / a.trials:.1f} ms/trial); "
          f"transcript {mb:.0f} MiB")

    if a.also_vmap:
        kv = min(a.trials, 4 * a.loop_trials)
        t = time.perf_counter()
        train_dpsgd_many(fm, theta0, X[:kv], y[:kv], st, seed=R.seed[:kv], target_index=0, record="gbar_only", options=EngineOptions(method="vmap"))
        t_vm = (time.perf_counter() - t) / kv * a.trials
        print(f"vectorised (vmap)    : {t_vm:8.1f} s for {a.trials} trials (EXTRAPOLATED from {kv} trials)")

    L = min(a.loop_trials, a.trials)
    t = time.perf_counter()
    seq = [train_dpsgd(fm, theta0, X[k], y[k], st, seed=R.seed[k], target_index=0, record="gbar_only", options=EngineOptions(method="vmap"))
           for k in range(L)]
    t_loop = (time.perf_counter() - t) / L * a.trials
    err = max(float((seq[k].transcript.gbar - R.transcript.gbar[k]).abs().max()) for k in range(L))
    print(f"loop train_dpsgd vmap: {t_loop:8.1f} s for {a.trials} trials (EXTRAPOLATED from {L} trials); "
          f"max |gbar diff| vs vectorised on those trials {err:.1e}")

    t = time.perf_counter()
    for k in range(L):
        record_opacus_transcript(fm.module, X[k], y[k], 0, st, seed=k, theta0=theta0)
    t_op = (time.perf_counter() - t) / L * a.trials
    print(f"loop Opacus          : {t_op:8.1f} s for {a.trials} trials (EXTRAPOLATED from {L} trials)")
    print(f"speed-up of vectorised (linear): {t_loop / t_vec:.1f}x vs loop of train_dpsgd(vmap), "
          f"{t_op / t_vec:.1f}x vs loop of Opacus")
    if a.shadow_models:
        ds = load_dataset("digits")
        rng = np.random.default_rng(a.seed + 1)
        perm = rng.permutation(ds.n)
        Xs, ys = torch.from_numpy(ds.X[perm[: a.n - 1]]), torch.from_numpy(ds.y[perm[: a.n - 1]])
        pick = rng.choice(perm[a.n - 1 :], size=a.shadow_models, replace=True)
        Xz, yz = torch.from_numpy(ds.X[pick])[:, None], torch.from_numpy(ds.y[pick])[:, None]
        t = time.perf_counter()
        S = train_dpsgd_many(fm, theta0, Xz, yz, st, shared=(Xs, ys), seed=a.seed, record=False, options=EngineOptions(progress=True))
        t_sh = time.perf_counter() - t
        print(f"shadow models        : {t_sh:8.1f} s for {a.shadow_models} models (shared D- of {a.n - 1}, "
              f"record=False, {S.settings['method']}); {1e3 * t_sh / a.shadow_models:.1f} ms/model")
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
