"""The analytic attack's PSNR, sample NCC and NMI against their attack laws, over sigma, on one digit.

The optimal analytic gradient-inversion attack ("From Mean to Extreme", Cor. 1; run for real on a
batch-size-1 DP-SGD step by :func:`rerokit.attacks.analytic.vectorized_analytic_attack`) is repeated
``repeats`` times on one target of the embedded digits (independent noise per repeat, seeded). Per
noise multiplier sigma the experiment records

* the mean PSNR (data range 1) against its exact attack-law value
  (:func:`rerokit.bounds.uninformed_metrics.expected_psnr`) and the earlier version's Prop. 2
  expression 10 log10(R^2 / E[MSE]) (a lower bound: see that module);
* the mean sample NCC and its 5% / 95% quantiles against the law of the sample NCC (noncentral t,
  :func:`rerokit.bounds.uninformed_metrics.ncc_distribution`) and the value of Riess et al. 2024, Prop. 6;
* the mean NMI (measured from 16 x 16-bin joint histograms; no law), which falls as sigma grows
  (the earlier version's Fig. 4) - towards the NMI of the target with independent noise measured
  the same way (column ``nmi_independent``: about 1.26, not 1, because 64 coordinates fill a
  256-cell histogram sparsely, which biases the plug-in entropies).

The clipping norm is C = ||X|| / 2 with M = 1 row (the gradient ||X|| is clipped: the optimal
regime, per-coordinate variance sigma^2 ||X||^2). Every sigma attacks all repeats at once in a
fraction of a second, so there is nothing to resume. Writes ``uninformed_metrics.csv`` and
``uninformed_metrics.png``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rerokit._validate import check_int, check_positive
from rerokit.experiments._outputs import output_dir, pyplot, write_csv
from rerokit.experiments._sweeps import sweep_values

__all__ = ["run_uninformed_metrics", "DEFAULT_SIGMAS", "CSV_FIELDS"]

DEFAULT_SIGMAS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
_DATA_RANGE = 1.0
_NMI_BINS = 16
CSV_FIELDS = ("sigma", "target_index", "norm", "dim", "repeats", "seed", "psnr_mean", "psnr_se", "expected_psnr",
              "psnr_prop2_expression", "ncc_mean", "ncc_se", "ncc_q05", "ncc_q95", "ncc_law_mean", "ncc_law_q05",
              "ncc_law_q95", "ncc_prop6", "nmi_mean", "nmi_se", "nmi_independent")


def _quantile(law, p: float) -> float:
    """The p-quantile of the NCC law (bisection on its cdf over [-1, 1])."""
    lo, hi = -1.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if law.cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def run_uninformed_metrics(out_dir: str | Path, *, sigmas: Sequence[float] = DEFAULT_SIGMAS, repeats: int = 500,
                           target_index: int = 0, seed: int = 0, progress: bool = False) -> dict[str, Any]:
    """Attack one digit ``repeats`` times per sigma; measured metrics vs attack laws (see the module docstring).

    Args:
      out_dir: output folder (created).
      sigmas: noise multipliers > 0, distinct.
      repeats: attacks per sigma, an integer in [2, 100000] (default 500).
      target_index: which digit (index into the embedded digits), an integer >= 0.
      seed: seed >= 0 of the attack noise (repeat i of sigma j uses the streams of seed * 1009 + j).
      progress: one line per sigma on stderr.

    Returns:
      ``{"png", "csv", "rows", "seed"}``.

    Raises:
      ValueError, TypeError: an argument is out of range or of the wrong type, or ``out_dir`` unusable.
    """
    from rerokit.attacks.analytic import reconstruction_metrics, vectorized_analytic_attack
    from rerokit.bounds.uninformed import ncc_value
    from rerokit.bounds.uninformed_metrics import expected_psnr, ncc_distribution, normalized_mutual_information
    from rerokit.bounds.uninformed_metrics import psnr_of_expected_mse
    from rerokit.data import load_dataset

    ss = sweep_values("sigmas", sigmas, check_positive)
    k = check_int("repeats", repeats, minimum=2, maximum=100_000)
    sd = check_int("seed", seed, minimum=0)
    ds = load_dataset("digits")
    ti = check_int("target_index", target_index, minimum=0, maximum=ds.n - 1)
    out = output_dir(out_dir)
    x = ds.flat[ti].astype(np.float64)
    norm, n, var = float(np.linalg.norm(x)), x.size, float(x.var())
    X = np.repeat(x[None, :], k, axis=0)  # the same target, k independent DP-SGD steps (one stream per row)
    noise = np.random.default_rng(sd).standard_normal((k, n))  # the NMI of x with data independent of it
    nmi_independent = float(np.mean([normalized_mutual_information(x, z, bins=_NMI_BINS) for z in noise]))
    rows = []
    for j, s in enumerate(ss):
        res = vectorized_analytic_attack(X, 1, s, norm / 2.0, seed=sd * 1009 + j)
        met = reconstruction_metrics(X, res.reconstructions, data_range=_DATA_RANGE)
        nmi = np.array([normalized_mutual_information(x, r, bins=_NMI_BINS) for r in res.reconstructions])
        law = ncc_distribution(s, norm, var, n)
        psnr, ncc = met["psnr"], met["ncc"]
        rows.append({
            "sigma": s, "target_index": ti, "norm": norm, "dim": n, "repeats": k, "seed": sd,
            "psnr_mean": float(psnr.mean()), "psnr_se": float(psnr.std(ddof=1) / math.sqrt(k)),
            "expected_psnr": expected_psnr(s, norm, n, _DATA_RANGE),
            "psnr_prop2_expression": psnr_of_expected_mse(s, norm, _DATA_RANGE),
            "ncc_mean": float(ncc.mean()), "ncc_se": float(ncc.std(ddof=1) / math.sqrt(k)),
            "ncc_q05": float(np.quantile(ncc, 0.05)), "ncc_q95": float(np.quantile(ncc, 0.95)),
            "ncc_law_mean": law.mean(), "ncc_law_q05": _quantile(law, 0.05), "ncc_law_q95": _quantile(law, 0.95),
            "ncc_prop6": ncc_value(s, norm, var),
            "nmi_mean": float(nmi.mean()), "nmi_se": float(nmi.std(ddof=1) / math.sqrt(k)),
            "nmi_independent": nmi_independent,
        })
        if progress:
            print(f"uninformed-metrics: sigma {s:g} done ({j + 1}/{len(ss)})", file=sys.stderr, flush=True)
    write_csv(out / "uninformed_metrics.csv", rows, CSV_FIELDS)
    _plot(out / "uninformed_metrics.png", rows)
    return {"png": str(out / "uninformed_metrics.png"), "csv": str(out / "uninformed_metrics.csv"), "rows": rows,
            "seed": sd}


def _plot(path: Path, rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    s = [r["sigma"] for r in rows]
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    ax[0].errorbar(s, [r["psnr_mean"] for r in rows], yerr=[1.96 * r["psnr_se"] for r in rows], fmt="o", ms=4,
                   capsize=2, label="attack, mean (95% CI)")
    ax[0].plot(s, [r["expected_psnr"] for r in rows], "-", label="E[PSNR], attack law")
    ax[0].plot(s, [r["psnr_prop2_expression"] for r in rows], "--", label="10 log10(R²/E[MSE]) (a lower bound)")
    ax[0].set_ylabel("PSNR (dB, R = 1)")
    ax[1].fill_between(s, [r["ncc_law_q05"] for r in rows], [r["ncc_law_q95"] for r in rows], alpha=0.25,
                       label="attack law, 5-95%")
    ax[1].plot(s, [r["ncc_law_mean"] for r in rows], "-", label="attack law, mean")
    ax[1].errorbar(s, [r["ncc_mean"] for r in rows],
                   yerr=[[r["ncc_mean"] - r["ncc_q05"] for r in rows], [r["ncc_q95"] - r["ncc_mean"] for r in rows]],
                   fmt="o", ms=4, capsize=2, label="attack, mean and 5-95%")
    ax[1].plot(s, [r["ncc_prop6"] for r in rows], ":", label="Riess et al. 2024 Prop. 6")
    ax[1].set_ylabel("sample NCC")
    ax[2].errorbar(s, [r["nmi_mean"] for r in rows], yerr=[1.96 * r["nmi_se"] for r in rows], fmt="o-", ms=4,
                   capsize=2, label=f"attack, mean NMI ({_NMI_BINS} bins)")
    ax[2].axhline(rows[0]["nmi_independent"], ls=":", color="k", label="target vs independent noise")
    ax[2].set_ylabel("NMI (1 = independent, 2 = identical)")
    for a in ax:
        a.set_xscale("log")
        a.set_xlabel("noise multiplier σ")
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    r0 = rows[0]
    fig.suptitle(f"Analytic attack on digit #{r0['target_index']} (N = {r0['dim']}, {r0['repeats']} attacks per σ, "
                 f"seed {r0['seed']}): measured metrics vs attack laws", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
