"""rerokit.training: functional models, per-sample gradients, DP-SGD engine, transcripts, Opacus adapter.

Usage (shapes in brackets; P = number of parameters, n = dataset size, K = trials, T = steps)::

    import torch
    from rerokit.training import (DPSGDSettings, EngineOptions, FunctionalModel, make_mlp, per_sample_clipped_grads,
                                  train_dpsgd, train_dpsgd_many)

    fm = FunctionalModel(make_mlp(64, [10], 10))          # digits MLP, P = 760
    theta0 = fm.init_flat(seed=0)                          # [P], deterministic from the seed
    fm.logits(theta0, X)                                   # X [n, 1, 8, 8] -> [n, 10]
    G = per_sample_clipped_grads(fm, theta0, X, y, C=0.1)  # [n, P], clip_C(grad l(theta, z_i))

    # the hyper-parameters, checked once (noise_multiplier, clip, steps, lr, sample_rate, momentum)
    s = DPSGDSettings(noise_multiplier=1.0, clip=0.1, steps=100, lr=1.0, sample_rate=1.0)

    # one run; record=True gives the informed adversary's view (Hayes et al. 2023 Eq. (1))
    r = train_dpsgd(fm, theta0, X, y, s, seed=7, target_index=0, record=True)
    tr = r.transcript          # tr.thetas [T, P] (theta_t used at step t), tr.gbar [T, P],
                               # tr.noisy_sums [T, P], tr.batch_masks [T, n] bool, tr.final_theta [P]

    # K runs vectorised (per-trial data, per-trial seeds); trial k == train_dpsgd(..., seed=seeds[k])
    R = train_dpsgd_many(fm, theta0, Xk, yk, s,            # theta0 [P] or [K, P]; Xk [K, n, ...]; yk [K, n]
                         seed=123,                         # or K ints [...]; one int: seeds = trial_seeds(123, K)
                         target_index=0,                   # or K ints, or None (all known: gbar = noise)
                         record="gbar_only",               # False | True/"full" | "gbar_only" (no noisy_sums)
                         options=EngineOptions(num_threads=1))  # method, chunk_size, progress, compile, device
    R.theta [K, P]; R.transcript.trial(k) -> single-run Transcript; R.transcript.target_in_batch() [K, T]
    # common points without K copies: trial k's data = cat([Xs, Xk[k]]); target index m = len(Xs)
    R = train_dpsgd_many(fm, theta0, Xk_targets, yk_targets, s, shared=(Xs, ys), target_index=len(Xs), seed=1)
    tr.dp_history() -> [(sigma, q, T)]   # Opacus accountant-history format (accounting.events)

    # Opacus' own DP-SGD (GradSampleModule + DPOptimizer + Poisson sampler + RDPAccountant)
    from rerokit.training.opacus_adapter import record_opacus_transcript
    tr = record_opacus_transcript(module, X, y, target_index, s, seed,
                                  theta0=None)   # same Transcript layout; settings["accountant_history"]

Semantics: noisy_sum_t = sum_{i in B_t} clip_C(g_i(theta_t)) + N(0, sigma^2 C^2 I);
gbar_t = noisy_sum_t - sum_{i in B_t, i != target} clip_C(g_i(theta_t)); update
theta_{t+1} = theta_t - lr * noisy_sum_t / (q n) (momentum: torch SGD convention). B_t is Poisson
sampled with rate q (q = 1: full batch); the transcript records the true batch (Hayes et al.'s
threat model gives it to the adversary). Clip factor min(1, C / (||g|| + 1e-6)) as in Opacus.
``train_dpsgd`` is the K = 1 case of ``train_dpsgd_many`` (one loop). For nn.Sequential MLPs both
use the MLP engine (``rerokit.training.mlp.MLPPlan``, method="linear": ghost norms, no (n, P)
per-sample tensor; the same engine trains RecoNN's shadow models and scores the audit's
candidates) and vmap(grad) otherwise (method="vmap"); ``chunk_size`` bounds memory. Speed
(benchmarks/trials_vmap.py, 2 shared cores): 1,000 digits-MLP trials, n = 1000, T = 100,
record="gbar_only" in ~47 s (vs ~2,200 s for a per-trial loop, extrapolated).
"""

# Names are imported on first use (PEP 562), so that numpy-only modules of this package (e.g.
# ``rerokit.training.glm``) load without torch.
_EXPORTS = {
    "FunctionalModel": "models", "make_mlp": "models", "SmallCNN": "models", "ACTIVATIONS": "models",
    "per_sample_grads": "grads", "per_sample_clipped_grads": "grads", "clip_rows": "grads",
    "clip_factors": "grads", "sample_loss": "grads", "CLIP_EPS": "grads",
    "train_dpsgd": "engine", "train_dpsgd_many": "engine", "trial_seeds": "engine", "Result": "engine",
    "NOISE_BLOCK": "engine", "linear_plan_supported": "engine",
    "Transcript": "transcript",
    "DPSGDSettings": "settings", "EngineOptions": "settings", "MLPSpec": "settings",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(f"rerokit.training.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rerokit.training' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
