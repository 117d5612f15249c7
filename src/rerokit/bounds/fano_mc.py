"""Monte Carlo mutual information of the Gaussian mechanism on a regular-simplex prior, and its Fano bound.

Hayes, Mahloujifar & Balle 2023, App. H, Table 2, row "Guo et al. (2022b) (MC)": instead of Guo
et al.'s closed-form upper bound on I(pi; w) (:func:`rerokit.bounds.fano.gaussian_mutual_information_bound`),
the mutual information itself is estimated by Monte Carlo and put into Fano's inequality
(:func:`rerokit.bounds.fano.fano_advantage_from_mi`). The setting of the table: one full-batch
DP-SGD step, a uniform prior of n candidates whose clipped gradients are n orthogonal vectors of
norm a = Delta / sqrt(2) (the vertices of a regular simplex, pairwise distance Delta; the table has
unit-norm gradients, Delta = sqrt(2)), released as w = g_pi + sigma Z, Z ~ N(0, I_n).

By symmetry the target can be taken to be candidate 1; with r = a / sigma,

    I(pi; w) = log n - E[ log(1 + sum_{j >= 2} exp(r (Z_j - Z_1) - r^2)) ],

an expectation over Z ~ N(0, I_n) estimated by the sample mean over ``samples`` draws (seeded),
with its standard error. This is an *estimate* (a Monte Carlo number with a confidence interval),
not a certified bound; the advantage bound is read off at the estimate and at both ends of the
interval (Fano's bound is non-decreasing in I). Pure numpy (no torch).
"""

from __future__ import annotations

import math

import numpy as np

from rerokit._validate import check_int, check_nonnegative, check_positive
from rerokit.bounds.fano import fano_advantage_from_mi
from rerokit.bounds.types import Bound

__all__ = ["simplex_mutual_information_mc", "fano_advantage_simplex_mc"]

_Z95 = 1.959963984540054
_CHUNK_ELEMENTS = 1 << 21  # normal draws per chunk (16 MiB)


def simplex_mutual_information_mc(noise_multiplier: float, prior_size: int, *, sensitivity: float = math.sqrt(2.0),
                                  samples: int = 100_000, seed: int = 0) -> Bound:
    """Monte Carlo estimate of I(pi; w) for the Gaussian mechanism on a regular-simplex prior of n candidates.

    See the module docstring (Hayes et al. 2023, App. H, Table 2, "Guo et al. (MC)").

    Args:
      noise_multiplier: sigma, the noise std in units of the gradient scale, > 0.
      prior_size: n, the number of equally likely candidates, an integer >= 2.
      sensitivity: Delta, the distance between any two candidates' gradients, >= 0 (default sqrt(2):
        orthogonal unit-norm gradients, the table's setting).
      samples: Monte Carlo draws of Z ~ N(0, I_n), an integer in [2, 10^9] (default 10^5, the paper's).
      seed: seed of numpy's default generator, an integer >= 0 (default 0; recorded in ``extras``).

    Returns:
      A :class:`Bound` with ``direction="estimate"``: ``value`` the estimate of I in nats (clipped
      to [0, log n]), ``interval`` its 95% normal confidence interval (clipped likewise), ``error``
      the half-width; ``extras``: ``se`` (standard error), ``samples``, ``seed``.

    Raises:
      ValueError: if an argument is out of range or not finite.
      TypeError: if an argument has the wrong type.
    """
    s = check_positive("noise_multiplier", noise_multiplier)
    n = check_int("prior_size", prior_size, minimum=2)
    d = check_nonnegative("sensitivity", sensitivity)
    m = check_int("samples", samples, minimum=2, maximum=10**9)
    sd = check_int("seed", seed, minimum=0)
    r = d / math.sqrt(2.0) / s
    if not math.isfinite(r * r):
        raise ValueError(f"sensitivity / noise_multiplier must be finite when squared, got {d!r} / {s!r}")
    rng = np.random.default_rng(sd)
    rows = max(1, _CHUNK_ELEMENTS // n)
    total = total_sq = 0.0
    done = 0
    while done < m:
        k = min(rows, m - done)
        z = rng.standard_normal((k, n))
        a = r * (z[:, 1:] - z[:, :1]) - r * r
        top = np.max(a, axis=1)
        lse = top + np.log(np.sum(np.exp(a - top[:, None]), axis=1))  # log sum_{j >= 2} exp(a_j)
        term = np.logaddexp(0.0, lse)  # log(1 + sum ...)
        total += float(term.sum())
        total_sq += float(np.square(term).sum())
        done += k
    mean = total / m
    var = max(0.0, (total_sq - m * mean * mean) / (m - 1))
    se = math.sqrt(var / m)
    h = math.log(n)
    est = h - mean
    clip = lambda x: min(h, max(0.0, x))  # noqa: E731
    lo, hi = clip(est - _Z95 * se), clip(est + _Z95 * se)
    inputs = {"noise_multiplier": s, "prior_size": n, "sensitivity": d}
    return Bound(clip(est), _Z95 * se, "simplex-mutual-information-mc", "estimate", (lo, hi), inputs,
                 {"se": se, "samples": m, "seed": sd})


def fano_advantage_simplex_mc(noise_multiplier: float, prior_size: int, *, sensitivity: float = math.sqrt(2.0),
                              samples: int = 100_000, seed: int = 0) -> Bound:
    """Fano advantage bound at the Monte Carlo mutual information (Hayes et al. 2023, Table 2, "Guo et al. (MC)").

    Args:
      noise_multiplier, prior_size, sensitivity, samples, seed: as in :func:`simplex_mutual_information_mc`.

    Returns:
      A :class:`Bound` with ``direction="estimate"``: ``value`` the advantage bound at the estimated I,
      ``interval`` the bounds at the ends of I's 95% interval, ``error`` the larger distance to an end;
      ``extras``: ``mutual_information`` (the estimate), ``mutual_information_se``,
      ``mutual_information_interval``, ``se`` (the advantage's standard error by the delta method, from
      the interval), ``gamma`` (the success bound at the estimate), ``kappa`` = 1/n, ``samples``, ``seed``.

    Raises:
      ValueError, TypeError: as :func:`simplex_mutual_information_mc`.
    """
    mi = simplex_mutual_information_mc(noise_multiplier, prior_size, sensitivity=sensitivity, samples=samples,
                                       seed=seed)
    n = mi.inputs["prior_size"]
    at = fano_advantage_from_mi(mi.value, n)
    lo = fano_advantage_from_mi(mi.interval[0], n).value
    hi = fano_advantage_from_mi(mi.interval[1], n).value
    extras = {
        "mutual_information": mi.value, "mutual_information_se": mi.extras["se"],
        "mutual_information_interval": list(mi.interval), "se": (hi - lo) / (2 * _Z95),
        "gamma": at.extras["gamma"], "kappa": 1.0 / n, "samples": mi.extras["samples"], "seed": mi.extras["seed"],
    }
    return Bound(at.value, max(hi - at.value, at.value - lo), "fano-simplex-mc", "estimate", (lo, hi),
                 dict(mi.inputs), extras)
