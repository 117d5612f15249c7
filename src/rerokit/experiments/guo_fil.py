"""Guo, Karrer, Chaudhuri & van der Maaten (2022) Figs. 2 and 5 at reduced scale on the digits.

* :func:`guo_fig2` - Fig. 2: the RDP MSE lower bound (Thm 1) of output-perturbed logistic
  regression (digits 0 vs 1) next to the histogram of the per-sample Cramer-Rao bounds of
  Thm 2 from the diagonal FIL (1 / dFIL) and from the spectral-norm FIL (1 / eta^2, the weaker
  worst-direction variant, :mod:`rerokit.training.fil_spectral`).
* :func:`guo_fig5` - Fig. 5: for each DP-SGD hyperparameter setting of a small grid (noise
  multiplier x steps at a fixed sampling rate; MLP 64-h-10 tanh, GELU clipping, Alg. 1), the test
  accuracy against the RDP bound (Thm 1 with the (2, eps)-RDP of the subsampled Gaussian as the
  paper accounts it: add/remove, sensitivity 1.1153 C of a GELU-clipped gradient; :func:`rdp_bound`),
  the bound at the largest per-sample dFIL and at the median dFIL (Thm 2, FIL accounting with
  Thms 3-4, subsampling by convexity, kappa = 1: always valid, looser than the paper's Eq. 3). One line per finished setting in a resumable ``TrialLog``.

All bounds are lower bounds on the MSE of *unbiased* attacks over [0, 1]^64 (diameter 1 per
pixel); MSE = 1 is the paper's "perfect privacy" line. The per-sample values are the paper's
quantities, and publishing them can itself leak (:data:`rerokit.training.fil_spectral.DFIL_WARNING`,
printed with every output that contains them).
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rerokit._validate import check_int, check_positive, check_probability
from rerokit.experiments._outputs import output_dir, pyplot, write_csv
from rerokit.training.fil_spectral import DFIL_WARNING

__all__ = ["GuoGrid", "guo_fig2", "guo_fig5", "rdp_bound", "FIG5_FIELDS", "DFIL_WARNING"]

FIG5_FIELDS = ("noise_multiplier", "steps", "sample_rate", "clip", "lr", "test_accuracy", "epsilon_rdp2",
               "rdp_mse_bound", "max_dfil_mse_bound", "median_dfil_mse_bound", "seed")


def _warn(progress: bool) -> None:
    if progress:
        print(f"warning: {DFIL_WARNING}", file=sys.stderr, flush=True)


def guo_fig2(out_dir: str | Path, *, lam: float = 1e-2, noise_std: float = 1e-2, progress: bool = True
             ) -> dict[str, Any]:
    """Fig. 2: RDP bound vs per-sample dFIL and spectral-FIL bounds, output-perturbed logistic regression.

    Args:
        out_dir: the output folder: ``guo_fig2.csv`` (one row per sample) and ``guo_fig2.png``.
        lam: the L2 penalty lambda > 0 (the paper: 1e-2).
        noise_std: the output noise s > 0 (the paper: 1e-2).
        progress: print the FIL warning on stderr.

    Returns:
        ``{"png", "csv", "rdp_mse_bound", "epsilon_rdp2", "dfil_bound_median", "spectral_bound_median",
        "n", "warning"}``.
    """
    from rerokit.experiments.fil_glm import fil_glm_setup
    from rerokit.training.fil_spectral import output_perturbation_fil_spectral

    st = fil_glm_setup(lam=lam, noise_std=noise_std)
    eta2 = output_perturbation_fil_spectral(st["model"], st["X"], st["y"], noise_std)
    spec = 1.0 / eta2
    out = output_dir(out_dir)
    rows = [{"index": i, "label": int(st["y"][i]), "dfil": float(st["dfil"][i]), "dfil_mse_bound": float(st["bound"][i]),
             "fil_spectral": float(eta2[i]), "spectral_mse_bound": float(spec[i])} for i in range(st["n"])]
    write_csv(out / "guo_fig2.csv", rows, ("index", "label", "dfil", "dfil_mse_bound", "fil_spectral",
                                            "spectral_mse_bound"))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    lo = max(1e-12, float(min(spec.min(), st["bound"].min(), st["rdp_mse_bound"] or 1.0)))
    hi = float(max(spec.max(), st["bound"].max(), 1.0))
    bins = np.logspace(np.log10(lo) - 0.1, np.log10(hi) + 0.1, 40)
    ax.hist(st["bound"], bins=bins, alpha=0.6, label="1 / dFIL (Thm 2, diagonal FIL)")
    ax.hist(spec, bins=bins, alpha=0.6, label="1 / eta^2 (Thm 2, spectral FIL)")
    if st["rdp_mse_bound"] > 0:
        ax.axvline(st["rdp_mse_bound"], color="C3", label="RDP bound (Thm 1)")
    else:  # (2, eps)-RDP so large that Thm 1 gives nothing at this n
        ax.text(0.02, 0.95, f"RDP bound (Thm 1): {st['rdp_mse_bound']:.2g} (eps_2 = {st['epsilon_rdp2']:.3g})",
                transform=ax.transAxes, fontsize=7, va="top")
    ax.axvline(1.0, color="k", ls=":", label="perfect privacy (MSE = 1)")
    ax.set_xscale("log")
    ax.set_xlabel("MSE lower bound (unbiased attacks)")
    ax.set_ylabel("training samples")
    ax.set_title(f"Guo et al. Fig. 2 (digits 0 vs 1, lambda={lam:g}, s={noise_std:g})", fontsize=8)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "guo_fig2.png", dpi=120)
    plt.close(fig)
    _warn(progress)
    return {"png": str(out / "guo_fig2.png"), "csv": str(out / "guo_fig2.csv"), "n": st["n"],
            "epsilon_rdp2": float(st["epsilon_rdp2"]), "rdp_mse_bound": float(st["rdp_mse_bound"]),
            "dfil_bound_median": float(np.median(st["bound"])), "spectral_bound_median": float(np.median(spec)),
            "warning": DFIL_WARNING}


@dataclass(frozen=True)
class GuoGrid:
    """The DP-SGD grid of :func:`guo_fig5` (echoed into the result file's header).

    Attributes:
        noise_multipliers: sigmas > 0; steps: step counts T >= 1 (every pair is one setting).
        sample_rate: q in (0, 1]; clip: C > 0; lr: learning rate > 0; hidden: the MLP's hidden width.
        test_size: held-out digits for the test accuracy; seed: split, initialisation, batches, noise.
    """

    noise_multipliers: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    steps: tuple[int, ...] = (50, 200)
    sample_rate: float = 0.05
    clip: float = 1.0
    lr: float = 0.5
    hidden: int = 32
    test_size: int = 500
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multipliers", tuple(check_positive("noise_multipliers", s)
                                                            for s in self.noise_multipliers))
        object.__setattr__(self, "steps", tuple(check_int("steps", t, minimum=1) for t in self.steps))
        if not self.noise_multipliers or not self.steps:
            raise ValueError("noise_multipliers and steps must be non-empty")
        check_probability("sample_rate", self.sample_rate)
        check_positive("clip", self.clip)
        check_positive("lr", self.lr)
        check_int("hidden", self.hidden, minimum=1)
        check_int("test_size", self.test_size, minimum=1, maximum=1700)
        check_int("seed", self.seed, minimum=0)

    def settings(self) -> list[tuple[float, int]]:
        """The (sigma, T) pairs, in order."""
        return [(s, t) for s in self.noise_multipliers for t in self.steps]


def rdp_bound(sigma: float, sample_rate: float, steps: int) -> tuple[float, float]:
    """(eps_2, Thm 1's MSE bound over [0, 1]^d) of DP-SGD with GELU clipping, the paper's RDP accounting.

    The (2, eps)-RDP of the Poisson-subsampled Gaussian (add/remove adjacency, Mironov et al. 2019, as
    Guo et al. Sec. 7.3; dp-accounting) with sensitivity 1.1153 C - the bound on a GELU-clipped
    gradient's norm - under noise sigma C, i.e. noise multiplier sigma / 1.1153.

    Args:
        sigma: the noise multiplier > 0; sample_rate: q in (0, 1]; steps: T >= 1.

    Returns:
        ``(eps_2, bound)`` with bound = 1 / (4 (e^eps_2 - 1)) (unbiased attacks, diameter 1).
    """
    from rerokit.accounting.events import dpsgd_event, rdp_epsilon_order2
    from rerokit.bounds.mse import GELU_CLIP_FACTOR, rdp_mse_lower_bound

    eps2, _ = rdp_epsilon_order2(dpsgd_event(sigma / GELU_CLIP_FACTOR, sample_rate, steps))
    return float(eps2), float(rdp_mse_lower_bound(eps2, 1.0).value)


def _setting(grid: GuoGrid, sigma: float, T: int) -> dict[str, Any]:
    import torch

    from rerokit.data import load_dataset
    from rerokit.training.fil import dpsgd_fil
    from rerokit.training.models import make_mlp

    ds = load_dataset("digits")
    perm = np.random.default_rng([grid.seed, 8]).permutation(ds.n)
    te, tr = perm[: grid.test_size], perm[grid.test_size :]
    X = torch.as_tensor(np.asarray(ds.flat), dtype=torch.float32)
    Y = torch.as_tensor(np.asarray(ds.y))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(grid.seed)
        module = make_mlp(X.shape[1], [grid.hidden], int(ds.num_classes), activation="tanh")
    res = dpsgd_fil(module, X[tr], Y[tr], noise_multiplier=sigma, sample_rate=grid.sample_rate, steps=T,
                    clip=grid.clip, lr=grid.lr, seed=grid.seed)
    with torch.no_grad():
        logits = torch.func.functional_call(module, res.final_params, (X[te],))
        acc = float((logits.argmax(-1) == Y[te]).float().mean())
    dfil = res.dfil
    return {"noise_multiplier": sigma, "steps": T, "test_accuracy": acc,
            "max_dfil_mse_bound": float(1.0 / dfil.max()) if dfil.max() > 0 else float("inf"),
            "median_dfil_mse_bound": float(1.0 / np.median(dfil)) if np.median(dfil) > 0 else float("inf")}


def guo_fig5(out_dir: str | Path, grid: GuoGrid = GuoGrid(), *, resume: bool = False, progress: bool = True
             ) -> dict[str, Any]:
    """Fig. 5 at reduced scale: RDP and dFIL MSE bounds against test accuracy over ``grid``.

    Args:
        out_dir: the output folder: ``guo_fig5.csv``, ``guo_fig5.png``, ``guo_fig5.jsonl``.
        grid: the :class:`GuoGrid`.
        resume: skip the settings already in ``guo_fig5.jsonl`` (same grid).
        progress: progress and the FIL warning on stderr.

    Returns:
        ``{"png", "csv", "jsonl", "rows", "warning"}``, one row per (sigma, T) (:data:`FIG5_FIELDS`).
    """
    from rerokit.experiments._cells import run_logged_cells
    from rerokit.experiments.records import Int, Num

    if not isinstance(grid, GuoGrid):
        raise TypeError(f"grid must be a GuoGrid, got {type(grid).__name__}")
    out = output_dir(out_dir)
    pairs = grid.settings()
    schema = {k: Num() for k in ("noise_multiplier", "test_accuracy", "max_dfil_mse_bound", "median_dfil_mse_bound")}
    schema["steps"] = Int(minimum=1)
    settings = dict(asdict(grid), noise_multipliers=list(grid.noise_multipliers), steps=list(grid.steps))
    recs = run_logged_cells(str(out / "guo_fig5.jsonl"), settings, schema, len(pairs),
                            lambda i: _setting(grid, *pairs[i]), resume=resume, progress=progress,
                            describe=lambda i: f"DP-SGD + FIL setting {i + 1}/{len(pairs)}: sigma={pairs[i][0]:g}, "
                            f"T={pairs[i][1]}")
    rows = []
    for r in recs:  # the RDP side is a function of (sigma, q, T): computed here, not stored
        eps2, rdp = rdp_bound(r["noise_multiplier"], grid.sample_rate, r["steps"])
        rows.append(dict({k: r[k] for k in schema}, epsilon_rdp2=eps2, rdp_mse_bound=rdp,
                         sample_rate=grid.sample_rate, clip=grid.clip, lr=grid.lr, seed=grid.seed))
    write_csv(out / "guo_fig5.csv", rows, FIG5_FIELDS)
    _plot_fig5(out / "guo_fig5.png", rows)
    _warn(progress)
    return {"png": str(out / "guo_fig5.png"), "csv": str(out / "guo_fig5.csv"), "jsonl": str(out / "guo_fig5.jsonl"),
            "rows": rows, "warning": DFIL_WARNING}


def _plot_fig5(path: Path, rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    acc = [r["test_accuracy"] for r in rows]
    for key, label, c in (("rdp_mse_bound", "RDP (Thm 1)", "C0"), ("max_dfil_mse_bound", "max dFIL (Thm 2)", "C3"),
                          ("median_dfil_mse_bound", "median dFIL (Thm 2)", "C1")):
        ax.scatter(acc, [max(r[key], 1e-12) for r in rows], color=c, s=14, label=label)
    ax.axhline(1.0, color="k", ls=":", label="perfect privacy (MSE = 1)")
    ax.set_yscale("log")
    ax.set_xlabel("test accuracy")
    ax.set_ylabel("MSE lower bound (unbiased attacks)")
    ax.set_title("Guo et al. Fig. 5 (digits, reduced grid)", fontsize=8)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
