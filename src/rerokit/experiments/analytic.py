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

from rerokit._validate import check_choice, check_instance, check_int, check_positive
from rerokit.attacks import analytic as A
from rerokit.bounds import uninformed as U
from rerokit.executors import ProgressBar, RunOptions, get_executor, plan_blocks, run_blocks

__all__ = ["AnalyticConfig", "run_analytic_attack", "trial_schema"]

DEFAULT_CHUNK = 100
"""Targets per block of :func:`run_analytic_attack` when ``options.chunk_size`` is None."""


@dataclass(frozen=True)
class AnalyticConfig:
    """Settings of the analytic attack of Riess et al. 2024 run by :func:`run_analytic_attack`:
    one DP-SGD step (batch size 1) per target through the adversary's layer.

    Attributes:
        noise_multiplier: sigma > 0 of the step.
        clip: the clipping norm C > 0 (sigma C <= 1e100, the noise std of the gradient).
        rows: M, rows of the adversary's layer (an integer >= 1); None: optimal for the smallest
            target norm (:func:`rerokit.bounds.uninformed.optimal_rows`).
        mse_threshold: eta > 0 of the success event MSE <= eta (default 0.01).
        backend: ``"opacus"`` (:class:`rerokit.attacks.analytic.OpacusAnalyticAttack`, default) or
            ``"vmap"`` (:func:`rerokit.attacks.analytic.vectorized_analytic_attack`); the same records.
    """

    noise_multiplier: float
    clip: float
    rows: int | None = None
    mse_threshold: float = 0.01
    backend: str = "opacus"

    def __post_init__(self) -> None:
        s = check_positive("noise_multiplier", self.noise_multiplier)
        c = check_positive("clip", self.clip)
        if s * c > 1e100:
            # beyond this the noise's squares overflow: MSE inf and SSIM NaN instead of numbers
            raise ValueError(f"noise_multiplier * clip must be <= 1e100 (noise std of the gradient), got {s * c:g}")
        check_choice("backend", self.backend, ("opacus", "vmap"))
        object.__setattr__(self, "noise_multiplier", s)
        object.__setattr__(self, "clip", c)
        object.__setattr__(self, "mse_threshold", check_positive("mse_threshold", self.mse_threshold))
        if self.rows is not None:
            object.__setattr__(self, "rows", check_int("rows", self.rows, minimum=1))


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
    config: AnalyticConfig,
    *,
    seed: int = 0,
    data_range: float = 1.0,
    image_shape: Sequence[int] | None = None,
    min_norm: float | None = None,
    indices: Sequence[int] | None = None,
    log: Any = None,
    options: RunOptions | None = None,
) -> dict[str, Any]:
    """Attack each row of ``X`` with one DP-SGD step (batch size 1) and compare with Riess et al.'s laws.

    ``config.rows`` defaults to :func:`rerokit.bounds.uninformed.optimal_rows` for ``min_norm``
    (the dataset's smallest non-zero norm; default: that of ``X``). ``indices`` name the targets
    (their dataset indices; target i's noise comes from ``target_generator(seed, indices[i])``).
    With a :class:`rerokit.experiments.records.TrialLog` as ``log``, one record per target is
    appended as soon as its block is done and targets already in the log are skipped (resume).
    Targets run in blocks of ``options.chunk_size`` (default 100) with fixed boundaries
    ([b chunk, (b + 1) chunk)) on ``options.executor`` (``"local"``, ``"ray"`` or a
    :class:`rerokit.executors.Executor`); every target draws its own noise, so the records do not
    depend on the executor, the blocks or a resume.

    Args:
        X: the targets, shape (K, N) (or (K, ...), flattened), K >= 1.
        config: the :class:`AnalyticConfig` (noise_multiplier, clip, rows, mse_threshold, backend).
        seed: the run's seed (>= 0).
        data_range: R of the PSNR/SSIM (:func:`rerokit.attacks.analytic.reconstruction_metrics`).
        image_shape: (C, H, W) of one target, for SSIM; None: no SSIM.
        min_norm: r of ``rows`` and of the ReRo bound (default: the smallest non-zero norm in ``X``).
        indices: the targets' dataset indices (default 0..K-1).
        log: a :class:`rerokit.experiments.records.TrialLog` of the run (resume), or None.
        options: the :class:`rerokit.executors.RunOptions`: ``chunk_size`` targets per block
            (default 100), ``progress`` (a bar on stderr), ``executor``, ``workers``, ``address``;
            default ``RunOptions(progress=False)``. Its ``out``, ``resume`` and ``overwrite`` must be
            left unset (the results file is ``log``) and ``device`` cpu.

    Returns:
        A JSON-ready dict: ``settings``; ``mean_<metric>``; ``predicted_expected_mse`` (the attack as
        run, mean of v_i, Eq. 17) and ``predicted_expected_mse_optimal`` (mean sigma^2 ||X_i||^2,
        Prop. 2); ``ncc_bound`` (Prop. 6); ``empirical_success`` P(MSE <= eta) with its
        Clopper-Pearson ``empirical_success_ci``; ``predicted_success``
        mean_i Gamma_R(N/2, N eta / (2 v_i)) (Thm 2); ``predicted_gamma``, the ReRo bound of Prop. 3
        for ``min_norm``; ``clipped_fraction``; ``per_target`` metrics (and ``ncc_undefined``, the
        count of NaN NCCs, when there are any).

    Raises:
        ValueError: if ``X`` is empty, a setting is out of range, ``indices`` has the wrong shape, or
            ``options`` names a results file or a device.
        TypeError: if ``config`` is not an AnalyticConfig or ``options`` not a RunOptions.
    """
    from scipy import special

    from rerokit.stats import clopper_pearson

    check_instance("config", config, AnalyticConfig)
    opts = check_instance("options", options, RunOptions, lambda: RunOptions(progress=False))
    if opts.out is not None or opts.resume or opts.overwrite:
        raise ValueError("options.out, resume and overwrite are not options of run_analytic_attack: "
                         "pass the results file as log (a TrialLog opened with resume or overwrite)")
    if opts.device != "cpu":
        raise ValueError(f"the analytic attack runs on the CPU: options.device must be cpu, got {opts.device!r}")
    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    if len(X) == 0:
        raise ValueError("targets must be >= 1")
    s, c, eta, backend = config.noise_multiplier, config.clip, config.mse_threshold, config.backend
    seed = check_int("seed", seed, minimum=0)
    ch = opts.block_size(DEFAULT_CHUNK)
    progress, executor = opts.progress, opts.executor
    r = U.min_nonzero_norm(X) if min_norm is None else check_positive("min_norm", min_norm)
    m = U.optimal_rows(c, r) if config.rows is None else config.rows
    k, n = X.shape
    idx = np.arange(k) if indices is None else np.asarray(indices, dtype=np.int64)
    if idx.shape != (k,):
        raise ValueError(f"indices must have one entry per target ({k}), got shape {idx.shape}")
    records: dict[int, dict[str, Any]] = {}
    if log is not None:
        records.update({int(t): rec for t, rec in log.trials.items() if int(t) < k})
    ex = get_executor(executor, workers=opts.workers, address=opts.address)
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
