"""Reproduce Fig. 2 of Riess et al. 2024: MSE, PSNR and NCC of the analytic attack against sigma in three
regimes, empirical boxplots over the theoretical laws of the optimal attack.

Regimes (Riess et al. 2024, Fig. 2 caption), with r and R_max the smallest and largest norm of the attacked data:

1. ``clip_at_min_norm``: C = r and M = ``rows`` (every gradient is clipped; optimal);
2. ``clip_sqrt_rows_min_norm``: C = sqrt(M) r and M = ``rows`` (clipped only because M rows add up;
   optimal, exactly at Prop. 1's threshold for the smallest norm);
3. ``clip_above_norms_one_row``: C = 2 R_max (above every norm) and M = 1: nothing is clipped and
   the noise is 'overproportional', variance sigma^2 C^2 instead of sigma^2 ||X||^2.

Data: ``points`` records of dimension ``dim`` from U(0, 1) (seeded; Riess et al. use 100 x 4, M = 100) and
``digits_targets`` records of the embedded digits. Each cell (dataset, regime, sigma) attacks
every record once (one DP-SGD step of batch size 1; the torch.func path, shown equal to the Opacus
loop in tests, or the Opacus loop with ``backend="opacus"``).

The MSE / PSNR panels colour the exact density of the optimal attack's metric for a target drawn
uniformly from the data, i.e. the mixture over records of Thm 2's (sigma^2 ||X||^2 / N) chi^2_N
(and its PSNR transform with data range 1), normalised per sigma; the NCC panel draws Prop. 6's bound
sqrt(1 / (1 + sigma^2 N)). Writes ``uninformed_fig2.png``, ``uninformed_fig2.csv`` (one row per
attacked record and cell) and ``uninformed_fig2_summary.csv`` (per cell: the plotted theoretical
numbers and the empirical means), and appends each finished cell to ``uninformed_fig2.jsonl``
(resumable).
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from rerokit._validate import check_choice, check_int, check_positive
from rerokit.bounds import uninformed as U
from rerokit.experiments._outputs import output_dir, pyplot, write_csv

__all__ = ["REGIMES", "DEFAULT_SIGMAS", "regime_settings", "run_uninformed_fig2"]

REGIMES = ("clip_at_min_norm", "clip_sqrt_rows_min_norm", "clip_above_norms_one_row")
DEFAULT_SIGMAS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
_DATA_RANGE = 1.0


def regime_settings(regime: str, min_norm: float, max_norm: float, rows: int) -> tuple[float, int]:
    """(C, M) of a Fig. 2 regime (see the module docstring).

    Args:
        regime: a name of :data:`REGIMES`.
        min_norm: r, the smallest norm of the attacked data (> 0).
        max_norm: R_max, the largest norm (> 0).
        rows: M of the first two regimes (>= 1).

    Returns:
        ``(C, M)``: (r, rows), (sqrt(rows) r, rows) or (2 R_max, 1).
    """
    check_choice("regime", regime, REGIMES)
    r = check_positive("min_norm", min_norm)
    rmax = check_positive("max_norm", max_norm)
    m = check_int("rows", rows, minimum=1)
    if regime == REGIMES[0]:
        return r, m
    if regime == REGIMES[1]:
        return math.sqrt(m) * r, m
    return 2.0 * rmax, 1


def _datasets(names: Sequence[str], points: int, dim: int, digits_targets: int, seed: int) -> dict[str, np.ndarray]:
    from rerokit.data import load_dataset

    out: dict[str, np.ndarray] = {}
    for name in names:
        check_choice("dataset", name, ("synthetic", "digits"))
        if name == "synthetic":
            out[name] = load_dataset("synthetic", n=points, dim=dim, seed=seed).flat.astype(np.float64)
        else:
            ds = load_dataset("digits")
            k = check_int("digits_targets", digits_targets, minimum=1, maximum=ds.n)
            idx = np.sort(np.random.default_rng(seed).choice(ds.n, size=k, replace=False))
            out[name] = ds.flat[idx].astype(np.float64)
    return out


@dataclass(frozen=True)
class _Fig2Job:
    """What every cell needs: the attacked data, sigmas, rows, seed, backend and the cell list."""

    data: dict[str, np.ndarray]
    sigmas: tuple[float, ...]
    rows: int
    seed: int
    backend: str
    cells: tuple[tuple[str, int, int], ...]


def _cell_block(job: _Fig2Job, blk) -> Iterator[tuple[int, dict[str, Any]]]:
    """The record of cell ``blk.index`` (dataset, regime, sigma): every record attacked once."""
    from rerokit.attacks import analytic as A

    cid = blk.index
    name, ri, si = job.cells[cid]
    X = job.data[name]
    norms = np.linalg.norm(X, axis=1)
    clip, m = regime_settings(REGIMES[ri], float(norms[norms > 0].min()), float(norms.max()), job.rows)
    cell_seed = job.seed * 1009 + cid  # independent noise per cell
    if job.backend == "vmap":
        res = A.vectorized_analytic_attack(X, m, job.sigmas[si], clip, seed=cell_seed)
    else:
        res = A.OpacusAnalyticAttack(X.shape[1], m, job.sigmas[si], clip, seed=cell_seed).run(X)
    met = A.reconstruction_metrics(X, res.reconstructions, data_range=_DATA_RANGE)
    yield cid, {"dataset": name, "regime": REGIMES[ri], "sigma": job.sigmas[si], "clip": clip, "rows": m,
                "cell_seed": cell_seed, "norm": norms, "mse": met["mse"], "psnr": met["psnr"], "ncc": met["ncc"],
                "variance": res.variances}


def run_uninformed_fig2(
    out_dir: str | os.PathLike,
    *,
    sigmas: Sequence[float] = DEFAULT_SIGMAS, seed: int = 0,
    points: int = 100, dim: int = 4, rows: int = 100, digits_targets: int = 100,
    datasets: Sequence[str] = ("synthetic", "digits"), backend: str = "vmap",
    options: "RunOptions | None" = None,
) -> dict[str, Any]:
    """Run the Fig. 2 experiment and write PNG, CSVs and JSONL into ``out_dir``.

    Args:
        out_dir: the output folder (created).
        sigmas: the noise multipliers on the x-axis, each in (0, 1e100] (at least one).
        seed: the run's seed (>= 0): the synthetic data and every cell's noise.
        points, dim: size and dimension of the synthetic U(0, 1) data (>= 2 each).
        rows: M of the first two regimes (>= 1).
        digits_targets: how many digits are attacked.
        datasets: ``"synthetic"`` and/or ``"digits"`` (at least one).
        backend: ``"vmap"`` or ``"opacus"`` (:mod:`rerokit.attacks.analytic`; the same records).
        options: :class:`rerokit.executors.RunOptions`: ``resume`` continues ``uninformed_fig2.jsonl``
            without repeating its cells, ``progress`` a bar on stderr (default off here), ``executor``
            where the cells run (each cell draws its own noise: the same records with any executor).

    Returns:
        ``{"settings", "paths", "summary"}``: the run's settings, the written files and one summary
        row per cell (dataset, regime, sigma).

    Raises:
        ValueError: if a setting is out of range, ``out_dir`` cannot be written or the log cannot
            be resumed.
    """
    from rerokit.executors import ProgressBar, RunOptions, get_executor, plan_blocks, run_blocks

    opts = RunOptions(progress=False) if options is None else options
    resume, progress, executor = opts.resume, opts.progress, opts.executor
    from rerokit.experiments.records import Int, ListOf, Num, OneOf, TrialLog

    sig = [check_positive("sigmas", s) for s in sigmas]
    if any(s > 1e100 for s in sig):
        # beyond this the noise's squares overflow: MSE inf and NCC/SSIM NaN instead of numbers
        raise ValueError(f"sigmas must be noise multipliers in (0, 1e100], got {max(sig):g}")
    if not sig:
        raise ValueError("sigmas must hold at least one noise multiplier > 0")
    seed = check_int("seed", seed, minimum=0)
    points = check_int("points", points, minimum=2)
    dim = check_int("dim", dim, minimum=2)
    rows = check_int("rows", rows, minimum=1)
    check_choice("backend", backend, ("opacus", "vmap"))
    if not datasets:
        raise ValueError("datasets must name at least one of synthetic, digits")
    data = _datasets(datasets, points, dim, digits_targets, seed)
    out = output_dir(out_dir)
    settings = {"sigmas": sig, "seed": seed, "points": points, "dim": dim, "rows": rows,
                "digits_targets": digits_targets, "datasets": list(datasets), "backend": backend}
    cells = [(d, ri, si) for d in data for ri in range(len(REGIMES)) for si in range(len(sig))]
    sizes = {len(X) for X in data.values()}
    vec = ListOf(Num()) if len(sizes) > 1 else ListOf(Num(), length=sizes.pop())  # one value per record
    schema = {"dataset": OneOf(*data), "regime": OneOf(*REGIMES), "sigma": Num(minimum=0), "clip": Num(minimum=0),
              "rows": Int(minimum=1), "cell_seed": Int(minimum=0), "norm": vec, "mse": vec, "psnr": vec, "ncc": vec,
              "variance": vec}
    ex = get_executor(executor)  # checked before the log is opened
    log = TrialLog(out / "uninformed_fig2.jsonl", settings, resume=resume, trials=len(cells), schema=schema)
    try:
        todo = plan_blocks(len(cells), 1, log.done)  # one cell per item, its noise seeded seed * 1009 + cell
        bar = ProgressBar(desc="uninformed fig2", unit="it", total=len(cells), initial=len(cells) - len(todo),
                          leave=False)
        run_blocks(ex, _cell_block, _Fig2Job(data, tuple(sig), rows, seed, backend, tuple(cells)), todo, log.append,
                   progress=bar if progress else None)
        log.sort()
        recs = [log.trials[c] for c in range(len(cells))]
    finally:
        log.close()
        if ex is not executor:
            ex.close()
    summary = _summaries(recs, data)
    paths = {"png": str(out / "uninformed_fig2.png"), "csv": str(out / "uninformed_fig2.csv"),
             "summary_csv": str(out / "uninformed_fig2_summary.csv"), "jsonl": str(out / "uninformed_fig2.jsonl")}
    _write_csv(paths["csv"], recs)
    write_csv(paths["summary_csv"], summary, list(summary[0]))
    _plot(paths["png"], recs, data, sig, summary)
    return {"settings": settings, "paths": paths, "summary": summary}


def _mse_mixture_pdf(grid: np.ndarray, sigma: float, norms: np.ndarray, n: int) -> np.ndarray:
    from scipy import stats

    scales = sigma**2 * norms[norms > 0] ** 2 / n
    return np.mean([stats.chi2.pdf(grid, df=n, scale=s) for s in scales], axis=0)


def _psnr_mixture_pdf(grid: np.ndarray, sigma: float, norms: np.ndarray, n: int) -> np.ndarray:
    return np.mean([U.psnr_pdf(grid, _DATA_RANGE, sigma, float(v), n) for v in norms[norms > 0]], axis=0)


def _summaries(recs: list[dict[str, Any]], data: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    rows = []
    for rec in recs:
        X = data[rec["dataset"]]
        n = X.shape[1]
        norms = np.asarray(rec["norm"])
        s = rec["sigma"]
        mse = np.asarray(rec["mse"], dtype=float)
        ncc = np.asarray(rec["ncc"], dtype=float)
        v_opt = s * s * norms**2
        rows.append({
            "dataset": rec["dataset"], "regime": rec["regime"], "sigma": s, "clip": rec["clip"], "rows": rec["rows"],
            "targets": int(mse.size),
            "expected_mse_optimal": float(v_opt.mean()),  # Prop. 2, mean over records
            "expected_mse_as_run": float(np.mean(rec["variance"])),  # Eq. 17
            "mse_bound_min_norm": float(s * s * norms[norms > 0].min() ** 2),  # Prop. 3's sigma^2 r^2
            "empirical_mse_mean": float(mse.mean()),
            "empirical_mse_se": float(mse.std(ddof=1) / math.sqrt(mse.size)),
            "empirical_psnr_mean": float(np.mean(rec["psnr"])),
            "ncc_bound": U.ncc_bound(s, n),  # Prop. 6
            "empirical_ncc_mean": float(np.nanmean(ncc)),
            "empirical_ncc_median": float(np.nanmedian(ncc)),
        })
    return rows


def _write_csv(path: str, recs: list[dict[str, Any]]) -> None:
    cols = ["dataset", "regime", "sigma", "clip", "rows", "target", "norm", "mse", "psnr", "ncc",
            "variance_as_run", "variance_optimal"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for rec in recs:
            for i in range(len(rec["mse"])):
                nrm = rec["norm"][i]
                w.writerow([rec["dataset"], rec["regime"], rec["sigma"], rec["clip"], rec["rows"], i, nrm,
                            rec["mse"][i], rec["psnr"][i], rec["ncc"][i], rec["variance"][i],
                            rec["sigma"] ** 2 * nrm**2])


def _plot(path: str, recs: list[dict[str, Any]], data: dict[str, np.ndarray], sig: list[float],
          summary: list[dict[str, Any]]) -> None:
    plt = pyplot()

    names = list(data)
    fig, axes = plt.subplots(3, 3 * len(names), figsize=(5.0 * 3 * len(names), 11), squeeze=False)
    pos = np.arange(len(sig))
    by = {(r["dataset"], r["regime"], r["sigma"]): r for r in recs}
    for di, name in enumerate(names):
        X = data[name]
        n = X.shape[1]
        norms = np.linalg.norm(X, axis=1)
        for ri, regime in enumerate(REGIMES):
            cells = [by[(name, regime, s)] for s in sig]
            ax_m, ax_p, ax_n = axes[ri, 3 * di], axes[ri, 3 * di + 1], axes[ri, 3 * di + 2]
            mse_all = np.concatenate([np.asarray(c["mse"]) for c in cells])
            lo = max(min(mse_all.min(), min(sig) ** 2 * norms.min() ** 2 * 0.05), 1e-300)
            hi = max(mse_all.max(), max(sig) ** 2 * norms.max() ** 2 * 5)
            mgrid = np.geomspace(lo, hi, 300)
            pgrid = np.linspace(10 * np.log10(_DATA_RANGE**2 / hi), 10 * np.log10(_DATA_RANGE**2 / lo), 300)
            dens_m = np.column_stack([_mse_mixture_pdf(mgrid, s, norms, n) * mgrid for s in sig])  # density in log m
            dens_p = np.column_stack([_psnr_mixture_pdf(pgrid, s, norms, n) for s in sig])
            dens_m /= np.maximum(dens_m.max(axis=0, keepdims=True), 1e-300)
            dens_p /= np.maximum(dens_p.max(axis=0, keepdims=True), 1e-300)
            xe = np.append(pos - 0.5, pos[-1] + 0.5)
            ax_m.pcolormesh(xe, _edges(mgrid, log=True), dens_m, cmap="Greys", shading="flat", vmin=0, vmax=1)
            ax_m.set_yscale("log")
            ax_p.pcolormesh(xe, _edges(pgrid, log=False), dens_p, cmap="Greys", shading="flat", vmin=0, vmax=1)
            for ax, key in ((ax_m, "mse"), (ax_p, "psnr"), (ax_n, "ncc")):
                vals = [np.asarray(c[key], dtype=float) for c in cells]
                vals = [v[np.isfinite(v)] for v in vals]
                ax.boxplot(vals, positions=pos, widths=0.5, showmeans=False, manage_ticks=False,
                           boxprops={"color": "tab:green"}, medianprops={"color": "tab:orange"})
                ax.plot(pos, [float(np.mean(v)) if v.size else np.nan for v in vals], "o", color="tab:orange", ms=3)
            ax_n.plot(pos, [U.ncc_bound(s, n) for s in sig], "k--", label="Prop. 6 bound")
            ax_m.plot(pos, [s * s * float(np.mean(norms**2)) for s in sig], "b:", label="E[MSE] optimal (Prop. 2)")
            c0 = cells[0]
            ax_m.set_title(f"{name}: {regime}\nC={c0['clip']:.3g}, M={c0['rows']}  MSE", fontsize=9)
            ax_p.set_title(f"{name}: PSNR (dB, R={_DATA_RANGE:g})", fontsize=9)
            ax_n.set_title(f"{name}: NCC", fontsize=9)
            for ax in (ax_m, ax_p, ax_n):
                ax.set_xticks(pos)
                ax.set_xticklabels([f"{s:g}" for s in sig], fontsize=7)
                ax.set_xlim(-0.5, len(sig) - 0.5)
                if ri == 2:
                    ax.set_xlabel("noise multiplier sigma")
            if ri == 0:
                ax_m.legend(fontsize=7, loc="upper left")
                ax_n.legend(fontsize=7, loc="lower left")
    fig.suptitle("Riess et al. 2024 Fig. 2: analytic attack under DP-SGD; grey: optimal-attack law (Thm 2), boxes: empirical",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _edges(grid: np.ndarray, *, log: bool) -> np.ndarray:
    g = np.log(grid) if log else grid
    mid = (g[1:] + g[:-1]) / 2
    e = np.concatenate([[g[0] - (mid[0] - g[0])], mid, [g[-1] + (g[-1] - mid[-1])]])
    return np.exp(e) if log else e
