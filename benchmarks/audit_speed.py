"""Benchmark: prior-aware audit trials (Hayes et al. 2023 Alg. 2) on the digits MLP 64-10-10,
|D-| = 999, T = 100, full batch, C = 0.1, prior size 10 - the setting of the issue's target
(1,000 trials in under 5 minutes on 2 cores).

Two ways, both measured in this run:
  * vectorised: ``rerokit.experiments.audit.run_prior_aware_audit`` (trials in chunks through
    ``train_dpsgd_many`` and vmapped candidate scoring), on ``--trials`` trials;
  * baseline: a per-trial Python loop - ``train_dpsgd(method="vmap")`` for one trial at a time
    (per step, the (n, P) per-sample clipped gradients), then the candidates scored step by
    step with ``per_sample_clipped_grads`` - measured on ``--baseline-trials`` trials and
    EXTRAPOLATED linearly to ``--trials``.
Both use the same trial construction (same seeds), and the baseline's decisions are checked to
equal the vectorised ones on the trials both ran. Prints seconds, trials/s and the ratio.
Timings on a shared machine are noisy: run it when ``uptime`` shows an idle machine.

    python benchmarks/audit_speed.py [--trials 1000] [--baseline-trials 3] [--sigma 1.0]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from rerokit.attacks.prior_aware import alg2_scores, guess, step_statistics_from_grads
from rerokit.experiments.audit import AuditConfig, RunOptions, load_audit_data, build_model, make_trial, run_prior_aware_audit
from rerokit.training import per_sample_clipped_grads, train_dpsgd, trial_seeds
from rerokit.training.settings import DPSGDSettings, EngineOptions


def baseline(cfg: AuditConfig, seeds: list[int]) -> list[int]:
    ds = load_audit_data(cfg)
    fm = build_model(cfg, ds.sample_shape, ds.num_classes)
    X, y = torch.as_tensor(ds.X), torch.as_tensor(ds.y)
    guesses = []
    for s in seeds:
        t = make_trial(ds.n, cfg.prior_size, cfg.n_known, s)
        idx = torch.as_tensor(np.concatenate([t.known, [t.target_index]]))
        r = train_dpsgd(fm, fm.init_flat(s), X[idx], y[idx], DPSGDSettings(noise_multiplier=cfg.noise_multiplier, clip=cfg.clip, steps=cfg.steps, lr=cfg.lr, sample_rate=cfg.sample_rate), seed=s, target_index=len(t.known), record="gbar_only", options=EngineOptions(method="vmap"))
        tr = r.transcript
        pidx = torch.as_tensor(t.prior)
        G = torch.stack([per_sample_clipped_grads(fm, th, X[pidx], y[pidx], cfg.clip) for th in tr.thetas])
        inner, _ = step_statistics_from_grads(G, tr.gbar, cfg.clip)
        guesses.append(int(guess(alg2_scores(inner.double()))))
    return guesses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--baseline-trials", type=int, default=3)
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--chunk-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    cfg = AuditConfig(noise_multiplier=a.sigma)
    print(f"setting: digits MLP 64-10-10 ELU, |D-|={cfg.n_known}, T={cfg.steps}, q={cfg.sample_rate}, "
          f"C={cfg.clip}, N={cfg.prior_size}, sigma={a.sigma}; torch threads={torch.get_num_threads()}, "
          f"cpus={os.cpu_count()}, load avg={os.getloadavg()[0]:.2f}")

    t0 = time.perf_counter()
    rep = run_prior_aware_audit(cfg, a.trials, a.seed, attacks=("alg2",), options=RunOptions(chunk_size=a.chunk_size, progress=True))
    t_vec = time.perf_counter() - t0
    print(f"vectorised: {a.trials} trials in {t_vec:.1f} s ({a.trials / t_vec:.2f} trials/s); "
          f"success {rep.results['alg2'].value:.3f}, gamma {rep.gamma:.3f}")

    kb = min(a.baseline_trials, a.trials)
    seeds = trial_seeds(a.seed, a.trials)[:kb]
    t0 = time.perf_counter()
    g = baseline(cfg, seeds)
    t_base = time.perf_counter() - t0
    per = t_base / kb
    same = all(g[i] == rep.records[i]["guess"]["alg2"] for i in range(kb))
    print(f"baseline (per-trial loop): {kb} trials in {t_base:.1f} s = {per:.2f} s/trial; "
          f"EXTRAPOLATED to {a.trials} trials: {per * a.trials:.0f} s; decisions equal to vectorised: {same}")
    print(f"ratio baseline/vectorised (extrapolated): {per * a.trials / t_vec:.1f}x")
    print(f"load avg at end: {os.getloadavg()[0]:.2f} (noisy if > number of cores)")


if __name__ == "__main__":
    main()
