"""Guo et al. 2022, Fig. 5 at reduced scale: RDP vs dFIL MSE lower bounds against test accuracy.

Guo, Karrer, Chaudhuri, van der Maaten (ICML 2022), "Bounding Training Data Reconstruction in
Private (Deep) Learning", Sec. 7.3: a tanh network trained with private SGD over a grid of
hyperparameters; per setting, the test accuracy (x-axis) and three MSE lower bounds of unbiased
attacks (y-axis, log): the RDP bound of Thm 1, and the dFIL bound of Thm 2 from the *maximum*
dFIL over the training set (the weakest-protected sample) and from the *median* dFIL. Dashed:
the Pareto frontier (the best bound at each accuracy). MSE = 1 is "perfect privacy" (pixels in
[0, 1]).

Here (reduced scale, CPU): the bundled 8x8 digits split at random into ``train_size`` training
and the rest test images, a tanh MLP 64-``hidden``-10 (or a linear softmax model), and
full-batch DP-GD (q = 1) with GELU clipping (Alg. 1), over the grid noise multiplier sigma x
steps T. Full batch because the RDP side must hold for *replace-one* neighbours (Thm 1 compares
D u {z} with D u {z'}), and dp-accounting has no replace-one RDP for Poisson subsampling; with
q = 1 the replace-one (2, eps)-RDP is exact: the clipped sum has sensitivity 2 * 1.1153 C
(GELU clipping, ||g~|| <= 1.1153 C) and noise std sigma C, so eps_2 = T (2 * 1.1153)^2 / sigma^2
(computed by dp-accounting as T Gaussian mechanisms of noise multiplier sigma / (2 * 1.1153)).
The dFIL side is :func:`rerokit.training.fil.dpsgd_fil` (kappa = 1: every sample is in every
batch), ``repeats`` training runs averaged per cell (default 1; the paper averages 10), with
``coords`` of the d coordinates sampled per sample and step for the trace (Eq. 5; the paper
samples 50 of 784; ``None`` = all, exact). Every cell starts from the same initial network and uses the same seed, so a cell with
fewer steps is a prefix of one with more.

Outputs in ``out_dir``: ``guo_fig5.jsonl`` (one record per cell; ``--resume`` skips finished
cells), ``guo_fig5.csv`` (one row per cell) and ``guo_fig5.png``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from rerokit._validate import check_int, check_positive
from rerokit.experiments._outputs import output_dir, pyplot, write_csv
from rerokit.experiments.records import Int, Num, TrialLog

__all__ = ["GuoFig5Config", "GuoFig5Data", "guo_fig5_setup", "dpgd_replace_one_rdp2", "run_guo_fig5"]

_FIELDS = ("sigma", "steps", "seed", "test_accuracy", "train_accuracy", "epsilon_rdp2", "rdp_mse_lower_bound",
           "dfil_max", "dfil_median", "dfil_mean", "fil_mse_lower_bound_min", "fil_mse_lower_bound_median")


@dataclass(frozen=True)
class GuoFig5Config:
    """Settings of the reduced Fig. 5 grid.

    Attributes:
      sigmas: noise multipliers sigma > 0 of the grid.
      steps: numbers of full-batch steps T >= 1 of the grid.
      clip: clipping norm C > 0 (GELU clipping).
      lr: learning rate > 0 (the step is lr * (clipped sum + noise) / n).
      hidden: hidden widths of the tanh MLP (empty: a linear softmax model).
      train_size: training images (>= 2; the rest of the dataset is the test set).
      coords: coordinates sampled per sample and step for the FIL trace (Eq. 5), >= 1; None: all.
      seed: seed >= 0 of the split, the initial network, the noise and the sampled coordinates.
      repeats: training runs averaged per cell (Monte Carlo of E[sum_t I_t], Thm 3; the paper: 10),
        >= 1; run r uses seed + r, the accuracies are those of the last run.
      dataset: a name of :func:`rerokit.data.load_dataset` (default the bundled digits).
      data_path: the local file or folder of ``dataset`` (MNIST, CIFAR-10), or None.
    """

    sigmas: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    steps: tuple[int, ...] = (10, 30, 100)
    clip: float = 1.0
    lr: float = 4.0
    hidden: tuple[int, ...] = (10,)
    train_size: int = 500
    coords: int | None = 8
    seed: int = 0
    dataset: str = "digits"
    data_path: str | None = None
    repeats: int = 1

    def checked(self) -> "GuoFig5Config":
        """This config with every field validated (tuples of plain numbers).

        Raises:
          ValueError: a field out of range (named); TypeError: a field of the wrong type.
        """
        if len(self.sigmas) == 0 or len(self.steps) == 0:
            raise ValueError("sigmas and steps must each hold at least one value")
        sig = tuple(check_positive(f"sigmas[{i}]", s) for i, s in enumerate(self.sigmas))
        st = tuple(check_int(f"steps[{i}]", t, minimum=1) for i, t in enumerate(self.steps))
        hid = tuple(check_int(f"hidden[{i}]", h, minimum=1) for i, h in enumerate(self.hidden))
        coords = None if self.coords is None else check_int("coords", self.coords, minimum=1)
        return GuoFig5Config(sig, st, check_positive("clip", self.clip), check_positive("lr", self.lr), hid,
                             check_int("train_size", self.train_size, minimum=2), coords,
                             check_int("seed", self.seed, minimum=0), self.dataset, self.data_path,
                             check_int("repeats", self.repeats, minimum=1))


@dataclass(frozen=True)
class GuoFig5Data:
    """The split data and the initial network of a run (float32 tensors on the CPU).

    Attributes:
      X, Y: training images (n, ...) and labels (n,).
      X_test, Y_test: test images and labels.
      module: the initial network (torch's default initialisation seeded with ``seed``).
      dim: d, the data dimension.
    """

    X: Any
    Y: Any
    X_test: Any
    Y_test: Any
    module: Any
    dim: int


def guo_fig5_setup(config: GuoFig5Config) -> GuoFig5Data:
    """The seeded train/test split and initial tanh MLP of :func:`run_guo_fig5`.

    Args:
      config: the settings (:class:`GuoFig5Config`).

    Returns:
      A :class:`GuoFig5Data`.

    Raises:
      ValueError: a setting out of range, or ``train_size`` not below the dataset size.
    """
    import numpy as np
    import torch

    from rerokit.data import load_dataset
    from rerokit.training.models import global_rng, make_mlp

    cfg = config.checked()
    ds = load_dataset(cfg.dataset, cfg.data_path) if cfg.data_path else load_dataset(cfg.dataset)
    X = np.asarray(ds.flat, dtype=np.float32)
    y = np.asarray(ds.y, dtype=np.int64)
    if cfg.train_size >= len(y):
        raise ValueError(f"train_size must be below the {len(y)} images of {cfg.dataset} (the rest is the test set), "
                         f"got {cfg.train_size}")
    perm = np.random.default_rng(cfg.seed).permutation(len(y))
    tr, te = perm[:cfg.train_size], perm[cfg.train_size:]
    # the initialisation of torch.manual_seed(cfg.seed), drawn without reseeding the process's global
    # generator (which a concurrent seeded initialisation would see: rerokit.training.models.GLOBAL_RNG_LOCK)
    with global_rng(cfg.seed):
        module = make_mlp(X.shape[1], list(cfg.hidden), int(ds.num_classes), activation="tanh")
    t = torch.as_tensor
    return GuoFig5Data(t(X[tr]), t(y[tr]), t(X[te]), t(y[te]), module, int(X.shape[1]))


def dpgd_replace_one_rdp2(noise_multiplier: float, steps: int) -> float:
    """(2, eps)-RDP of T full-batch DP-GD steps with GELU clipping, replace-one neighbours.

    The noisy clipped sum sum_z g~(z) + N(0, sigma^2 C^2 I) changes by at most 2 * 1.1153 C when
    one record is replaced (||g~|| <= 1.1153 C, Guo et al. 2022 Sec. 6.2): a Gaussian mechanism of
    noise multiplier sigma / (2 * 1.1153), whose order-2 RDP is T (2 * 1.1153)^2 / sigma^2
    (Mironov 2017, Prop. 7, composed T times). Computed by dp-accounting's RDP accountant.

    Args:
      noise_multiplier: sigma > 0.
      steps: T >= 1.

    Returns:
      eps_2 >= 0.

    Raises:
      ValueError, TypeError: a setting out of range or of the wrong type.
    """
    from rerokit.accounting.events import dpsgd_event, rdp_epsilon_order2
    from rerokit.bounds.mse import GELU_CLIP_FACTOR

    s = check_positive("noise_multiplier", noise_multiplier)
    T = check_int("steps", steps, minimum=1)
    eps, _ = rdp_epsilon_order2(dpsgd_event(s / (2 * GELU_CLIP_FACTOR), 1.0, T))
    return float(eps)


@dataclass(frozen=True)
class _Job:
    data: GuoFig5Data
    config: GuoFig5Config
    device: str


def _accuracy(module, params, X, Y) -> float:
    import torch
    from torch.func import functional_call

    with torch.no_grad():
        out = functional_call(module, {k: v.to(X.device) for k, v in params.items()}, (X,))
    return float((out.argmax(1) == Y.to(out.device)).float().mean())


def _cells(job: _Job, blk) -> Iterator[tuple[int, dict[str, Any]]]:
    """The grid cells ``blk.todo``: one DP-GD run with FIL accounting each, and its RDP bound."""
    import numpy as np

    from rerokit.bounds.mse import cramer_rao_mse_lower_bound, rdp_mse_lower_bound
    from rerokit.training.fil import FILOptions, dpsgd_fil
    from rerokit.training.settings import DPSGDSettings

    cfg, d = job.config, job.data
    for i in blk.todo:
        si, ti = divmod(i, len(cfg.steps))
        sigma, T = cfg.sigmas[si], cfg.steps[ti]
        res = dpsgd_fil(d.module, d.X, d.Y, DPSGDSettings(noise_multiplier=sigma, clip=cfg.clip, steps=T, lr=cfg.lr),
                        seed=cfg.seed, fil=FILOptions(coords=cfg.coords, repeats=cfg.repeats), device=job.device)
        eps2 = dpgd_replace_one_rdp2(sigma, T)
        dfil = np.asarray(res.dfil)
        fil_b = np.asarray(cramer_rao_mse_lower_bound(dfil))
        yield i, {
            "sigma": sigma, "steps": T, "seed": cfg.seed,
            "test_accuracy": _accuracy(d.module, res.final_params, d.X_test, d.Y_test),
            "train_accuracy": _accuracy(d.module, res.final_params, d.X, d.Y),
            "epsilon_rdp2": eps2, "rdp_mse_lower_bound": rdp_mse_lower_bound(eps2, 1.0).value,
            "dfil_max": float(dfil.max()), "dfil_median": float(np.median(dfil)), "dfil_mean": float(dfil.mean()),
            "fil_mse_lower_bound_min": float(fil_b.min()), "fil_mse_lower_bound_median": float(np.median(fil_b)),
        }


def _pareto(acc, bound):
    """Indices of the Pareto frontier (no other point has both higher accuracy and higher bound),
    by increasing accuracy."""
    import numpy as np

    order = np.argsort(-np.asarray(acc), kind="stable")
    front, best = [], -math.inf
    for j in order:
        if bound[j] > best:
            front.append(int(j))
            best = bound[j]
    return front[::-1]


def _best_private_accuracy(rows, key: str) -> float | None:
    """Highest test accuracy among the cells whose bound ``key`` is >= 1 (perfect privacy)."""
    ok = [r["test_accuracy"] for r in rows if r[key] >= 1.0]
    return max(ok) if ok else None


def run_guo_fig5(out_dir: str | Path, config: GuoFig5Config = GuoFig5Config(), *, resume: bool = False,
                 progress: bool = True, plot: bool = True, executor: Any = "local", device: str = "cpu") -> dict[str, Any]:
    """Run the reduced Fig. 5 grid; returns the summary (also the JSONL/CSV/PNG in ``out_dir``).

    Args:
      out_dir: the output folder (created).
      config: the settings (:class:`GuoFig5Config`).
      resume: continue ``guo_fig5.jsonl`` (same settings) without repeating its cells.
      progress: a progress bar on stderr.
      plot: write ``guo_fig5.png``.
      executor: ``"local"``, ``"ray"`` or a :class:`rerokit.executors.Executor` (one cell per block).
      device: where the networks and Jacobians live.

    Returns:
      A JSON-ready dict: ``cells`` (the CSV rows), ``fraction_fil_max_above_rdp`` (cells whose
      bound from the maximum dFIL exceeds the RDP bound), ``best_accuracy_rdp_private`` /
      ``best_accuracy_fil_private`` (the highest test accuracy whose RDP / max-dFIL bound is still
      >= 1; None if none), ``note``, files and settings.

    Raises:
      ValueError: a setting out of range, an unwritable ``out_dir``, or a log that cannot be resumed.
    """
    from rerokit.executors import ProgressBar, get_executor, plan_blocks, run_blocks
    from rerokit.experiments.guo_dfil import FIL_LEAK_NOTE
    from rerokit.training.devices import resolve_device

    cfg = config.checked()
    resolve_device(device)
    out = output_dir(out_dir)
    data = guo_fig5_setup(cfg)
    settings = {"experiment": "guo_fig5", **asdict(cfg), "sigmas": list(cfg.sigmas), "steps": list(cfg.steps),
                "hidden": list(cfg.hidden), "sample_rate": 1.0, "train_size": cfg.train_size}
    K = len(cfg.sigmas) * len(cfg.steps)
    schema = {k: Num(minimum=0) for k in _FIELDS}
    schema.update(steps=Int(minimum=1), seed=Int(minimum=0))

    def validate(rec: dict[str, Any]) -> str | None:
        si, ti = divmod(int(rec["trial"]), len(cfg.steps))
        if rec["sigma"] != cfg.sigmas[si] or rec["steps"] != cfg.steps[ti] or rec["seed"] != cfg.seed:
            return f"cell {rec['trial']} must be sigma {cfg.sigmas[si]}, steps {cfg.steps[ti]}, seed {cfg.seed}"
        return None

    ex = get_executor(executor)
    log = TrialLog(out / "guo_fig5.jsonl", settings, resume=resume, trials=K, schema=schema, validate=validate)
    try:
        run_blocks(ex, _cells, _Job(data, cfg, device), plan_blocks(K, 1, log.done), log.append,
                   progress=ProgressBar(desc="Fig. 5 grid (DP-GD + FIL)", unit="cell") if progress else None)
        log.sort()
        rows = [{k: log.trials[i][k] for k in _FIELDS} for i in range(K)]
    finally:
        log.close()
        if ex is not executor:
            ex.close()
    write_csv(out / "guo_fig5.csv", rows, _FIELDS)
    if plot:
        _plot(out / "guo_fig5.png", rows, cfg)
    above = [r["fil_mse_lower_bound_min"] > r["rdp_mse_lower_bound"] for r in rows]
    return {
        "cells": rows,
        "fraction_fil_max_above_rdp": sum(above) / len(above),
        "best_accuracy_rdp_private": _best_private_accuracy(rows, "rdp_mse_lower_bound"),
        "best_accuracy_fil_private": _best_private_accuracy(rows, "fil_mse_lower_bound_min"),
        "note": FIL_LEAK_NOTE,
        "files": {"jsonl": str(out / "guo_fig5.jsonl"), "csv": str(out / "guo_fig5.csv"),
                  "png": str(out / "guo_fig5.png") if plot else None},
        "settings": settings,
        "reference": "Guo et al. 2022, Fig. 5, Thm 1-4, Alg. 1",
    }


def _plot(path: Path, rows, cfg: GuoFig5Config) -> None:
    import numpy as np

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    acc = np.array([r["test_accuracy"] for r in rows])
    # the axis starts 1e6 below the smallest dFIL bound (or at 1e-12); RDP bounds below it (they fall
    # exponentially in T / sigma^2) are drawn on the floor as triangles
    floor = max(min(min(r["fil_mse_lower_bound_min"] for r in rows), 1.0) / 1e6, 1e-12)
    for key, color, label in (("rdp_mse_lower_bound", "tab:blue", "RDP (Thm 1)"),
                              ("fil_mse_lower_bound_min", "tab:red", "max dFIL (Thm 2)"),
                              ("fil_mse_lower_bound_median", "tab:orange", "median dFIL (Thm 2)")):
        b = np.array([r[key] for r in rows])
        low = b < floor
        shown = np.maximum(b, floor)
        ax.scatter(acc[~low], shown[~low], s=14, color=color, label=label)
        if low.any():
            ax.scatter(acc[low], shown[low], s=18, color=color, marker="v", label=f"{label} < {floor:.0e}")
        f = _pareto(acc, b)
        ax.plot(acc[f], shown[f], ls="--", color=color, lw=1)
    ax.axhline(1.0, color="k", ls=":", lw=1, label="perfect privacy (MSE = 1)")
    ax.set_yscale("log")
    ax.set_ylim(bottom=floor / 2)
    ax.set_xlabel("test accuracy")
    ax.set_ylabel("MSE lower bound of unbiased attacks")
    ax.set_title(f"{cfg.dataset}, DP-GD (q = 1), tanh MLP {cfg.hidden or 'linear'}: sigma in {list(cfg.sigmas)}, "
                 f"T in {list(cfg.steps)}", fontsize=8)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
