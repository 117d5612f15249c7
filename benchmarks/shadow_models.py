"""Benchmark: shadow models of the RecoNN attack (Balle et al. 2022, Sec. IV-B), vectorised vs a
per-model Python loop.

Setting (Table V scaled to digits): make_mlp(64, [10], 10) with ELU (P = 760), |D-| = 500 shared
by every model plus one shadow target each, 10,000 shadow models, 100 full-batch epochs of GD
with momentum (lr 0.2, momentum 0.9), known initialisation (one theta_0 for all).

Measured in the same run:
  * vectorised: :func:`rerokit.attacks.reconn.gd_many` over all K models, i.e. the non-private
    case of ``rerokit.training.train_dpsgd_many`` on the MLP engine (D- one shared block, first
    layer of all models as one matrix product, backward written out; optionally ``--compile``);
  * baseline, a per-model Python loop: ``torch.func.grad`` of the model's mean cross-entropy on
    D- u {z} (functional_call), 100 momentum steps, one model at a time; timed on
    ``--loop-models`` models and EXTRAPOLATED linearly to K (said in the output);
  * optionally (``--engine-models M``) ``rerokit.training.train_dpsgd_many`` called directly
    (non-private, ``shared=`` D-) on M models, extrapolated to K.
It checks that the loop's models equal the vectorised ones (max abs difference printed).
The machine is shared (2 cores, other jobs): the load average before and after is printed.
Default ``--threads 1``: with torch's 2 threads on the shared machine the same run was 5-10x
slower (threads wait on each other while the other core is busy).

Measured 2026-11-23 (load average about 1.2, 1 thread, the one MLP engine): 10,000 models in
41.6 s (4.16 ms/model); per-model loop 0.20 s/model, extrapolated from 5 models to 2,000 s -> 48x;
max |difference| 6e-7. An earlier run (load average 3.7 -> 1.9, 1 thread): 10,000 models in 61.8 s
(6.2 ms/model); per-model loop 0.40 s/model, extrapolated from 3 models to 3,957 s -> 64x;
max |difference| 6e-7. At 2 threads (06:48, load 2.3-4.0): 319 s vectorised, loop 6.9 s/model
extrapolated to 69,353 s (217x); the engine's generic path 785 s extrapolated from 500 models.

    python benchmarks/shadow_models.py [--shadow-models 10000] [--epochs 100] [--fixed-size 500]
                                       [--loop-models 5] [--engine-models 0] [--threads 1] [--compile]
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn.functional as F
from torch.func import grad

from rerokit.attacks.reconn import TABLE_V, ReconData, functional_mlp, gd_many, shadow_targets, split_dataset
from rerokit.data import load_dataset
from rerokit.training.settings import DPSGDSettings, EngineOptions


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shadow-models", type=int, default=10000)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--fixed-size", type=int, default=500)
    ap.add_argument("--loop-models", type=int, default=5)
    ap.add_argument("--engine-models", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (0: torch's default; 1 avoids oversubscribing a shared 2-core machine)")
    ap.add_argument("--chunk-size", type=int, default=None)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    ds = load_dataset("digits")
    sp = split_dataset(ds, a.fixed_size, 100, a.seed)
    Xs, ys, n_shift = shadow_targets(sp.X_pool, sp.y_pool, a.shadow_models, sp.shape, a.seed)
    fm = functional_mlp(64, (10,), 10, "elu")
    theta0 = fm.init_flat(a.seed)
    Xf, yf = torch.tensor(sp.X_fixed), torch.tensor(sp.y_fixed)
    Xt, yt = torch.tensor(Xs), torch.tensor(ys)
    K, T = a.shadow_models, a.epochs
    print(f"setting: digits MLP 64-10-10 (P={fm.num_params}), |D-|={a.fixed_size}, K={K} shadow models "
          f"({n_shift} shifted targets), {T} full-batch epochs, lr 0.2, momentum 0.9, known init; "
          f"torch threads {torch.get_num_threads()}")
    print(f"load average before: {_load()}")

    # warm-up (allocator, BLAS threads; compilation with --compile)
    opts = EngineOptions(chunk_size=a.chunk_size, compile=a.compile)
    gd_many(theta0, ReconData(Xf, yf, Xt[:64], yt[:64]), settings=TABLE_V.replace(steps=2), options=opts)
    t0 = time.perf_counter()
    th = gd_many(theta0, ReconData(Xf, yf, Xt, yt), settings=TABLE_V.replace(steps=T), options=opts)
    t_vec = time.perf_counter() - t0
    print(f"vectorised gd_many: {K} models in {t_vec:.1f} s ({t_vec / K * 1e3:.2f} ms/model)")

    m = max(1, a.loop_models)
    t0 = time.perf_counter()
    diffs = []
    for k in range(m):
        Xa, ya = torch.cat([Xf, Xt[k : k + 1]]), torch.cat([yf, yt[k : k + 1]])
        loss = lambda t: F.cross_entropy(fm.logits(t, Xa), ya)  # noqa: E731
        g = grad(loss)
        p, v = theta0.clone(), torch.zeros_like(theta0)
        for _ in range(T):
            v = 0.9 * v + g(p)
            p = p - 0.2 * v
        diffs.append(float((p - th[k]).abs().max()))
    t_loop = time.perf_counter() - t0
    t_loop_all = t_loop / m * K
    print(f"per-model loop (torch.func.grad): {m} models in {t_loop:.2f} s -> EXTRAPOLATED to {K} models: "
          f"{t_loop_all:.0f} s")
    print(f"max |theta_loop - theta_vectorised| over {m} models: {max(diffs):.2e}")
    print(f"speed-up vs per-model loop: {t_loop_all / t_vec:.1f}x")
    if a.engine_models > 0:
        from rerokit.training import train_dpsgd_many

        M = min(a.engine_models, K)
        t0 = time.perf_counter()
        r = train_dpsgd_many(fm, theta0, Xt[:M, None], yt[:M, None], DPSGDSettings(noise_multiplier=0.0, clip=None, steps=T, lr=0.2, momentum=0.9), seed=0, shared=(Xf, yf))
        t_eng = time.perf_counter() - t0
        print(f"training engine train_dpsgd_many: {M} models in {t_eng:.1f} s -> EXTRAPOLATED to {K}: "
              f"{t_eng / M * K:.0f} s ({t_eng / M * K / t_vec:.1f}x gd_many); "
              f"max diff {float((r.theta - th[:M]).abs().max()):.2e}")
    print(f"load average after: {_load()}")
    print(f"target (issue 5): {K} shadow models in under 300 s: {'met' if t_vec < 300 else 'NOT met'} ({t_vec:.1f} s)")


if __name__ == "__main__":
    main()
