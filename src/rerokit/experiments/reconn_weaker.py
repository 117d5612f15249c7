"""RecoNN against weaker adversaries (Balle, Cherubin & Hayes 2022, Sec. VI-B, Figs. 7-8), digits.

The RecoNN attack of :mod:`rerokit.attacks.reconn` (known initialisation, shadow models,
reconstructor network, nearest-neighbour oracle) with one weakening per cell:

* **mini-batches** (Fig. 7): released and shadow models are trained by SGD with Poisson
  sampling at rate q = B / (|D-| + 1) (expected batch size B; the paper shuffles into fixed-size
  batches) for ``epochs`` passes, T = epochs * ceil((|D-| + 1) / B) steps, no clipping or noise;
  ``seed="known"``: every model draws its batches from one seed the adversary knows (the paper's
  "known sub-sampling seed"), ``"unknown"``: each released and shadow model its own seed;
* **access** - ``"params"`` (all parameters, the default), ``"last_layer"`` (only the output
  layer's weights and bias: "a subset of layers"), or ``"logits"`` (black box: the model's
  logits on a fixed probe set of 64 pool images, known to the adversary);
* **shadow data** - ``"digits"`` (the shadow pool, as the paper), ``"shifted"`` (every shadow
  target is a pool digit translated by one pixel) or ``"faces"`` (scikit-image's 200 LFW faces,
  resized to 8 x 8, translated by one pixel beyond 200, with uniformly random labels): shadow
  targets from another distribution than the targets (the paper's Fig. 6 / out-of-distribution
  shadow targets).

Per cell: mean reconstruction MSE over the held-out targets, the mean NN-oracle MSE and the
fraction of targets reconstructed better than their oracle (Sec. V-B), and a 2-D PCA of the
released models' features (the paper's Fig. 8 uses t-SNE; PCA here). These are empirical
attack results, not bounds. Each finished cell is one line of a resumable ``TrialLog``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from rerokit._validate import check_choice, check_instance, check_int, check_nonnegative, check_positive
from rerokit.experiments._outputs import output_dir, pyplot, write_csv
from rerokit.training.settings import DPSGDSettings

__all__ = ["ReconnCell", "WeakConfig", "ACCESS", "SHADOW_DATA", "run_weaker_cells", "CSV_FIELDS"]

ACCESS = ("params", "last_layer", "logits")
SHADOW_DATA = ("digits", "shifted", "faces")
CSV_FIELDS = ("batch_size", "seed_knowledge", "access", "shadow_data", "sample_rate", "steps", "mse",
              "nn_oracle_mse", "success_rate", "shadow_models", "targets", "fixed_size", "lr", "seed")


@dataclass(frozen=True)
class ReconnCell:
    """One weakened adversary (see the module docstring).

    Attributes:
        batch_size: expected batch size B >= 1 (>= |D-| + 1: full batch).
        seed: ``"known"`` or ``"unknown"`` batch-sampling seed (irrelevant for full batches).
        access: one of :data:`ACCESS`.
        shadow_data: one of :data:`SHADOW_DATA`.
    """

    batch_size: int
    seed: str = "known"
    access: str = "params"
    shadow_data: str = "digits"

    def __post_init__(self) -> None:
        check_int("batch_size", self.batch_size, minimum=1)
        check_choice("seed", self.seed, ("known", "unknown"))
        check_choice("access", self.access, ACCESS)
        check_choice("shadow_data", self.shadow_data, SHADOW_DATA)


@dataclass(frozen=True)
class WeakConfig:
    """What every cell shares (echoed into the result file's header).

    Attributes:
        fixed_size: |D-|; shadow_models: k; targets: held-out released models.
        epochs: passes over the data; lr, momentum: SGD; hidden: the MLP's hidden widths.
        reconstructor_epochs: epochs of the reconstructor (hidden 512-512, Adam).
        seed: the run's seed (split, shadow targets, initialisation, batch seeds).
    """

    fixed_size: int = 500
    shadow_models: int = 1000
    targets: int = 50
    epochs: int = 20
    lr: float = 0.01
    momentum: float = 0.0
    hidden: tuple[int, ...] = (10,)
    reconstructor_epochs: int = 40
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("fixed_size", self.fixed_size, minimum=1)
        check_int("shadow_models", self.shadow_models, minimum=2)
        check_int("targets", self.targets, minimum=1)
        check_int("epochs", self.epochs, minimum=1)
        check_positive("lr", self.lr)
        if not check_nonnegative("momentum", self.momentum) < 1:
            raise ValueError(f"momentum must be a number in [0, 1), got {self.momentum!r}")
        object.__setattr__(self, "hidden", tuple(check_int("hidden", h, minimum=1) for h in self.hidden))
        check_int("reconstructor_epochs", self.reconstructor_epochs, minimum=1)
        check_int("seed", self.seed, minimum=0)


def _seed(seed: int, tag: int) -> int:
    return int(np.random.SeedSequence([seed, 7, tag]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _train(cfg: WeakConfig, cell: ReconnCell, fm, split, X_t: np.ndarray, y_t: np.ndarray, who: int) -> torch.Tensor:
    """Models A(D- u {z_k}) for the rows of X_t (``who``: 0 shadow, 1 released) under the cell's sampling."""
    from rerokit.training import train_dpsgd_many
    from rerokit.training.engine import trial_seeds

    n = cfg.fixed_size + 1
    q = min(1.0, cell.batch_size / n)
    T = cfg.epochs * math.ceil(n / min(cell.batch_size, n))
    K = X_t.shape[0]
    if q == 1.0 or cell.seed == "known":
        seeds = [_seed(cfg.seed, 1)] * K  # one batch-sampling seed for every model (known to the adversary)
    else:
        seeds = trial_seeds(_seed(cfg.seed, 2 + who), K)
    settings = DPSGDSettings(noise_multiplier=0.0, clip=None, steps=T, lr=cfg.lr, sample_rate=q, momentum=cfg.momentum)
    r = train_dpsgd_many(fm, fm.init_flat(cfg.seed), torch.as_tensor(X_t).reshape(K, 1, -1),
                         torch.as_tensor(y_t, dtype=torch.long).reshape(K, 1), settings, seed=seeds,
                         shared=(torch.as_tensor(split.X_fixed), torch.as_tensor(split.y_fixed, dtype=torch.long)))
    return r.theta.cpu()


def _faces(shape, num_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """scikit-image's LFW subset (200 faces) resized to ``shape`` (C, H, W), flat in [0, 1], random labels."""
    import skimage.data
    from skimage.transform import resize

    faces = skimage.data.lfw_subset()
    c, h, w = (int(v) for v in shape)
    small = np.stack([resize(f, (h, w), anti_aliasing=True) for f in faces]).clip(0.0, 1.0)
    X = np.repeat(small[:, None], c, axis=1).reshape(len(faces), -1).astype(np.float32)
    y = np.random.default_rng([seed, 9]).integers(0, num_classes, len(faces))
    return X, y


def _features(cell: ReconnCell, fm, thetas: torch.Tensor, probe: np.ndarray) -> torch.Tensor:
    """What the adversary sees of each model: all parameters, the output layer's, or logits on ``probe``."""
    if cell.access == "params":
        return thetas
    if cell.access == "logits":
        X = torch.as_tensor(probe)
        with torch.no_grad():
            return torch.stack([fm.logits(t, X).reshape(-1) for t in thetas])
    last = [m for m in fm.module.modules() if isinstance(m, torch.nn.Linear)][-1]
    n_last = last.weight.numel() + (last.bias.numel() if last.bias is not None else 0)
    return thetas[:, -n_last:]  # flat layout follows the module order: the output layer comes last


def _cell(cfg: WeakConfig, cell: ReconnCell, progress: bool) -> dict[str, Any]:
    from rerokit.attacks import reconn as R
    from rerokit.attacks.nn_oracle import nn_oracle
    from rerokit.data import load_dataset

    split = R.split_dataset(load_dataset("digits"), cfg.fixed_size, cfg.targets, cfg.seed)
    fm = R.functional_mlp(split.X_fixed.shape[1], cfg.hidden, split.num_classes, "elu")
    if cell.shadow_data == "digits":
        Xs, ys, n_shift = R.shadow_targets(split.X_pool, split.y_pool, cfg.shadow_models, split.shape, cfg.seed)
    elif cell.shadow_data == "shifted":  # ask for more than the pool holds, keep only the shifted ones
        m = split.X_pool.shape[0]
        Xa, ya, _ = R.shadow_targets(split.X_pool, split.y_pool, m + cfg.shadow_models, split.shape, cfg.seed)
        Xs, ys, n_shift = Xa[m:], ya[m:], cfg.shadow_models
    else:  # faces: every one joins the oracle's pool (none is in D- or the digits' pool)
        F, yF = _faces(split.shape, split.num_classes, cfg.seed)
        Xs, ys, _ = R.shadow_targets(F, yF, cfg.shadow_models, split.shape, cfg.seed)
        n_shift = len(Xs)
    probe = split.X_pool[:64]
    th_s = _train(cfg, cell, fm, split, Xs, ys, 0)
    th_r = _train(cfg, cell, fm, split, split.X_eval, split.y_eval, 1)
    f_s, f_r = _features(cell, fm, th_s, probe), _features(cell, fm, th_r, probe)
    phi = R.train_reconstructor(f_s, torch.as_tensor(Xs), epochs=cfg.reconstructor_epochs, seed=cfg.seed,
                                progress=progress)
    with torch.no_grad():
        rec = phi(f_r).numpy().astype(np.float64)
    Z = split.X_eval.astype(np.float64)
    mse = ((rec - Z) ** 2).mean(1)
    pool = np.concatenate([split.X_fixed, split.X_pool, Xs[len(Xs) - n_shift :]])
    orc = nn_oracle(Z, pool)
    f = f_r.double().numpy()
    f = (f - f.mean(0)) / (f.std(0) + 1e-12)
    u, s, _ = np.linalg.svd(f, full_matrices=False)
    n = cfg.fixed_size + 1
    return {"batch_size": cell.batch_size, "seed_knowledge": cell.seed, "access": cell.access,
            "shadow_data": cell.shadow_data, "sample_rate": min(1.0, cell.batch_size / n),
            "steps": cfg.epochs * math.ceil(n / min(cell.batch_size, n)), "mse": float(mse.mean()),
            "nn_oracle_mse": float(orc.mse.mean()), "success_rate": float((mse < orc.mse).mean()),
            "pca": (u[:, :2] * s[:2]).tolist(), "labels": [int(v) for v in split.y_eval]}


def run_weaker_cells(out_dir: str | Path, cells: Sequence[ReconnCell], cfg: WeakConfig = WeakConfig(), *,
                     name: str = "reconn_weaker", resume: bool = False, progress: bool = True) -> dict[str, Any]:
    """One RecoNN attack per cell (see the module docstring); CSV, PNG and a resumable JSONL.

    Args:
        out_dir: the output folder: ``<name>.csv``, ``<name>.png``, ``<name>.jsonl``.
        cells: the :class:`ReconnCell` s (at least one, distinct).
        cfg: the shared :class:`WeakConfig`.
        name: the files' stem.
        resume: skip the cells already in ``<name>.jsonl`` (same settings).
        progress: progress on stderr.

    Returns:
        ``{"png", "csv", "jsonl", "rows"}``: one row per cell (:data:`CSV_FIELDS`).

    Raises:
        ValueError: if a setting is out of range or the file cannot be resumed (before any training).
    """
    from rerokit.experiments._cells import run_logged_cells
    from rerokit.experiments.records import Int, ListOf, Num, Str

    cells = list(cells)
    if not cells or not all(isinstance(c, ReconnCell) for c in cells):
        raise ValueError("cells must hold at least one ReconnCell")
    if len(set(cells)) != len(cells):
        raise ValueError("cells must be distinct")
    check_instance("cfg", cfg, WeakConfig)
    from rerokit.attacks.reconn import split_dataset
    from rerokit.data import load_dataset

    split_dataset(load_dataset("digits"), cfg.fixed_size, cfg.targets, cfg.seed)  # sizes fit, before training
    out = output_dir(out_dir)
    settings = dict(asdict(cfg), hidden=list(cfg.hidden), cells=[asdict(c) for c in cells])
    schema = {"batch_size": Int(minimum=1), "seed_knowledge": Str, "access": Str, "shadow_data": Str,
              "sample_rate": Num(minimum=0), "steps": Int(minimum=1), "mse": Num(minimum=0),
              "nn_oracle_mse": Num(minimum=0), "success_rate": Num(minimum=0), "pca": ListOf(ListOf(Num())),
              "labels": ListOf(Int(minimum=0))}
    recs = run_logged_cells(str(out / f"{name}.jsonl"), settings, schema, len(cells),
                            lambda i: _cell(cfg, cells[i], progress), resume=resume, progress=progress,
                            describe=lambda i: f"RecoNN cell {i + 1}/{len(cells)}: {cells[i]}")
    rows = [dict(r, shadow_models=cfg.shadow_models, targets=cfg.targets, fixed_size=cfg.fixed_size, lr=cfg.lr,
                 seed=cfg.seed) for r in recs]
    write_csv(out / f"{name}.csv", rows, CSV_FIELDS)
    _plot(out / f"{name}.png", rows)
    return {"png": str(out / f"{name}.png"), "csv": str(out / f"{name}.csv"), "jsonl": str(out / f"{name}.jsonl"),
            "rows": [{k: r[k] for k in CSV_FIELDS} for r in rows]}


def _label(r: dict[str, Any]) -> str:
    return f"B={r['batch_size']} seed {r['seed_knowledge']}\n{r['access']}, shadow {r['shadow_data']}"


def _plot(path: Path, rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    show = rows[:4]
    fig, axes = plt.subplots(1, 1 + len(show), figsize=(4.6 + 3.2 * len(show), 3.6), squeeze=False)
    ax = axes[0][0]
    xs = range(len(rows))
    ax.bar(xs, [r["mse"] for r in rows], color="C0", label="RecoNN MSE")
    ax.plot(xs, [r["nn_oracle_mse"] for r in rows], "k_", ms=20, mew=2, ls="none", label="NN oracle MSE")
    ax.set_xticks(list(xs), [_label(r) for r in rows], fontsize=5, rotation=60)
    ax.set_ylabel("mean reconstruction MSE")
    ax.set_title("RecoNN vs weaker adversaries (digits)", fontsize=8)
    ax.legend(fontsize=6)
    for a, r in zip(axes[0][1:], show):
        p = np.asarray(r["pca"])
        a.scatter(p[:, 0], p[:, 1], c=r["labels"], cmap="tab10", s=8)
        a.set_title("PCA of released models\n" + _label(r).replace("\n", ", "), fontsize=6)
        a.set_xticks([])
        a.set_yticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
