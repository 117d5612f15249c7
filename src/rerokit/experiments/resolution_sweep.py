"""Resolution sweep of the uninformed analytic attack on bundled scikit-image photographs.

"Bounding Reconstruction Attack Success of Adversaries Without Data Priors", Fig. 3 (one image
resampled to several resolutions; MSE, PSNR, NCC against sigma) and "From Mean to Extreme: Formal
DP Bounds on the Success of Real-World Data Reconstruction Attacks", Figs. 3-5 (CDF of the MSE and
survival function of the PSNR as sigma, N and ||X|| vary; the MSE's scale dependence).

The optimal unbiased attack of the latter paper (a linear layer with M >= C / ||X|| rows and loss
1^T W X, Prop. 1 / Cor. 1; C <= M ||X||) reconstructs X-hat ~ N(X, sigma^2 ||X||^2 I) (Eq. 20).
Instead of building the M x N layer and running DP-SGD, this module samples that law directly:
``samples`` draws X-hat = X + sigma ||X|| xi, xi ~ N(0, I_N), per (image, resolution, sigma), and
measures MSE, PSNR (data range 1), NCC and the normalised mutual information (NMI, scikit-image;
measured only, no law). Next to them: the exact law of the MSE, (sigma^2 ||X||^2 / N) chi^2_N
(Thm 2: its mean sigma^2 ||X||^2 and quantiles), the PSNR at the law's median MSE, the NCC's
value sqrt(1 / (1 + sigma^2 ||X||^2 / Var(x))) and its bound sqrt(1 / (1 + sigma^2 N)) (Prop. 6).

Everything here is the **attack law** - the exact distribution of the metrics of that one optimal
unbiased attack - not a certified bound for every attacker (a biased estimator, e.g. shrinkage,
does better; see the project's notes). Images: ``camera`` (grey, 512 x 512) and ``astronaut``
(RGB, 512 x 512) from ``skimage.data``, resized with anti-aliasing to r x r, values in [0, 1].
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rerokit._validate import check_choice, check_int, check_positive
from rerokit.experiments._outputs import output_dir, pyplot, write_csv

__all__ = ["IMAGES", "load_image", "sweep_cell", "run_resolution_sweep", "CSV_FIELDS", "KIND"]

IMAGES = ("camera", "astronaut")
KIND = "attack law (exact law of the optimal unbiased attack; not a certified bound)"
CSV_FIELDS = ("image", "resolution", "dim", "norm", "var_x", "sigma", "samples", "seed", "mse_mean", "mse_law_mean",
              "mse_q05", "mse_law_q05", "mse_q95", "mse_law_q95", "psnr_median", "psnr_law_median", "ncc_mean",
              "ncc_law", "ncc_bound", "nmi_mean", "kind")


@functools.lru_cache(maxsize=4)
def _raw(name: str) -> np.ndarray:
    """``skimage.data.<name>()`` as (H, W, C) float64 in [0, 1] (read once per process)."""
    import skimage.data

    img = getattr(skimage.data, name)().astype(np.float64) / 255.0
    return img[:, :, None] if img.ndim == 2 else img


def load_image(name: str, resolution: int) -> np.ndarray:
    """``skimage.data.<name>()`` resized (anti-aliased) to ``resolution`` x ``resolution``, (C, r, r) in [0, 1].

    Args:
        name: ``"camera"`` or ``"astronaut"``.
        resolution: r >= 2.

    Returns:
        float64 array of shape (1, r, r) or (3, r, r).
    """
    from skimage.transform import resize

    check_choice("image", name, IMAGES)
    r = check_int("resolution", resolution, minimum=2, maximum=512)
    img = _raw(name)
    out = resize(img, (r, r, img.shape[2]), anti_aliasing=True)
    return np.clip(out, 0.0, 1.0).transpose(2, 0, 1)


def sweep_cell(x: np.ndarray, sigma: float, samples: int, rng: np.random.Generator, *, nmi_samples: int = 20
               ) -> dict[str, float]:
    """One (image, sigma) cell: sampled metrics of X-hat ~ N(X, sigma^2 ||X||^2 I) and the attack law.

    Args:
        x: the image, any shape (flattened to N values in [0, 1]).
        sigma: the noise multiplier > 0.
        samples: draws of X-hat (>= 2).
        rng: the generator of the draws.
        nmi_samples: draws whose NMI is measured (the slowest metric), at most ``samples``.

    Returns:
        The cell's numbers (the keys of :data:`CSV_FIELDS` from ``dim`` to ``nmi_mean``).
    """
    from skimage.metrics import normalized_mutual_information

    from rerokit.attacks.analytic import reconstruction_metrics
    from rerokit.bounds import uninformed as U

    s = check_positive("sigma", sigma)
    k = check_int("samples", samples, minimum=2)
    X = np.asarray(x, dtype=np.float64).reshape(-1)
    N = X.size
    norm = float(np.linalg.norm(X))
    var_x = float(X.var())
    X_hat = X + s * norm * rng.standard_normal((k, N))
    m = reconstruction_metrics(np.broadcast_to(X, (k, N)), X_hat, data_range=1.0)
    q05, q50, q95 = (float(v) for v in U.mse_quantile(np.array([0.05, 0.5, 0.95]), s, norm, N))
    nmi = [normalized_mutual_information(X, X_hat[i], bins=64) for i in range(min(nmi_samples, k))]
    return {"dim": N, "norm": norm, "var_x": var_x, "sigma": s, "samples": k,
            "mse_mean": float(m["mse"].mean()), "mse_law_mean": float(U.expected_mse(s, norm)),
            "mse_q05": float(np.quantile(m["mse"], 0.05)), "mse_law_q05": q05,
            "mse_q95": float(np.quantile(m["mse"], 0.95)), "mse_law_q95": q95,
            "psnr_median": float(np.median(m["psnr"])), "psnr_law_median": 10.0 * math.log10(1.0 / q50),
            "ncc_mean": float(np.nanmean(m["ncc"])),
            "ncc_law": float(U.ncc_value(s, norm, var_x)) if var_x > 0 else float("nan"),
            "ncc_bound": float(U.ncc_bound(s, N)), "nmi_mean": float(np.mean(nmi)) if nmi else float("nan")}


def run_resolution_sweep(out_dir: str | Path, *, images: Sequence[str] = IMAGES,
                         resolutions: Sequence[int] = (8, 16, 32, 64, 128),
                         sigmas: Sequence[float] = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1), samples: int = 200,
                         seed: int = 0) -> dict[str, Any]:
    """The sweep over images x resolutions x sigmas; ``resolution_sweep.csv`` and ``.png``.

    Cell (image i, resolution j, sigma l) draws from ``numpy.random.default_rng([seed, i, j, l])``,
    so a cell's numbers do not depend on the other cells.

    Args:
        out_dir: the output folder.
        images: names of :data:`IMAGES` (at least one, distinct).
        resolutions: r values in [2, 512] (at least one, distinct).
        sigmas: noise multipliers > 0 (at least one, distinct).
        samples: draws per cell (>= 2).
        seed: the seed (>= 0; recorded in every row).

    Returns:
        ``{"png", "csv", "rows"}``; every row's ``kind`` says it is the attack law.
    """
    from rerokit._validate import check_distinct

    imgs = [check_choice("images", i, IMAGES) for i in images]
    res = [check_int("resolutions", r, minimum=2, maximum=512) for r in resolutions]
    sig = [check_positive("sigmas", s) for s in sigmas]
    for name, v in (("images", imgs), ("resolutions", res), ("sigmas", sig)):
        if not v:
            raise ValueError(f"{name} must hold at least one value")
        check_distinct(name, v)
    check_int("samples", samples, minimum=2)
    seed = check_int("seed", seed, minimum=0)
    out = output_dir(out_dir)
    rows = []
    for i, name in enumerate(imgs):
        for j, r in enumerate(res):
            x = load_image(name, r)
            for li, s in enumerate(sig):
                cell = sweep_cell(x, s, samples, np.random.default_rng([seed, i, j, li]))
                rows.append(dict(image=name, resolution=r, seed=seed, kind=KIND, **cell))
    write_csv(out / "resolution_sweep.csv", rows, CSV_FIELDS)
    _plot(out / "resolution_sweep.png", rows)
    return {"png": str(out / "resolution_sweep.png"), "csv": str(out / "resolution_sweep.csv"), "rows": rows}


def _plot(path: Path, rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    imgs = list(dict.fromkeys(r["image"] for r in rows))
    panels = (("mse_mean", "mse_law_mean", "MSE", True), ("psnr_median", "psnr_law_median", "PSNR (dB)", False),
              ("ncc_mean", "ncc_law", "NCC", False), ("nmi_mean", None, "NMI (measured)", False))
    fig, axes = plt.subplots(len(imgs), len(panels), figsize=(4 * len(panels), 3.3 * len(imgs)), squeeze=False)
    for a_row, name in zip(axes, imgs):
        sub = [r for r in rows if r["image"] == name]
        for ax, (emp, law, label, logy) in zip(a_row, panels):
            for k, res in enumerate(sorted({r["resolution"] for r in sub})):
                pts = sorted((r for r in sub if r["resolution"] == res), key=lambda r: r["sigma"])
                xs = [r["sigma"] for r in pts]
                ax.plot(xs, [r[emp] for r in pts], "o", color=f"C{k}", ms=3, label=f"{res}x{res} sampled")
                if law:
                    ax.plot(xs, [r[law] for r in pts], "-", color=f"C{k}", lw=1, label=f"{res}x{res} law")
            ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            ax.set_xlabel("sigma")
            ax.set_ylabel(label)
            ax.set_title(f"{name}: {label}", fontsize=8)
        a_row[0].legend(fontsize=5, ncol=2)
    fig.suptitle("Optimal unbiased attack X + N(0, sigma^2 ||X||^2 I): attack law, not a certified bound", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
