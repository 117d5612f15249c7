"""The analytic attack of Riess et al. 2024 run over many targets (Sec. 3.2-4.1): blocks of targets on any
executor, a resumable per-target log, and the comparison with the paper's laws.

The attack itself (the adversary's layer, one Opacus or vectorised DP-SGD step per target, the
metrics) is :mod:`rerokit.attacks.analytic`; here it runs in blocks of targets with fixed
boundaries through :mod:`rerokit.executors` (``local`` or ``ray``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from rerokit._validate import check_choice, check_int, check_positive
from rerokit.attacks import analytic as A
from rerokit.bounds import uninformed as U
from rerokit.executors import ProgressBar, get_executor, plan_blocks, run_blocks

__all__ = ["run_analytic_attack", "trial_schema"]


def trial_schema() -> dict[str, Any]:
    """Keys and types of one record (one target) that :func:`run_analytic_attack` appends to its
    :class:`~rerokit.experiments.records.TrialLog` (``psnr``/``ssim`` may be inf or absent)."""
    from rerokit.experiments.records import Int, Num

    return {"index": Int(minimum=0), "mse": Num(minimum=0), "ncc": Num(), "variance": Num(minimum=0),
            "clip_factor": Num(minimum=0)}




@dataclass(frozen=True)
class _AnalyticJob:
    """What every block of a run needs: the attack's settings."""

    dim: int
    rows: int
    noise_multiplier: float
    clip: float
    seed: int
    data_range: float
    image_shape: tuple[int, ...] | None
    backend: str


def _analytic_block(job: _AnalyticJob, block) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of the missing targets of one block (its rows and dataset indices are the payload)."""
    X, idx = block.payload
    if job.backend == "opacus":
        res = A.OpacusAnalyticAttack(job.dim, job.rows, job.noise_multiplier, job.clip, seed=job.seed).run(
            X, indices=idx)
    else:
        res = A.vectorized_analytic_attack(X, job.rows, job.noise_multiplier, job.clip, seed=job.seed, indices=idx)
    met = A.reconstruction_metrics(X, res.reconstructions, data_range=job.data_range, image_shape=job.image_shape)
    todo = set(block.todo)
    for j in range(X.shape[0]):
        i = block.lo + j
        if i in todo:
            yield i, {"index": int(idx[j]), **{key: float(v[j]) for key, v in met.items()},
                      "variance": float(res.variances[j]), "clip_factor": float(res.clip_factors[j])}


def run_analytic_attack(
    X: np.ndarray,
    *,
    noise_multiplier: float,
    clip: float,
    rows: int | None = None,
    seed: int = 0,
    data_range: float = 1.0,
    image_shape: Sequence[int] | None = None,
    min_norm: float | None = None,
    mse_threshold: float = 0.01,
    backend: str = "opacus",
    indices: Sequence[int] | None = None,
    log: Any = None,
    chunk: int = 100,
    progress: bool = False,
    executor: Any = "local",
) -> dict[str, Any]:
    """Attack each row of ``X`` with one DP-SGD step (batch size 1) and compare with Riess et al.'s laws.

    ``rows`` defaults to :func:`rerokit.bounds.uninformed.optimal_rows` for ``min_norm`` (the
    dataset's smallest non-zero norm; default: that of ``X``). ``indices`` name the targets (their
    dataset indices; target i's noise comes from ``target_generator(seed, indices[i])``). With a
    :class:`rerokit.experiments.records.TrialLog` as ``log``, one record per target is appended as
    soon as its block is done and targets already in the log are skipped (resume). Targets run in
    blocks of ``chunk`` with fixed boundaries ([b chunk, (b + 1) chunk)) on ``executor``
    (``"local"``, ``"ray"`` or a :class:`rerokit.executors.Executor`); every target draws its own
    noise, so the records do not depend on the executor, the blocks or a resume.

    Args:
        X: the targets, shape (K, N) (or (K, ...), flattened), K >= 1.
        noise_multiplier: sigma > 0.
        clip: clipping norm C > 0 (sigma C <= 1e100).
        rows: M, rows of the adversary's layer (default: optimal for ``min_norm``).
        seed: the run's seed (>= 0).
        data_range: R of the PSNR/SSIM (:func:`rerokit.attacks.analytic.reconstruction_metrics`).
        image_shape: (C, H, W) of one target, for SSIM; None: no SSIM.
        min_norm: r of ``rows`` and of the ReRo bound (default: the smallest non-zero norm in ``X``).
        mse_threshold: eta > 0 of the success event MSE <= eta.
        backend: ``"opacus"`` (:class:`rerokit.attacks.analytic.OpacusAnalyticAttack`) or ``"vmap"``
            (:func:`rerokit.attacks.analytic.vectorized_analytic_attack`); the same records.
        indices: the targets' dataset indices (default 0..K-1).
        log: a :class:`rerokit.experiments.records.TrialLog` of the run (resume), or None.
        chunk: targets per block (>= 1).
        progress: show a progress bar on stderr.
        executor: ``"local"``, ``"ray"`` or a :class:`rerokit.executors.Executor`.

    Returns:
        A JSON-ready dict: ``settings``; ``mean_<metric>``; ``predicted_expected_mse`` (the attack as
        run, mean of v_i, Eq. 17) and ``predicted_expected_mse_optimal`` (mean sigma^2 ||X_i||^2,
        Prop. 2); ``ncc_bound`` (Prop. 6); ``empirical_success`` P(MSE <= eta) with its
        Clopper-Pearson ``empirical_success_ci``; ``predicted_success``
        mean_i Gamma_R(N/2, N eta / (2 v_i)) (Thm 2); ``predicted_gamma``, the ReRo bound of Prop. 3
        for ``min_norm``; ``clipped_fraction``; ``per_target`` metrics (and ``ncc_undefined``, the
        count of NaN NCCs, when there are any).

    Raises:
        ValueError: if ``X`` is empty, a setting is out of range, or ``indices`` has the wrong shape.
    """
    from scipy import special

    from rerokit.stats import clopper_pearson

    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    if len(X) == 0:
        raise ValueError("targets must be >= 1")
    s = check_positive("noise_multiplier", noise_multiplier)
    c = check_positive("clip", clip)
    if s * c > 1e100:
        # beyond this the noise's squares overflow: MSE inf and SSIM NaN instead of numbers
        raise ValueError(f"noise_multiplier * clip must be <= 1e100 (noise std of the gradient), got {s * c:g}")
    check_choice("backend", backend, ("opacus", "vmap"))
    eta = check_positive("mse_threshold", mse_threshold)
    seed = check_int("seed", seed, minimum=0)
    ch = check_int("chunk", chunk, minimum=1)
    r = U.min_nonzero_norm(X) if min_norm is None else check_positive("min_norm", min_norm)
    m = U.optimal_rows(c, r) if rows is None else check_int("rows", rows, minimum=1)
    k, n = X.shape
    idx = np.arange(k) if indices is None else np.asarray(indices, dtype=np.int64)
    if idx.shape != (k,):
        raise ValueError(f"indices must have one entry per target ({k}), got shape {idx.shape}")
    records: dict[int, dict[str, Any]] = {}
    if log is not None:
        records.update({int(t): rec for t, rec in log.trials.items() if int(t) < k})
    ex = get_executor(executor)
    job = _AnalyticJob(n, m, s, c, seed, float(data_range), None if image_shape is None else tuple(image_shape),
                       backend)
    # fixed blocks of ``chunk`` targets; each block carries its rows (and dataset indices)
    blocks = plan_blocks(k, ch, records, payload=lambda lo, hi: (X[lo:hi], idx[lo:hi]))

    def keep(i: int, rec: dict[str, Any]) -> None:
        records[i] = rec
        if log is not None:
            log.append(i, rec)

    try:
        bar = ProgressBar(desc=f"analytic attack ({backend})", unit="it", total=k,
                          initial=k - sum(len(b.todo) for b in blocks), leave=False)
        run_blocks(ex, _analytic_block, job, blocks, keep, progress=bar if progress else None)
        if log is not None:
            log.sort()
    finally:
        if ex is not executor:
            ex.close()
    keys = [key for key in ("mse", "psnr", "ncc", "ssim") if key in records[0]]
    met = {key: np.array([records[i][key] for i in range(k)], dtype=float) for key in keys}
    variances = np.array([records[i]["variance"] for i in range(k)])
    betas = np.array([records[i]["clip_factor"] for i in range(k)])
    norms = np.linalg.norm(X, axis=1)
    hit = met["mse"] <= eta
    lo_ci, hi_ci = clopper_pearson(int(hit.sum()), k, 0.95)
    pred_rate = float(np.mean(special.gammainc(n / 2.0, n * eta / (2.0 * variances))))
    bound = U.mse_rero(eta, s, n, min_norm=r)
    out: dict[str, Any] = {
        "settings": {"noise_multiplier": s, "clip": c, "rows": m, "optimal_rows": U.optimal_rows(c, r), "dim": n,
                     "targets": k, "seed": seed, "backend": backend, "data_range": float(data_range),
                     "min_norm": r, "mse_threshold": eta},
        **{f"mean_{key}": float(np.nanmean(v)) for key, v in met.items()},
        "predicted_expected_mse": float(variances.mean()),
        "predicted_expected_mse_optimal": float(np.mean(s * s * norms**2)),
        "ncc_bound": U.ncc_bound(s, n),
        "empirical_success": float(hit.mean()),
        "empirical_success_ci": [lo_ci, hi_ci],
        "predicted_success": pred_rate,
        "predicted_gamma": bound.value,
        "clipped_fraction": float(np.mean(betas < 1.0)),
        "per_target": {"index": [int(records[i]["index"]) for i in range(k)],
                       **{key: v.tolist() for key, v in met.items()},
                       "variance": variances.tolist(), "clip_factor": betas.tolist()},
    }
    if np.isnan(met["ncc"]).any():
        out["ncc_undefined"] = int(np.isnan(met["ncc"]).sum())
    return out
