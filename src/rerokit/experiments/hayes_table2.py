"""Hayes, Mahloujifar & Balle (2023), App. H: Table 2 and Fig. 11 - Fano bounds (Guo et al. 2022b) vs the exact bound.

One full-batch DP-SGD step (q = 1, T = 1), a uniform prior of n candidates, noise multipliers
sigma = 0.5 ... 3. Three upper bounds on the advantage (Eq. 4, (gamma - kappa) / (1 - kappa)):

* "Guo et al." - Fano's inequality with Guo et al.'s closed-form bound on the mutual information
  (:func:`rerokit.bounds.fano.fano_advantage_gaussian`, sensitivity sqrt(2));
* "Guo et al. (MC)" - Fano's inequality at the Monte Carlo mutual information of the
  regular-simplex prior (:func:`rerokit.bounds.fano_mc.fano_advantage_simplex_mc`; seeded, with
  its standard error and 95% interval; an estimate);
* "Ours" - Hayes et al.'s bound (Thm 2), exact here (:func:`rerokit.bounds.dpsgd.rero_dpsgd`).

The paper's printed values are in the CSV beside each number (column ``paper``). Writes
``hayes_table2.csv`` and ``hayes_table2.png`` (Fig. 11 style, one panel per prior size).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Sequence

from rerokit._validate import check_int, check_positive
from rerokit.experiments._outputs import output_dir, pyplot, write_csv
from rerokit.experiments._sweeps import check_prior_size, sweep_values

__all__ = ["table2_rows", "table2", "PAPER_TABLE2", "DEFAULT_SIGMAS"]

DEFAULT_SIGMAS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
PAPER_TABLE2: dict[tuple[int, str], tuple[float, ...]] = {
    # Hayes et al. 2023, Table 2 (advantage upper bounds at sigma = 0.5, 1, 1.5, 2, 2.5, 3)
    (10, "guo"): (0.976, 0.593, 0.380, 0.274, 0.213, 0.174),
    (10, "guo_mc"): (0.771, 0.397, 0.257, 0.184, 0.144, 0.118),
    (10, "ours"): (0.737, 0.322, 0.189, 0.128, 0.099, 0.080),
    (100, "guo"): (0.861, 0.346, 0.195, 0.131, 0.097, 0.076),
    (100, "guo_mc"): (0.549, 0.210, 0.120, 0.081, 0.062, 0.049),
    (100, "ours"): (0.362, 0.077, 0.035, 0.024, 0.018, 0.012),
}
METHODS = {"guo": "Guo et al. (2022b)", "guo_mc": "Guo et al. (2022b) (MC)", "ours": "Ours (Hayes et al. Thm 2, exact)"}
CSV_FIELDS = ("prior_size", "noise_multiplier", "method", "advantage", "ci_low", "ci_high", "se",
              "mutual_information", "mutual_information_se", "paper", "direction", "samples", "seed")


def _paper(n: int, method: str, sigma: float) -> float | None:
    vals = PAPER_TABLE2.get((n, method))
    if vals is None:
        return None
    for s, v in zip(DEFAULT_SIGMAS, vals):
        if math.isclose(s, sigma):
            return v
    return None


def table2_rows(prior_sizes: Sequence[int] = (10, 100), sigmas: Sequence[float] = DEFAULT_SIGMAS, *,
                samples: int = 100_000, seed: int = 0, progress: bool = False) -> list[dict[str, Any]]:
    """The three advantage bounds for every (prior size, sigma).

    Args:
      prior_sizes: uniform prior sizes n >= 2, distinct (default the paper's 10 and 100).
      sigmas: noise multipliers > 0, distinct (default 0.5 ... 3).
      samples: Monte Carlo draws per cell for the "(MC)" row, in [2, 10^9] (default 10^5, the paper's).
      seed: seed >= 0 of the Monte Carlo row (the same for every cell: common random numbers).
      progress: one line per prior size on stderr.

    Returns:
      One dict per (prior size, sigma, method) with the keys of ``CSV_FIELDS``.

    Raises:
      ValueError, TypeError: an argument is out of range or of the wrong type.
    """
    from rerokit.bounds.conversions import advantage
    from rerokit.bounds.dpsgd import rero_dpsgd
    from rerokit.bounds.fano import fano_advantage_gaussian
    from rerokit.bounds.fano_mc import fano_advantage_simplex_mc

    ns = sweep_values("prior_sizes", prior_sizes, check_prior_size)
    ss = sweep_values("sigmas", sigmas, check_positive)
    m = check_int("samples", samples, minimum=2, maximum=10**9)
    sd = check_int("seed", seed, minimum=0)
    rows: list[dict[str, Any]] = []
    for n in ns:
        for s in ss:
            g = fano_advantage_gaussian(s, n, math.sqrt(2.0))
            rows.append({"prior_size": n, "noise_multiplier": s, "method": METHODS["guo"], "advantage": g.value,
                         "mutual_information": g.extras["mutual_information_bound"], "paper": _paper(n, "guo", s),
                         "direction": "upper"})
            mc = fano_advantage_simplex_mc(s, n, samples=m, seed=sd)
            rows.append({"prior_size": n, "noise_multiplier": s, "method": METHODS["guo_mc"], "advantage": mc.value,
                         "ci_low": mc.interval[0], "ci_high": mc.interval[1], "se": mc.extras["se"],
                         "mutual_information": mc.extras["mutual_information"],
                         "mutual_information_se": mc.extras["mutual_information_se"], "paper": _paper(n, "guo_mc", s),
                         "direction": "estimate", "samples": m, "seed": sd})
            b = rero_dpsgd(s, 1.0, 1, prior=n, comparisons=False)
            rows.append({"prior_size": n, "noise_multiplier": s, "method": METHODS["ours"],
                         "advantage": advantage(b.value, 1.0 / n), "ci_low": advantage(b.interval[0], 1.0 / n),
                         "ci_high": advantage(b.value, 1.0 / n), "paper": _paper(n, "ours", s), "direction": "upper"})
        if progress:
            print(f"hayes-table2: prior size {n} done", file=sys.stderr, flush=True)
    return rows


def _plot(path: Path, rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    sizes = sorted({r["prior_size"] for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.8 * len(sizes), 3.8), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        for key, style in (("guo", "s--"), ("guo_mc", "o-"), ("ours", "^-")):
            rs = sorted((r for r in rows if r["prior_size"] == n and r["method"] == METHODS[key]),
                        key=lambda r: r["noise_multiplier"])
            xs = [r["noise_multiplier"] for r in rs]
            ys = [r["advantage"] for r in rs]
            if key == "guo_mc":
                err = [[y - r["ci_low"] for y, r in zip(ys, rs)], [r["ci_high"] - y for y, r in zip(ys, rs)]]
                ax.errorbar(xs, ys, yerr=err, fmt=style, ms=4, capsize=2, label=METHODS[key] + ", 95% CI")
            else:
                ax.plot(xs, ys, style, ms=4, label=METHODS[key])
            paper = [(r["noise_multiplier"], r["paper"]) for r in rs if r["paper"] is not None]
            if paper:
                ax.plot(*zip(*paper), "x", color="k", ms=5, label="_nolegend_" if key != "ours" else "paper (Table 2)")
        ax.set_xlabel("noise multiplier σ (q = 1, T = 1)")
        ax.set_ylabel("advantage upper bound")
        ax.set_title(f"uniform prior of size {n}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Hayes et al. 2023 Table 2 / Fig. 11: Fano bounds vs the exact bound", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def table2(out_dir: str | Path, *, prior_sizes: Sequence[int] = (10, 100), sigmas: Sequence[float] = DEFAULT_SIGMAS,
           samples: int = 100_000, seed: int = 0, progress: bool = False) -> dict[str, Any]:
    """Table 2 / Fig. 11 into ``out_dir``: ``hayes_table2.csv`` and ``hayes_table2.png``.

    Args:
      out_dir: output folder (created).
      prior_sizes, sigmas, samples, seed, progress: as in :func:`table2_rows`.

    Returns:
      ``{"png": path, "csv": path, "rows": rows, "seed": seed, "samples": samples}``.

    Raises:
      ValueError, TypeError: as :func:`table2_rows` and for an unusable ``out_dir``.
    """
    out = output_dir(out_dir)
    rows = table2_rows(prior_sizes, sigmas, samples=samples, seed=seed, progress=progress)
    write_csv(out / "hayes_table2.csv", rows, CSV_FIELDS)
    _plot(out / "hayes_table2.png", rows)
    return {"png": str(out / "hayes_table2.png"), "csv": str(out / "hayes_table2.csv"), "rows": rows,
            "seed": seed, "samples": samples}
