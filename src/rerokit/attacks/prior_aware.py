"""Prior-aware reconstruction attacks on DP-SGD transcripts (Hayes, Mahloujifar & Balle 2023).

Threat model (Hayes et al. Sec. 3.3): the adversary knows a discrete prior
pi = {z_1, ..., z_N} containing the target z*, every training point except z*, the
intermediate parameters theta_1..theta_T and the privatized gradient sums. Subtracting the
clipped gradients of the known points that were in the batch of step t leaves

    g-bar_t = b_t * clip_C(grad_theta l(theta_t, z*)) + N(0, sigma^2 C^2 I),   b_t ~ Bernoulli(q),

with b_t = 1 in full-batch training. Every attack here scores each candidate z_i from the
per-step statistics

    s_{t,i} = < clip_C(grad_theta l(theta_t, z_i)), g-bar_t > / C^2        (``inner``)
    n_{t,i} = || clip_C(grad_theta l(theta_t, z_i)) ||^2 / C^2             (``sqnorm``)

normalised as in Hayes et al. App. A ("Prior-aware attack details") so that the target's term
has unit mean when its gradient is clipped (s_{t,*} = n_{t,*} + N(0, sigma^2 n_{t,*})), and
returns the argmax candidate:

* :func:`alg2_scores` -- Algorithm 2: O_i = sum_t s_{t,i}.
* :func:`alg3_scores` -- Algorithm 3 (App. F): O_i = sum of the ``round(q T)`` largest values
  of s_{., i} over t (at least one), for mini-batches.
* :func:`loglik_scores` -- App. G: O_i = sum_t ln(1 - q + q exp((2 s_{t,i} - n_{t,i}) / (2 sigma^2)))
  + ln p_i. With C = 1 this is exactly App. G's s_z, since
  l_t^2 - (l_t^z)^2 = 2 <g^z_t, g-bar_t> - ||g^z_t||^2; for general C we divide by the noise
  variance sigma^2 C^2, which is the same after the 1/C^2 normalisation. For a non-uniform prior
  we add ln p_i (the log posterior; App. G writes "s_z * p_z", but s_z is a log-likelihood, so
  the Bayes decision multiplies the likelihood exp(s_z) by p_z). This is the exact log posterior
  of z_i given the transcript (theta_{t+1} is a deterministic function of theta_t and the
  privatized gradient, so the likelihood factorises over steps), hence the Bayes-optimal guess.

Relation derived for the tests: for q = 1 the loglik score is
``(alg2 - sum_t n_{t,i} / 2) / sigma^2 + ln p_i``; when every candidate gradient is clipped
(n_{t,i} = 1) and the prior is uniform, its argmax equals Algorithm 2's.

The variant without known-gradient subtraction (App. E, Fig. 10) uses the privatized sum g_t
itself in place of g-bar_t: pass ``noisy_sums`` as ``gbar`` to :func:`candidate_statistics`.

All score functions accept leading batch dimensions (``(..., T, N)`` -> ``(..., N)``) so that
many trials are scored at once.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from rerokit._validate import check_choice, check_positive, check_probability

__all__ = [
    "ATTACKS",
    "candidate_statistics",
    "step_statistics_from_grads",
    "alg2_scores",
    "alg3_scores",
    "loglik_scores",
    "scores",
    "guess",
    "top_k_steps",
]

ATTACKS = ("alg2", "alg3", "loglik")


def step_statistics_from_grads(
    cand_grads: torch.Tensor, gbar: torch.Tensor, clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(inner, sqnorm)`` of shape ``(..., T, N)`` from clipped candidate gradients: s_{t,i} and n_{t,i} above.

    Args:
      cand_grads: clipped candidate gradients clip_C(grad_theta l(theta_t, z_i)), shape
        ``(..., T, N, P)``.
      gbar: the g-bar_t vectors, shape ``(..., T, P)``.
      clip: clipping norm C > 0 (the statistics are divided by C^2).

    Returns:
      ``(inner, sqnorm)``, each of shape ``(..., T, N)``.

    Raises:
      ValueError: if ``clip`` is not a finite number > 0, or the shapes disagree.
    """
    c = check_positive("clip", clip)
    if cand_grads.shape[-1] != gbar.shape[-1] or cand_grads.shape[:-2] != gbar.shape[:-1]:
        raise ValueError(
            f"cand_grads (..., T, N, P) and gbar (..., T, P) disagree: {tuple(cand_grads.shape)} vs {tuple(gbar.shape)}"
        )
    inner = torch.einsum("...np,...p->...n", cand_grads, gbar) / (c * c)
    sqnorm = (cand_grads * cand_grads).sum(-1) / (c * c)
    return inner, sqnorm


def candidate_statistics(
    clipped_grads_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor],
    thetas: torch.Tensor,
    Xc: torch.Tensor,
    yc: torch.Tensor,
    gbar: torch.Tensor,
    clip: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-step statistics ``(inner, sqnorm)``, each ``(T, N)``, of the prior candidates.

    The clipped gradients of all N candidates at all T steps are computed at once as a
    ``(T, N, P)`` tensor (``clipped_grads_fn`` vmapped over ``thetas``) and dotted with ``gbar``.

    Args:
      clipped_grads_fn: ``clipped_grads_fn(flat_params, X, y, C) -> (n, P)``, the clipped
        per-sample gradients clip_C(grad_theta l(theta, z)) (e.g.
        ``functools.partial(per_sample_clipped_grads, fm)``); must be vmappable.
      thetas: parameters theta_t of the T steps, shape (T, P).
      Xc: the N candidates, shape (N, ...).
      yc: their labels, shape (N,).
      gbar: the g-bar_t vectors (or the noisy sums, App. E), shape (T, P).
      clip: clipping norm C > 0.

    Returns:
      ``(inner, sqnorm)``, each of shape (T, N).

    Raises:
      ValueError: if ``thetas``/``gbar`` are not both (T, P), or ``clip`` is not a finite number > 0.
    """
    if thetas.ndim != 2 or gbar.shape != thetas.shape:
        raise ValueError(f"thetas and gbar must both be (T, P); got {tuple(thetas.shape)} and {tuple(gbar.shape)}")
    G = torch.func.vmap(lambda th: clipped_grads_fn(th, Xc, yc, clip))(thetas)  # (T, N, P)
    return step_statistics_from_grads(G, gbar, clip)


def alg2_scores(inner: torch.Tensor) -> torch.Tensor:
    """Algorithm 2 (Hayes et al. 2023): O_i = sum_t <clip_C(g_{t,i}), g-bar_t> / C^2.

    Args:
      inner: the statistics s_{t,i}, shape ``(..., T, N)``.

    Returns:
      Scores of shape ``(..., N)``.
    """
    return inner.sum(-2)


def top_k_steps(q: float, T: int) -> int:
    """Number of steps Algorithm 3 keeps: round(q T), at least 1 and at most T.

    Args:
      q: Poisson sampling rate in (0, 1].
      T: number of steps.

    Returns:
      The number of steps k as an int.

    Raises:
      ValueError: if ``q`` is not in (0, 1] (the message names it ``sample_rate``).
    """
    return int(min(T, max(1, round(check_probability("sample_rate", q) * T))))


def alg3_scores(inner: torch.Tensor, sample_rate: float) -> torch.Tensor:
    """Algorithm 3 (Hayes et al. 2023 App. F): each candidate's sum of its ``top_k_steps(q, T)`` largest inner products.

    Those are the steps most likely to have contained the target. Equals :func:`alg2_scores` for
    q = 1.

    Args:
      inner: the statistics s_{t,i}, shape ``(..., T, N)``.
      sample_rate: Poisson sampling rate q in (0, 1].

    Returns:
      Scores of shape ``(..., N)``.

    Raises:
      ValueError: if ``sample_rate`` is not in (0, 1].
    """
    T = inner.shape[-2]
    k = top_k_steps(sample_rate, T)
    if k == T:
        return inner.sum(-2)
    return torch.topk(inner, k, dim=-2).values.sum(-2)


def loglik_scores(
    inner: torch.Tensor,
    sqnorm: torch.Tensor,
    noise_multiplier: float,
    sample_rate: float,
    log_prior: torch.Tensor | None = None,
) -> torch.Tensor:
    """Log posterior (up to a constant) of each candidate (Hayes et al. 2023 App. G).

    sum_t ln(1 - q + q exp((2 s_{t,i} - n_{t,i}) / (2 sigma^2))) + ln p_i, computed stably as
    logaddexp(ln(1-q), ln q + a) (``a`` the exponent). ``sigma = 0`` is not allowed (the
    likelihood is degenerate); use Algorithm 2 there.

    Args:
      inner: the statistics s_{t,i}, shape ``(..., T, N)``.
      sqnorm: the statistics n_{t,i}, same shape.
      noise_multiplier: sigma > 0.
      sample_rate: Poisson sampling rate q in (0, 1].
      log_prior: ln p_i, shape ``(..., N)``; None (default) for a uniform prior (a constant, dropped).

    Returns:
      Scores of shape ``(..., N)``.

    Raises:
      ValueError: if ``noise_multiplier`` is not a finite number > 0 or ``sample_rate`` not in (0, 1].
    """
    s = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sample_rate", sample_rate)
    a = (2.0 * inner - sqnorm) / (2.0 * s * s)
    if q == 1.0:
        per_step = a
    else:
        per_step = torch.logaddexp(torch.full_like(a, math.log1p(-q)), a + math.log(q))
    out = per_step.sum(-2)
    if log_prior is not None:
        out = out + log_prior
    return out


def scores(
    attack: str,
    inner: torch.Tensor,
    sqnorm: torch.Tensor | None = None,
    *,
    noise_multiplier: float | None = None,
    sample_rate: float = 1.0,
    log_prior: torch.Tensor | None = None,
) -> torch.Tensor:
    """Scores ``(..., N)`` of attack ``alg2`` | ``alg3`` | ``loglik`` (see module docstring).

    Args:
      attack: "alg2", "alg3" or "loglik" (see :data:`ATTACKS`).
      inner: the statistics s_{t,i}, shape ``(..., T, N)``.
      sqnorm: the statistics n_{t,i} (needed by "loglik").
      noise_multiplier: sigma > 0 (needed by "loglik").
      sample_rate: Poisson sampling rate q in (0, 1] (default 1; used by "alg3" and "loglik").
      log_prior: ln p_i for "loglik"; None (default) for a uniform prior.

    Returns:
      Scores of shape ``(..., N)``.

    Raises:
      ValueError: if ``attack`` is unknown, "loglik" lacks ``sqnorm``/``noise_multiplier``, or a
        setting is out of range.
      TypeError: if ``attack`` is not a string.
    """
    check_choice("attack", attack, ATTACKS)
    if attack == "alg2":
        return alg2_scores(inner)
    if attack == "alg3":
        return alg3_scores(inner, sample_rate)
    if sqnorm is None or noise_multiplier is None:
        raise ValueError("attack loglik needs sqnorm and noise_multiplier")
    return loglik_scores(inner, sqnorm, noise_multiplier, sample_rate, log_prior)


def guess(score: torch.Tensor) -> torch.Tensor:
    """Index of the reconstruction guess z-hat = argmax_i O_i (first index on ties).

    Args:
      score: scores of shape ``(..., N)``.

    Returns:
      Long tensor of shape ``(...)``: the index of the guessed candidate.

    Raises:
      ValueError: if a score is not finite (check the transcript for NaN/inf).
    """
    if not torch.isfinite(score).all():
        raise ValueError("attack scores are not finite (check the transcript for NaN/inf)")
    return torch.argmax(score, dim=-1)
