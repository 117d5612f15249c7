"""Guo et al. 2022, Fig. 3: GLM attack MSE against the dFIL Cramer-Rao bound, per sample.

Setting (Sec. 7.1-7.2, scaled to the bundled digits): binary logistic regression with intercept,
classes 0 vs 1, objective (1/n) sum_i l_i + (lam/2) ||theta||^2 (intercept penalised, as in the
authors' code) solved to optimality, released with output perturbation
theta* + N(0, noise_std^2 I). For each training sample z = (x, y):

* bound: 1/dFIL(x) with dFIL = Tr(J^T J)/(noise_std^2 d), J = d theta*/dx (Thm 2, unbiased
  attacks; :func:`rerokit.training.fil.output_perturbation_dfil`), and the tighter
  Tr(I^{-1})/d of the same theorem (CSV column ``mse_lower_bound_trinv``);
* attack: Balle et al. Thm 1 against the noisy release, MSE = ||x_hat - x||^2/d averaged over
  ``draws`` noise draws (the paper: 10,000 draws on MNIST, noise_std = 1e-5).

The bound is for unbiased attacks; the GLM attack is a ratio of noisy sums, nearly unbiased
only while the noise is small relative to the target's residual, so (as in the paper's red
points) it can fall below the bound for hard-to-reconstruct samples. Outputs ``fil_glm.png``
(scatter, log-log, y = x line, violations in red) and ``fil_glm.csv`` (the plotted numbers) in
``out_dir``, and ``fil_glm.jsonl`` (per block of draws: per-sample error sums; resumable).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from rerokit._validate import check_int, check_positive
from rerokit.experiments._outputs import output_dir, pyplot
from rerokit.experiments.records import Int, ListOf, Num, TrialLog

__all__ = ["fil_glm_setup", "run_fil_glm"]


def fil_glm_setup(
    *, dataset: str = "digits", classes: Sequence[int] = (0, 1), lam: float = 1e-2, noise_std: float = 1e-4,
    data_path: str | None = None, device: str = "cpu",
) -> dict[str, Any]:
    """Data, fitted model, per-sample dFIL and bound (Jacobians computed on ``device``), and the RDP
    comparison of the setting (Guo et al. 2022, Sec. 7.1: eps_2 of the output perturbation and the
    Thm 1 MSE bound it gives).

    Args:
        dataset: a name of :func:`rerokit.data.load_dataset` (default the bundled digits).
        classes: the two labels of the binary problem (the second is class 1).
        lam: L2 penalty lambda > 0 of the objective (1/n) sum_i l_i + (lam/2) ||theta||^2.
        noise_std: std > 0 of the output perturbation theta* + N(0, noise_std^2 I).
        data_path: the local file or folder of ``dataset`` (MNIST, CIFAR-10), or None.
        device: where the dFIL Jacobians are computed.

    Returns:
        A dict: ``X``, ``y`` (0/1), ``model`` (the fitted GLM), per-sample ``dfil``, ``bound``
        (1/dFIL) and ``bound_trinv`` (Tr(I^{-1})/d), ``n``, ``dim``, ``epsilon_rdp2``,
        ``rdp_mse_bound``, ``lipschitz`` (of the loss in theta) and ``train_accuracy``.

    Raises:
        ValueError: if ``lam`` or ``noise_std`` is not > 0, or ``classes`` are not two distinct labels
            of the dataset.
    """
    import numpy as np

    from rerokit.attacks.glm import fit_glm
    from rerokit.bounds.mse import output_perturbation_rdp, rdp_mse_lower_bound
    from rerokit.data import load_dataset
    from rerokit.training.fil import output_perturbation_dfil, output_perturbation_trace_inverse_bound

    lam = check_positive("lam", lam)
    s = check_positive("noise_std", noise_std)
    if len(classes) != 2 or classes[0] == classes[1]:
        raise ValueError(f"classes must be two distinct labels, got {list(classes)}")
    ds = load_dataset(dataset, data_path) if data_path else load_dataset(dataset)
    X = np.asarray(ds.flat, dtype=float)
    y = np.asarray(ds.y)
    present = sorted({int(v) for v in np.unique(y)})
    missing = [c for c in classes if c not in present]
    if missing:  # a label that does not occur would leave a one-class problem
        raise ValueError(f"classes must be labels of dataset {dataset} ({', '.join(map(str, present[:20]))}"
                         f"{', ...' if len(present) > 20 else ''}); got {', '.join(map(str, missing))}")
    keep = (y == classes[0]) | (y == classes[1])
    X, y = X[keep], (y[keep] == classes[1]).astype(int)
    n, d = X.shape
    model = fit_glm(X, y, "logistic", n * lam, penalize_intercept=True)
    dfil = output_perturbation_dfil(model, X, y, s, device=device)
    bound = 1.0 / dfil
    bound_trinv = output_perturbation_trace_inverse_bound(model, X, y, s, device=device)
    # Lipschitz constant of the logistic loss in theta: max ||[1, x]||.
    lip = float(np.sqrt(1.0 + (X**2).sum(1)).max())
    eps2 = output_perturbation_rdp(n, lam, s, 2.0, lipschitz=lip)
    rdp_b = rdp_mse_lower_bound(eps2, 1.0)
    return {
        "X": X, "y": y, "model": model, "dfil": dfil, "bound": bound, "bound_trinv": bound_trinv, "n": n, "dim": d,
        "epsilon_rdp2": eps2, "rdp_mse_bound": rdp_b.value, "lipschitz": lip,
        "train_accuracy": float(((X @ model.theta[0, 1:] + model.theta[0, 0] > 0).astype(int) == y).mean()),
    }


@dataclass(frozen=True)
class _DrawsJob:
    """The fitted model and data every block of draws needs (sent once to each worker)."""

    model: Any
    X: Any
    y: Any
    noise_std: float
    seed: int
    block: int
    draws: int


def _draws_block(job: _DrawsJob, blk) -> Iterator[tuple[int, dict[str, Any]]]:
    """Block ``blk.index`` of draws: per-sample error sums of the GLM attack on ``block`` noisy releases."""
    import numpy as np

    from rerokit.attacks import glm as GLM

    b = blk.index
    n = job.X.shape[0]
    m = min(job.block, job.draws - b * job.block)
    rng = np.random.default_rng([job.seed, b])
    sums = np.zeros(n)
    fails = np.zeros(n, dtype=int)
    for _ in range(m):
        Xh, _ = GLM.glm_reconstruct_all(GLM.output_perturbation(job.model, job.noise_std, rng), job.X, job.y)
        e = np.mean((Xh - job.X) ** 2, axis=1)
        bad = ~np.isfinite(e)
        fails += bad
        sums += np.where(bad, 0.0, e)
    yield b, {"draws": m, "sum_mse": sums.tolist(), "failures": fails.tolist(), "seed": [job.seed, b]}


def run_fil_glm(
    out_dir: str | Path,
    *,
    dataset: str = "digits",
    classes: Sequence[int] = (0, 1),
    lam: float = 1e-2,
    noise_std: float = 1e-4,
    draws: int = 1000,
    seed: int = 0,
    data_path: str | None = None,
    plot: bool = True,
    options: "RunOptions | None" = None,
) -> dict[str, Any]:
    """Run the Fig. 3 experiment; returns the summary (also the CSV/PNG/JSONL in ``out_dir``).

    Summary keys: ``fraction_bound_holds`` (attack MSE >= 1/dFIL, over samples the attack did not
    fail on), ``fraction_bound_holds_below_1`` (same over samples whose bound is <= 1, the
    paper's "left of the perfect privacy line"), ``fraction_trinv_bound_holds`` (against the
    tighter Tr(I^{-1})/d), ``spearman`` (rank correlation of bound and
    attack MSE), the RDP epsilon of the setting and its Thm 1 bound, and the settings.

    Blocks of ``options.chunk_size`` draws (default 100; block b seeded with [seed, b]) run on
    ``options.executor``, the same records whatever the executor.

    Args:
        out_dir: the output folder (created): ``fil_glm.csv``, ``fil_glm.png``, ``fil_glm.jsonl``.
        dataset, classes, lam, noise_std, data_path: as in :func:`fil_glm_setup`.
        draws: noise draws (releases) the attack is averaged over (>= 1).
        seed: the run's seed (>= 0).
        plot: write ``fil_glm.png``.
        options: :class:`rerokit.executors.RunOptions`: ``chunk_size`` draws per block (>= 1, default
            100), ``resume`` continues ``fil_glm.jsonl`` without repeating its blocks, ``progress`` a
            bar on stderr, ``executor`` (``"local"``, ``"ray"`` or an Executor) and ``device`` (as in
            :func:`fil_glm_setup`).

    Returns:
        The summary (JSON-ready dict).

    Raises:
        ValueError: if a setting is out of range (as :func:`fil_glm_setup`), ``out_dir`` cannot be
            written, or the log cannot be resumed.
    """
    import numpy as np

    from rerokit.executors import ProgressBar, RunOptions, get_executor, plan_blocks, run_blocks

    opts = RunOptions() if options is None else options
    block, resume, progress = opts.block_size(100), opts.resume, opts.progress
    executor, device = opts.executor, opts.device
    draws = check_int("draws", draws, minimum=1)
    block = check_int("block", block, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    out = output_dir(out_dir)
    from rerokit.training.devices import resolve_device

    resolve_device(device)
    st = fil_glm_setup(dataset=dataset, classes=classes, lam=lam, noise_std=noise_std, data_path=data_path,
                       device=device)
    X, y, model, n, d = st["X"], st["y"], st["model"], st["n"], st["dim"]
    settings = {
        "experiment": "fil_glm", "dataset": dataset, "classes": list(classes), "lam": lam, "noise_std": noise_std,
        "draws": draws, "block": block, "seed": seed,
    }
    blocks = list(range(math.ceil(draws / block)))
    schema = {"draws": Int(minimum=1), "sum_mse": ListOf(Num(minimum=0), length=n),
              "failures": ListOf(Int(minimum=0), length=n), "seed": ListOf(Int(minimum=0), length=2)}
    ex = get_executor(executor)  # checked before the log is opened
    log = TrialLog(out / "fil_glm.jsonl", settings, resume=resume, trials=len(blocks), schema=schema)
    try:
        todo = plan_blocks(len(blocks), 1, log.done)  # one block of draws per item, seeded [seed, b]
        run_blocks(ex, _draws_block, _DrawsJob(model, X, y, noise_std, seed, block, draws), todo, log.append,
                   progress=ProgressBar(desc="GLM attack draws", unit="block") if progress else None)
        log.sort()
        tot = np.zeros(n)
        cnt = np.zeros(n)
        for b in blocks:
            rec = log.trials[b]
            fails = np.asarray(rec["failures"])
            tot += np.asarray(rec["sum_mse"])
            cnt += rec["draws"] - fails
    finally:
        log.close()
        if ex is not executor:
            ex.close()
    with np.errstate(invalid="ignore", divide="ignore"):
        attack = np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)
    bound = st["bound"]
    ok = np.isfinite(attack)
    holds = attack >= bound
    below1 = ok & (bound <= 1)
    from scipy.stats import spearmanr

    rho = float(spearmanr(bound[ok], attack[ok]).statistic) if ok.sum() > 2 else float("nan")
    with open(out / "fil_glm.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["index", "label", "dfil", "mse_lower_bound", "attack_mse", "bound_holds", "mse_lower_bound_trinv"])
        for i in range(n):
            w.writerow([i, int(y[i]), repr(float(st["dfil"][i])), repr(float(bound[i])), repr(float(attack[i])),
                        int(bool(holds[i])), repr(float(st["bound_trinv"][i]))])
    if plot:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(6, 4.5))
        good = ok & holds
        badp = ok & ~holds
        ax.scatter(bound[good], attack[good], s=8, label="bound holds")
        ax.scatter(bound[badp], attack[badp], s=8, color="indianred", label="bound violated")
        lo = float(np.nanmin([bound[ok].min(), attack[ok].min()])) / 2
        hi = float(np.nanmax([bound[ok].max(), attack[ok].max()])) * 2
        ax.plot([lo, hi], [lo, hi], "k", lw=1, label="MSE = 1/dFIL")
        ax.axvline(1.0, color="k", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("dFIL MSE lower bound 1/dFIL (Thm 2)")
        ax.set_ylabel("GLM attack MSE (Balle et al. Thm 1)")
        ax.set_title(f"{dataset} {classes[0]} vs {classes[1]}: lam={lam:g}, noise std={noise_std:g}, {draws} draws", fontsize=9)
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        fig.savefig(out / "fil_glm.png", dpi=120)
        plt.close(fig)
    return {
        "n": n,
        "dim": d,
        "samples_attack_failed": int((~ok).sum()),
        "fraction_bound_holds": float(holds[ok].mean()) if ok.any() else float("nan"),
        "fraction_bound_holds_below_1": float(holds[below1].mean()) if below1.any() else float("nan"),
        "samples_bound_below_1": int(below1.sum()),
        "spearman": rho,
        "fraction_trinv_bound_holds": float((attack >= st["bound_trinv"])[ok].mean()) if ok.any() else float("nan"),
        "bound_min": float(bound.min()),
        "bound_median": float(np.median(bound)),
        "bound_max": float(bound.max()),
        "attack_mse_median": float(np.nanmedian(attack)),
        "epsilon_rdp2": st["epsilon_rdp2"],
        "rdp_mse_lower_bound": st["rdp_mse_bound"],
        "train_accuracy": st["train_accuracy"],
        "files": {"png": str(out / "fil_glm.png") if plot else None, "csv": str(out / "fil_glm.csv"), "jsonl": str(out / "fil_glm.jsonl")},
        "settings": settings,
    }
