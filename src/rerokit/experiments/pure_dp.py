"""Pure-DP releases: the exact Laplace ReRo bound and the finite-support bound against an attack.

For each epsilon and uniform prior size n (kappa = 1/n) the experiment lists the certified bounds
on the success of any attack against an eps-DP release:

* ``gamma_dp`` - Balle et al. 2022, Cor. 3: min(1, kappa e^eps);
* ``gamma_pure_dp_curve`` - 1 - f_{eps,0}(kappa), any eps-DP mechanism (:func:`rerokit.bounds.laplace.rero_pure_dp`);
* ``gamma_laplace`` - 1 - f_eps(kappa) for a one-dimensional Laplace release (Dong, Roth & Su 2022;
  :func:`rerokit.bounds.laplace.rero_laplace`);
* ``gamma_finite_support`` - e^eps / (n - 1 + e^eps), exact reconstruction from n values (Balle,
  Cherubin & Hayes 2022, Sec. VII-F; :func:`rerokit.bounds.information_flow.rero_finite_support`);

and an attack on a Laplace release: the informed adversary knows that the query's value is one of n
equally spaced points c_i = i Delta / (n - 1) in [0, Delta] (so every two candidates are eps-DP
neighbours for scale b = Delta / eps), observes c + Lap(b) and guesses the nearest candidate (the
maximum-a-posteriori guess: the Laplace likelihood decreases with |y - c|). Its success is computed
exactly from the Laplace cdf (``attack_exact``) and by simulation (``attack_success``, ``trials``
draws, seeded, with a 95% Clopper-Pearson interval). Every bound must lie above it. Writes
``pure_dp.csv`` and ``pure_dp.png``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rerokit._validate import check_int, check_positive
from rerokit.experiments._outputs import output_dir, pyplot, write_csv
from rerokit.experiments._sweeps import check_prior_size, sweep_values

__all__ = ["nearest_candidate_success", "pure_dp_rows", "run_pure_dp", "CSV_FIELDS"]

CSV_FIELDS = ("epsilon", "prior_size", "kappa", "gamma_dp", "gamma_pure_dp_curve", "gamma_laplace",
              "gamma_finite_support", "attack_exact", "attack_success", "ci_low", "ci_high", "trials", "seed")


def nearest_candidate_success(epsilon: float, prior_size: int) -> float:
    """Exact success of the nearest-candidate (MAP) guess for n equally spaced candidates in [0, Delta], b = Delta / eps.

    Candidate i's Voronoi cell is [c_i - h, c_i + h] with h = Delta / (2 (n - 1)) (unbounded at the
    two ends); P(|Lap(b)| <= h) = 1 - e^{-h/b}, P(Lap(b) <= h) = 1 - e^{-h/b} / 2, so the success is
    ((n - 2)(1 - e^{-h/b}) + 2 (1 - e^{-h/b} / 2)) / n, with h / b = eps / (2 (n - 1)).

    Args:
      epsilon: eps > 0.
      prior_size: n >= 2.

    Returns:
      The success probability.

    Raises:
      ValueError, TypeError: if an argument is out of range or of the wrong type.
    """
    eps = check_positive("epsilon", epsilon)
    n = check_int("prior_size", prior_size, minimum=2)
    t = math.exp(-eps / (2.0 * (n - 1)))
    return ((n - 2) * (1.0 - t) + 2.0 * (1.0 - t / 2.0)) / n


def _simulate(eps: float, n: int, trials: int, rng: np.random.Generator) -> int:
    """Successes of the nearest-candidate guess in ``trials`` simulated releases (Delta = 1)."""
    c = np.linspace(0.0, 1.0, n)
    target = rng.integers(0, n, trials)
    y = c[target] + rng.laplace(0.0, 1.0 / eps, trials)
    guess = np.clip(np.rint(y * (n - 1)), 0, n - 1).astype(np.int64)  # nearest grid point
    return int(np.sum(guess == target))


def pure_dp_rows(epsilons: Sequence[float] = (0.5, 1.0, 2.0, 4.0, 8.0), prior_sizes: Sequence[int] = (2, 10, 100), *,
                 trials: int = 100_000, seed: int = 0) -> list[dict[str, Any]]:
    """One row per (epsilon, prior size): the four bounds and the attack (see the module docstring).

    Args:
      epsilons: eps > 0, distinct.
      prior_sizes: n >= 2, distinct.
      trials: simulated releases per row, an integer in [1, 10^8] (default 10^5).
      seed: seed >= 0 of the simulation (one generator for all rows, in order).

    Returns:
      The rows, keys ``CSV_FIELDS``.

    Raises:
      ValueError, TypeError: an argument is out of range or of the wrong type.
    """
    from rerokit.bounds.information_flow import rero_finite_support
    from rerokit.bounds.laplace import rero_laplace
    from rerokit.stats import clopper_pearson

    es = sweep_values("epsilons", epsilons, check_positive)
    ns = sweep_values("prior_sizes", prior_sizes, check_prior_size)
    m = check_int("trials", trials, minimum=1, maximum=10**8)
    sd = check_int("seed", seed, minimum=0)
    rng = np.random.default_rng(sd)
    rows = []
    for e in es:
        for n in ns:
            lap = rero_laplace(e, prior=n)
            wins = _simulate(e, n, m, rng)
            lo, hi = clopper_pearson(wins, m, 0.95)
            rows.append({"epsilon": e, "prior_size": n, "kappa": 1.0 / n, "gamma_dp": lap.extras["gamma_dp"],
                         "gamma_pure_dp_curve": lap.extras["gamma_pure_dp_curve"], "gamma_laplace": lap.value,
                         "gamma_finite_support": rero_finite_support(e, n).value,
                         "attack_exact": nearest_candidate_success(e, n), "attack_success": wins / m,
                         "ci_low": lo, "ci_high": hi, "trials": m, "seed": sd})
    return rows


def _plot(path: Path, rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    sizes = sorted({r["prior_size"] for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.6 * len(sizes), 3.8), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        rs = sorted((r for r in rows if r["prior_size"] == n), key=lambda r: r["epsilon"])
        e = [r["epsilon"] for r in rs]
        for key, style, label in (("gamma_dp", "--", "κe^ε (Cor. 3)"), ("gamma_pure_dp_curve", "-.", "any ε-DP curve"),
                                  ("gamma_laplace", "-", "Laplace curve 1 − f_ε(κ)"),
                                  ("gamma_finite_support", ":", "finite support (Sec. VII-F)")):
            ax.plot(e, [r[key] for r in rs], style, label=label)
        ax.errorbar(e, [r["attack_success"] for r in rs],
                    yerr=[[r["attack_success"] - r["ci_low"] for r in rs], [r["ci_high"] - r["attack_success"] for r in rs]],
                    fmt="o", ms=4, capsize=2, label="nearest-candidate attack (95% CI)")
        ax.set_xscale("log")
        ax.set_xticks(e, [f"{x:g}" for x in e])
        ax.minorticks_off()
        ax.set_xlabel("ε of the Laplace release")
        ax.set_ylabel("reconstruction success")
        ax.set_title(f"uniform prior of {n} (κ = {1 / n:g})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Pure DP: bounds vs an attack on a Laplace release ({rows[0]['trials']} trials per point, seed "
                 f"{rows[0]['seed']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_pure_dp(out_dir: str | Path, *, epsilons: Sequence[float] = (0.5, 1.0, 2.0, 4.0, 8.0),
                prior_sizes: Sequence[int] = (2, 10, 100), trials: int = 100_000, seed: int = 0) -> dict[str, Any]:
    """Write ``pure_dp.csv`` and ``pure_dp.png`` into ``out_dir``.

    Args:
      out_dir: output folder (created).
      epsilons, prior_sizes, trials, seed: as in :func:`pure_dp_rows`.

    Returns:
      ``{"png", "csv", "rows", "seed"}``.

    Raises:
      ValueError, TypeError: as :func:`pure_dp_rows`, or an unusable ``out_dir``.
    """
    out = output_dir(out_dir)
    rows = pure_dp_rows(epsilons, prior_sizes, trials=trials, seed=seed)
    write_csv(out / "pure_dp.csv", rows, CSV_FIELDS)
    _plot(out / "pure_dp.png", rows)
    return {"png": str(out / "pure_dp.png"), "csv": str(out / "pure_dp.csv"), "rows": rows, "seed": seed}
