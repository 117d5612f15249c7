"""Guo et al. 2022, Fig. 2: the histogram of per-sample dFIL MSE bounds against the RDP bound.

Guo, Karrer, Chaudhuri, van der Maaten (ICML 2022), "Bounding Training Data Reconstruction in
Private (Deep) Learning", Sec. 7.1: binary logistic regression (digits 0 vs 1 here, MNIST 0 vs 1
in the paper) with L2 penalty lam, solved to optimality and released with output perturbation
theta* + N(0, noise_std^2 I). Per training sample, Thm 2 (unbiased attacks) gives
MSE >= 1/dFIL with dFIL = Tr(I_h(x))/d, and its spectral form MSE >= 1/eta^2 with
eta^2 = ||I_h(x)||_2 (:mod:`rerokit.training.fil_spectral`); the whole release is (2, eps)-RDP
and Thm 1 gives one bound for every sample, diam^2/4/(e^eps - 1) with diam = 1 (pixels in [0, 1]).
MSE = 1 is the "perfect privacy" line of the paper's figure (a blind guess in [0, 1]^d does as well).

Outputs ``guo_dfil_hist.csv`` (one row per sample) and ``guo_dfil_hist.png`` in ``out_dir``. No
training loop beyond one convex fit: nothing to resume.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rerokit._validate import check_int
from rerokit.experiments._outputs import output_dir, pyplot, write_csv

__all__ = ["FIL_LEAK_NOTE", "GuoDfilHistConfig", "run_guo_dfil_hist"]

FIL_LEAK_NOTE = (
    "per-sample FIL (dFIL, eta^2) and its MSE bound are computed from the record itself and can leak information "
    "about it (Guo et al. 2022, Sec. 5, footnote 2: FIL should be kept secret): do not publish per-record values"
)
"""The warning printed wherever per-sample dFIL is printed (JSON ``note`` and a line of human output)."""


@dataclass(frozen=True)
class GuoDfilHistConfig:
    """Settings of the Fig. 2 experiment.

    Attributes:
      dataset: a name of :func:`rerokit.data.load_dataset` (default the bundled digits).
      classes: the two labels of the binary problem (the second is class 1).
      lam: L2 penalty lambda > 0 of (1/n) sum_i l_i + (lam/2) ||theta||^2 (paper: 1e-2).
      noise_std: std > 0 of the output perturbation (paper: 1e-2 with lam = 1e-2 on 12,665 MNIST
        images; on the 360 digits 0/1 the defaults lam = 0.1, noise_std = 0.25 give eps_2 = 1.19
        and an RDP bound of 0.109, the paper's "about 0.1").
      bins: histogram bins, an integer >= 2.
      data_path: the local file or folder of ``dataset`` (MNIST, CIFAR-10), or None.
    """

    dataset: str = "digits"
    classes: tuple[int, int] = (0, 1)
    lam: float = 0.1
    noise_std: float = 0.25
    bins: int = 40
    data_path: str | None = None


def run_guo_dfil_hist(out_dir: str | Path, config: GuoDfilHistConfig = GuoDfilHistConfig(), *, plot: bool = True,
                      device: str = "cpu") -> dict[str, Any]:
    """Run the Fig. 2 experiment; returns the summary (also the CSV/PNG in ``out_dir``).

    Args:
      out_dir: the output folder (created): ``guo_dfil_hist.csv``, ``guo_dfil_hist.png``.
      config: the settings (:class:`GuoDfilHistConfig`).
      plot: write the PNG.
      device: where the Jacobians are computed.

    Returns:
      A JSON-ready dict: n, dim, the RDP epsilon (order 2) and its Thm 1 bound, min/median/max of
      the per-sample dFIL bound 1/dFIL and of the spectral bound 1/eta^2, the fraction of samples
      whose dFIL bound is above the RDP bound and above 1 (perfect privacy), train accuracy,
      ``note`` (:data:`FIL_LEAK_NOTE`), files and settings.

    Raises:
      ValueError: if a setting is out of range (as :func:`rerokit.experiments.fil_glm.fil_glm_setup`).
    """
    import numpy as np

    from rerokit.experiments.fil_glm import fil_glm_setup
    from rerokit.training.fil_spectral import output_perturbation_spectral_fil

    bins = check_int("bins", config.bins, minimum=2)
    out = output_dir(out_dir)
    st = fil_glm_setup(dataset=config.dataset, classes=config.classes, lam=config.lam, noise_std=config.noise_std,
                       data_path=config.data_path, device=device)
    dfil = np.asarray(st["dfil"])
    bound = np.asarray(st["bound"])
    eta2 = output_perturbation_spectral_fil(st["model"], st["X"], st["y"], config.noise_std, device=device)
    with np.errstate(divide="ignore"):
        spectral = np.where(eta2 > 0, 1.0 / np.where(eta2 > 0, eta2, 1.0), np.inf)
    rdp = float(st["rdp_mse_bound"])
    rows = [{"index": i, "label": int(st["y"][i]), "dfil": repr(float(dfil[i])), "mse_lower_bound": repr(float(bound[i])),
             "mse_lower_bound_trinv": repr(float(st["bound_trinv"][i])), "spectral_fil": repr(float(eta2[i])),
             "mse_lower_bound_spectral": repr(float(spectral[i])), "rdp_mse_lower_bound": repr(rdp)}
            for i in range(len(dfil))]
    write_csv(out / "guo_dfil_hist.csv", rows, list(rows[0]))
    if plot:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(6, 4))
        lo = min(float(bound.min()), rdp if rdp > 0 else float(bound.min()), 1.0) / 2
        hi = max(float(bound.max()), 1.0) * 2
        edges = np.logspace(np.log10(lo), np.log10(hi), bins + 1)
        ax.hist(bound, bins=edges, color="tab:red", alpha=0.7, label="per-sample dFIL bound 1/dFIL (Thm 2)")
        if rdp > 0:
            ax.axvline(rdp, color="tab:blue", lw=2, label=f"RDP bound (Thm 1) = {rdp:.3g}")
        ax.axvline(1.0, color="k", ls=":", lw=1, label="perfect privacy (MSE = 1)")
        ax.set_xscale("log")
        ax.set_xlabel("MSE lower bound of unbiased attacks")
        ax.set_ylabel("training samples")
        ax.set_title(f"{config.dataset} {config.classes[0]} vs {config.classes[1]}, output perturbation: "
                     f"lam={config.lam:g}, noise std={config.noise_std:g}, eps2={st['epsilon_rdp2']:.3g}", fontsize=8)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "guo_dfil_hist.png", dpi=120)
        plt.close(fig)
    return {
        "n": int(st["n"]),
        "dim": int(st["dim"]),
        "epsilon_rdp2": float(st["epsilon_rdp2"]),
        "rdp_mse_lower_bound": rdp,
        "dfil_bound_min": float(bound.min()),
        "dfil_bound_median": float(np.median(bound)),
        "dfil_bound_max": float(bound.max()),
        "spectral_bound_min": float(spectral.min()),
        "spectral_bound_median": float(np.median(spectral)),
        "fraction_dfil_bound_above_rdp": float((bound > rdp).mean()),
        "fraction_dfil_bound_above_1": float((bound > 1.0).mean()),
        "train_accuracy": float(st["train_accuracy"]),
        "note": FIL_LEAK_NOTE,
        "files": {"csv": str(out / "guo_dfil_hist.csv"), "png": str(out / "guo_dfil_hist.png") if plot else None},
        "settings": {"experiment": "guo_dfil_hist", **asdict(config), "classes": list(config.classes)},
        "reference": "Guo et al. 2022, Fig. 2, Thm 1-2, Sec. 7.1",
    }
