"""Hayes, Mahloujifar & Balle (2023), Fig. 15: the ReRo bound over (q, sigma) at a fixed epsilon.

For every epsilon, the noise multiplier sigma of each sampling rate q is calibrated so that
DP-SGD with T steps is (epsilon, delta)-DP (:func:`rerokit.bounds.calibrate.noise_multiplier_for_epsilon`,
certified: the returned sigma's epsilon is <= the target), and the certified ReRo bound gamma
(Hayes et al. 2023, Thm 2 / Cor. 3; :func:`rerokit.bounds.dpsgd.rero_dpsgd`, method "exact") is
computed at (sigma, q, T) for each uniform prior size. The point of the figure: epsilon alone does
not fix reconstruction risk; at epsilon = 32, T = 100, prior 100, gamma ranges from about 0.38 at
q = 0.01 to about 0.99 at q = 0.99 (the paper: "at q = 0.01 the upper bound is 0.4 and at q = 0.99
it is 1").

No randomness and no training: the whole default grid (6 epsilons x 10 rates x 3 priors) takes a
few seconds, so there is nothing to resume; the CSV holds every number plotted.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from rerokit._validate import check_int, check_positive, check_probability
from rerokit.experiments._outputs import output_dir, pyplot, write_csv
from rerokit.experiments._sweeps import check_prior_size, sweep_values

__all__ = ["Fig15Cell", "fig15", "fig15_cells", "DEFAULT_EPSILONS", "DEFAULT_SAMPLE_RATES", "DEFAULT_PRIOR_SIZES"]

DEFAULT_EPSILONS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
DEFAULT_SAMPLE_RATES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.99)
DEFAULT_PRIOR_SIZES = (2, 10, 100)
CSV_FIELDS = ("epsilon", "delta", "sample_rate", "noise_multiplier", "steps", "prior_size", "kappa", "gamma",
              "gamma_lower", "method")


@dataclass(frozen=True)
class Fig15Cell:
    """One cell of Fig. 15.

    Attributes:
      epsilon, delta: the (epsilon, delta)-DP target of the calibration.
      sample_rate: Poisson sampling rate q.
      noise_multiplier: the calibrated sigma (its certified epsilon is <= ``epsilon``).
      steps: T.
      prior_size: n (uniform prior, kappa = 1/n).
      kappa: 1/n.
      gamma: the certified upper bound on reconstruction success at (sigma, q, T, kappa).
      gamma_lower: the lower end of gamma's certified bracket (the exact value lies in between).
      method: "exact" (certified PLD bracket) or "envelope" (outside the exact method's range).
    """

    epsilon: float
    delta: float
    sample_rate: float
    noise_multiplier: float
    steps: int
    prior_size: int
    kappa: float
    gamma: float
    gamma_lower: float
    method: str


def fig15_cells(epsilons: Sequence[float] = DEFAULT_EPSILONS, sample_rates: Sequence[float] = DEFAULT_SAMPLE_RATES,
                prior_sizes: Sequence[int] = DEFAULT_PRIOR_SIZES, *, steps: int = 100, delta: float = 1e-5,
                progress: bool = False) -> list[Fig15Cell]:
    """Every cell of the grid epsilons x sample_rates x prior_sizes (sigma calibrated once per (epsilon, q)).

    Args:
      epsilons: target epsilons > 0, distinct.
      sample_rates: sampling rates q in (0, 1], distinct.
      prior_sizes: uniform prior sizes n >= 2, distinct.
      steps: T >= 1 (default 100, the paper's).
      delta: delta in (0, 1) (default 1e-5, the paper's).
      progress: print one line per epsilon on stderr.

    Returns:
      The cells, ordered by epsilon, then q, then prior size.

    Raises:
      ValueError: an argument is out of range, a list is empty or has repeats, or a target epsilon
        needs a noise multiplier below the meaningful range (see
        :func:`rerokit.bounds.calibrate.noise_multiplier_for_epsilon`).
      TypeError: if a value has the wrong type.
    """
    from rerokit.bounds.calibrate import noise_multiplier_for_epsilon
    from rerokit.bounds.dpsgd import rero_dpsgd

    eps_list = sweep_values("epsilons", epsilons, check_positive)
    qs = sweep_values("sample_rates", sample_rates, check_probability)
    ns = sweep_values("prior_sizes", prior_sizes, check_prior_size)
    T = check_int("steps", steps, minimum=1)
    d = check_probability("delta", delta, high_open=True)
    cells = []
    for i, eps in enumerate(eps_list):
        for q in qs:
            sigma = float(noise_multiplier_for_epsilon(eps, d, q, T))
            for n in ns:
                b = rero_dpsgd(sigma, q, T, prior=n, comparisons=False)
                lower = b.interval[0] if b.interval is not None else 1.0 / n
                cells.append(Fig15Cell(eps, d, q, sigma, T, n, 1.0 / n, float(b.value), float(lower), b.method))
        if progress:
            print(f"hayes-fig15: epsilon {eps:g} done ({i + 1}/{len(eps_list)})", file=sys.stderr, flush=True)
    return cells


def _plot(path: Path, cells: list[Fig15Cell]) -> None:
    plt = pyplot()
    from matplotlib import cm, colors

    sizes = sorted({c.prior_size for c in cells})
    epsilons = sorted({c.epsilon for c in cells})
    norm = colors.Normalize(0.0, 1.0)
    cmap = plt.get_cmap("viridis")
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.6 * len(sizes), 4.2), squeeze=False, sharey=True)
    for ax, n in zip(axes[0], sizes):
        for eps in epsilons:
            row = sorted((c for c in cells if c.prior_size == n and c.epsilon == eps), key=lambda c: c.sample_rate)
            xs = [c.sample_rate for c in row]
            ys = [c.noise_multiplier for c in row]
            ax.plot(xs, ys, color="0.75", lw=0.8, zorder=1)
            ax.scatter(xs, ys, c=[c.gamma for c in row], cmap=cmap, norm=norm, s=42, zorder=2, edgecolors="k",
                       linewidths=0.3)
            ax.annotate(f"ε={eps:g}", (xs[-1], ys[-1]), textcoords="offset points", xytext=(4, 0), fontsize=7,
                        va="center")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("sampling rate q")
        ax.set_title(f"prior size {n}")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("noise multiplier σ (calibrated to ε)")
    fig.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes[0].tolist(), label="ReRo bound γ (certified)")
    t, d = cells[0].steps, cells[0].delta
    fig.suptitle(f"Hayes et al. 2023 Fig. 15: γ over (q, σ) at fixed ε (T = {t}, δ = {d:g})", fontsize=10)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def fig15(out_dir: str | Path, *, epsilons: Sequence[float] = DEFAULT_EPSILONS,
          sample_rates: Sequence[float] = DEFAULT_SAMPLE_RATES, prior_sizes: Sequence[int] = DEFAULT_PRIOR_SIZES,
          steps: int = 100, delta: float = 1e-5, progress: bool = False) -> dict[str, Any]:
    """Fig. 15 into ``out_dir``: ``hayes_fig15.csv`` (one row per cell) and ``hayes_fig15.png``.

    Args:
      out_dir: output folder (created).
      epsilons, sample_rates, prior_sizes, steps, delta, progress: as in :func:`fig15_cells`.

    Returns:
      ``{"png": path, "csv": path, "rows": [cell dicts]}``.

    Raises:
      ValueError, TypeError: as :func:`fig15_cells` and for an unusable ``out_dir``.
    """
    out = output_dir(out_dir)
    cells = fig15_cells(epsilons, sample_rates, prior_sizes, steps=steps, delta=delta, progress=progress)
    rows = [asdict(c) for c in cells]
    write_csv(out / "hayes_fig15.csv", rows, CSV_FIELDS)
    _plot(out / "hayes_fig15.png", cells)
    return {"png": str(out / "hayes_fig15.png"), "csv": str(out / "hayes_fig15.csv"), "rows": rows}
