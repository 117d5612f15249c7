"""More Hayes, Mahloujifar & Balle (2023) appendix figures on the digits (PNG + CSV + resumable JSONL).

* :func:`fig3_sizes` - Fig. 3 over prior sizes 2 ... 2^k in one run: prior-aware (Alg. 2) success
  vs the ReRo bound gamma (Thm 2) for every prior size and epsilon (full batch, T = 100, C = 0.1).
  A data prior holds distinct digits, so N + |D-| <= 1797 (|D-| is lowered to 1797 - N where
  needed; 2^11 does not fit); a noise prior takes any N.
* :func:`fig9` - the same audit with a prior of digits and with a prior of uniform noise images
  of the same intra-sample distance statistics (App. E, Fig. 9).
* :func:`fig13` - average gradient norm over all training points and steps, and Alg. 2's
  success, at C = 0.1 and C = 1 (App. L.1, Fig. 13).
* :func:`fig12` - gradient-based attack (Eq. 1, from uniform noise, no prior) judged a success
  when at least a fraction rho of the pixels is within tau = 32/255 of the target, against the
  bound gamma at the uniform-pixel prior's kappa (App. I, Fig. 12). That bound is for targets
  drawn from the uniform-pixel prior; digits are not (most pixels are 0), so the CSV also gives
  ``zero_guess_success``: how often the all-zero image, which ignores the model, meets the
  criterion on the digits - where it exceeds gamma the uniform prior's kappa is no baseline for
  this data.

All cells use the same ``seed`` (trial i draws the same data in every cell). sigma is
calibrated for (epsilon, delta) with dp-accounting (PLD). Far fewer trials than the paper's 10,000
per point by default; the CSV's 95% intervals say how precise each point is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from rerokit._validate import check_int, check_positive, check_probability
from rerokit.executors import using_executor
from rerokit.experiments._outputs import output_dir, pyplot, write_csv
from rerokit.experiments.audit import AuditConfig
from rerokit.experiments.hayes_cells import PRIORS, CellOptions, check_prior_fits, run_prior_cell, run_tolerance_cell
from rerokit.experiments.hayes_figures import CSV_FIELDS as _BASE_FIELDS, check_run, sigma_for_epsilon, checked_values

__all__ = ["HayesRun", "CSV_FIELDS", "fig3_sizes", "fig9", "fig12", "fig13"]

CSV_FIELDS = _BASE_FIELDS + ("prior", "rho", "log_kappa", "grad_norm", "clipped_grad_norm", "zero_guess_success")


@dataclass(frozen=True)
class HayesRun:
    """Settings shared by every cell of a figure (Hayes et al. 2023 App. A, scaled to the digits).

    Attributes:
        trials: trials per cell (>= 1).
        seed: the seed of every cell (>= 0).
        delta: delta in (0, 1) of the calibration.
        steps: DP-SGD steps T; clip: C (None: the figure's own); lr: learning rate.
        n_known: |D-| (lowered to dataset size - N for a data prior that would not fit).
        resume: continue the cells' JSONL files; progress: progress bars on stderr.
        executor: ``"local"``, ``"ray"`` or a :class:`rerokit.executors.Executor`; device: ``"cpu"``,
            ``"cuda"`` or ``"auto"``.
    """

    trials: int = 100
    seed: int = 0
    delta: float = 1e-5
    steps: int = 100
    clip: float | None = None
    lr: float = 10.0
    n_known: int = 999
    resume: bool = False
    progress: bool = True
    executor: Any = "local"
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_run(self.trials, self.seed, None, self.executor, self.device)
        check_probability("delta", self.delta, high_open=True)
        check_int("steps", self.steps, minimum=1)
        check_int("n_known", self.n_known, minimum=0)
        check_positive("lr", self.lr)
        if self.clip is not None:
            check_positive("clip", self.clip)

    def config(self, prior_size: int, clip: float, prior: str = "data") -> AuditConfig:
        """The cell's :class:`AuditConfig` with sigma 0 (calibrated per cell)."""
        from rerokit.data import load_dataset

        n_known = self.n_known
        if prior == "data":
            n_known = min(n_known, max(0, load_dataset("digits").n - prior_size))
        return AuditConfig(noise_multiplier=0.0, prior_size=prior_size, n_known=n_known, steps=self.steps,
                           clip=self.clip if self.clip is not None else clip, lr=self.lr)


def _row(name: str, x_name: str, x: float, cfg: AuditConfig, key: str, res, run: HayesRun, epsilon: float,
         **extra: Any) -> dict[str, Any]:
    return dict(figure=name, x_name=x_name, x=x, prior_size=cfg.prior_size, attack=key, metric=res.metric,
                value=res.value, ci_low=res.interval[0], ci_high=res.interval[1], kappa=cfg.kappa,
                noise_multiplier=cfg.noise_multiplier, epsilon=epsilon, delta=run.delta,
                sample_rate=cfg.sample_rate, steps=cfg.steps, clip=cfg.clip, trials=res.trials, seed=run.seed,
                **extra)


def _prior_cells(name: str, out: Path, run: HayesRun, cells, x_name: str, options_of, ex) -> list[dict[str, Any]]:
    """One prior-aware cell per ``(x, epsilon, cfg, prior, cell name)``; its rows."""
    for _, _, base, prior, _ in cells:  # every cell's trial construction, before any calibration
        check_prior_fits(base, prior)
    rows = []
    for x, eps, base, prior, cell in cells:
        cfg = dataclasses.replace(base, noise_multiplier=sigma_for_epsilon(eps, run.delta, base.sample_rate, base.steps))
        opt = options_of(prior)
        rep = run_prior_cell(cfg, run.trials, run.seed, options=opt, out=str(out / f"{name}_{cell}.jsonl"),
                             resume=run.resume, progress=run.progress, executor=ex, device=run.device)
        norms = {k: rep.results[k].value for k in ("grad_norm", "clipped_grad_norm") if k in rep.results}
        rows += [_row(name, x_name, x, cfg, a, rep.results[a], run, eps, gamma=rep.gamma, prior=prior, **norms)
                 for a in opt.attacks]
    return rows


def _finish(name: str, out: Path, rows: list[dict[str, Any]], plot) -> dict[str, Any]:
    write_csv(out / f"{name}.csv", rows, CSV_FIELDS)
    plot(out / f"{name}.png", rows)
    return {"png": str(out / f"{name}.png"), "csv": str(out / f"{name}.csv"), "rows": rows}


def _sizes(prior_sizes: Sequence[int], prior: str, run: HayesRun) -> list[int]:
    from rerokit.data import load_dataset

    n = load_dataset("digits").n
    sizes = [check_int("prior_sizes", s, minimum=2) for s in prior_sizes]
    if not sizes:
        raise ValueError("prior_sizes must hold at least one size >= 2")
    if prior == "data" and max(sizes) > n - 1:
        raise ValueError(f"prior_sizes must be <= {n - 1} for a data prior (the digits hold {n} points), got "
                         f"{max(sizes)}; use prior='noise' for larger priors")
    return sizes


def fig3_sizes(out_dir: str | Path, run: HayesRun = HayesRun(), *, prior_sizes: Sequence[int] = tuple(2**k for k in range(1, 11)),
               epsilons: Sequence[float] = (1, 4, 16), prior: str = "data") -> dict[str, Any]:
    """Fig. 3 over prior sizes: Alg. 2's success and the bound gamma per prior size N and epsilon.

    Args:
        out_dir: the output folder: ``fig3_sizes.csv``, ``fig3_sizes.png``, one
            ``fig3_sizes_n<N>_eps<e>.jsonl`` per cell.
        run: the shared settings (:class:`HayesRun`; C defaults to 0.1 as in the paper).
        prior_sizes: the prior sizes N >= 2 (default 2, 4, ..., 1024; a data prior needs N <= 1796).
        epsilons: the epsilons > 0 (sigma calibrated for each at delta, q = 1, T).
        prior: ``"data"`` (default) or ``"noise"``.

    Returns:
        ``{"png", "csv", "rows"}``: one row per (N, epsilon): Alg. 2's success, interval, gamma.

    Raises:
        ValueError: if a setting is out of range (before any training).
    """
    from rerokit._validate import check_choice

    check_choice("prior", prior, PRIORS)
    sizes = _sizes(prior_sizes, prior, run)
    eps = checked_values("epsilons", epsilons, check_positive, "value > 0")
    out = output_dir(out_dir)
    cells = [(n, e, run.config(n, 0.1, prior), prior, f"n{n}_eps{e:g}") for n in sizes for e in eps]
    with using_executor(run.executor) as ex:
        rows = _prior_cells("fig3_sizes", out, run, cells, "prior_size", lambda p: CellOptions(prior=p), ex)
    return _finish("fig3_sizes", out, rows, _plot_sizes)


def fig9(out_dir: str | Path, run: HayesRun = HayesRun(), *, epsilons: Sequence[float] = (1, 2, 4, 8, 16),
         prior_size: int = 10) -> dict[str, Any]:
    """Fig. 9: Alg. 2's success vs epsilon with a prior of digits and a prior of noise images.

    Args:
        out_dir: the output folder: ``fig9.csv``, ``fig9.png``, ``fig9_<prior>_eps<e>.jsonl``.
        run: the shared settings (C defaults to 0.1).
        epsilons: epsilons > 0.
        prior_size: N >= 2 (default 10).

    Returns:
        ``{"png", "csv", "rows"}``: one row per prior and epsilon.
    """
    eps = checked_values("epsilons", epsilons, check_positive, "value > 0")
    _sizes([prior_size], "data", run)
    out = output_dir(out_dir)
    cells = [(e, e, run.config(prior_size, 0.1, p), p, f"{p}_eps{e:g}") for p in PRIORS for e in eps]
    with using_executor(run.executor) as ex:
        rows = _prior_cells("fig9", out, run, cells, "epsilon", lambda p: CellOptions(prior=p), ex)
    return _finish("fig9", out, rows, lambda path, r: _plot_eps(path, r, "prior", "Fig. 9 (digits): prior type"))


def fig13(out_dir: str | Path, run: HayesRun = HayesRun(), *, epsilons: Sequence[float] = (1, 4, 16, 40),
          clips: Sequence[float] = (0.1, 1.0), prior_size: int = 10) -> dict[str, Any]:
    """Fig. 13: the average gradient norm over training and Alg. 2's success at two clipping norms.

    Every trial records the mean over all |D-| + 1 training points and all T steps of the
    per-sample gradient norm and of the clipped norm min(||g||, C) (the paper's panel (a) plots the
    latter: 0.1 for every epsilon at C = 0.1, decreasing at C = 1).

    Args:
        out_dir: the output folder: ``fig13.csv``, ``fig13.png``, ``fig13_C<C>_eps<e>.jsonl``.
        run: the shared settings (``run.clip`` is ignored: ``clips`` are swept).
        epsilons: epsilons > 0.
        clips: clipping norms C > 0.
        prior_size: N >= 2.

    Returns:
        ``{"png", "csv", "rows"}``: one row per (C, epsilon), with ``grad_norm`` and
        ``clipped_grad_norm`` (means over trials).
    """
    eps = checked_values("epsilons", epsilons, check_positive, "value > 0")
    cs = checked_values("clips", clips, check_positive, "value > 0")
    _sizes([prior_size], "data", run)
    out = output_dir(out_dir)
    run = dataclasses.replace(run, clip=None)
    cells = [(e, e, run.config(prior_size, c), "data", f"C{c:g}_eps{e:g}") for c in cs for e in eps]
    with using_executor(run.executor) as ex:
        rows = _prior_cells("fig13", out, run, cells, "epsilon", lambda p: CellOptions(prior=p, grad_norms=True), ex)
    return _finish("fig13", out, rows, _plot_fig13)


def fig12(out_dir: str | Path, run: HayesRun = HayesRun(trials=8), *, epsilons: Sequence[float] = (1, 10, 100, 1000),
          rhos: Sequence[float] = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0), iterations: int = 200,
          restarts: int = 2) -> dict[str, Any]:
    """Fig. 12 (App. I): gradient attack success under the pixel-tolerance criterion vs the bound.

    Args:
        out_dir: the output folder: ``fig12.csv``, ``fig12.png``, ``fig12_eps<e>.jsonl``.
        run: the shared settings (C defaults to 0.1; trials = gradient-attack trials per epsilon).
        epsilons: epsilons > 0.
        rhos: fractions rho in [0, 1] of pixels that must lie within tau = 32/255.
        iterations, restarts: the gradient attack's Adam steps and random restarts.

    Returns:
        ``{"png", "csv", "rows"}``: per epsilon one row per rho (success, interval, gamma,
        log_kappa) and one MSE row.
    """
    import numpy as np

    from rerokit.bounds.priors import PixelTolerancePrior
    from rerokit.data import load_dataset

    eps = checked_values("epsilons", epsilons, check_positive, "value > 0")
    opt = CellOptions(rhos=tuple(rhos), iterations=iterations, restarts=restarts, chunk_size=8)
    out = output_dir(out_dir)
    X = load_dataset("digits").flat
    # the all-zero image, a guess that ignores the model: its success on the digits themselves
    zero = {rho: float(np.mean((np.abs(X) < opt.tolerance).sum(1) >= PixelTolerancePrior(
        d=X.shape[1], delta=opt.tolerance, rho=rho).required)) for rho in opt.rhos}
    base = run.config(2, 0.1)
    rows = []
    with using_executor(run.executor) as ex:
        for e in eps:
            cfg = dataclasses.replace(base, noise_multiplier=sigma_for_epsilon(e, run.delta, 1.0, base.steps))
            rep = run_tolerance_cell(cfg, run.trials, run.seed, options=opt, out=str(out / f"fig12_eps{e:g}.jsonl"),
                                     resume=run.resume, progress=run.progress, executor=ex, device=run.device)
            for rho in opt.rhos:
                r = rep.results[f"rho{rho:g}"]
                rows.append(_row("fig12", "epsilon", e, cfg, "gradient", r, run, e, gamma=r.extras["gamma"],
                                 rho=rho, log_kappa=r.extras["log_kappa"], prior="uniform pixels",
                                 zero_guess_success=zero[rho]))
            rows.append(_row("fig12", "epsilon", e, cfg, "gradient", rep.results["mse"], run, e))
    return _finish("fig12", out, rows, _plot_fig12)


def _errbar(ax, pts, label, **kw) -> None:
    pts = sorted(pts)
    ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                marker="o", ms=3, capsize=2, label=label, **kw)


def _plot_sizes(path: Path, rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for k, e in enumerate(sorted({r["epsilon"] for r in rows})):
        sub = sorted((r for r in rows if r["epsilon"] == e), key=lambda r: r["x"])
        c = f"C{k}"
        ax.plot([r["x"] for r in sub], [r["gamma"] for r in sub], "-", color=c, label=f"bound gamma, eps={e:g}")
        _errbar(ax, [(r["x"], r["value"], r["ci_low"], r["ci_high"]) for r in sub], f"Alg. 2, eps={e:g}",
                color=c, ls="none")
    xs = sorted({r["x"] for r in rows})
    ax.plot(xs, [1 / x for x in xs], "k:", label="baseline 1/N")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("prior size N")
    ax.set_ylabel("reconstruction success")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Fig. 3 over prior sizes (digits, {rows[0]['prior']} prior)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_eps(path: Path, rows: list[dict[str, Any]], key: str, title: str, ax=None, *, attack: str = "Alg. 2",
              ylabel: str = "reconstruction success") -> None:
    plt = pyplot()
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(5.5, 4))
    sub = [r for r in rows if r["metric"] == "success"]
    for k, v in enumerate(sorted({str(r[key]) for r in sub})):
        pts = [r for r in sub if str(r[key]) == v]
        _errbar(ax, [(r["x"], r["value"], r["ci_low"], r["ci_high"]) for r in pts], f"{attack}, {key} {v}",
                color=f"C{k}")
        g = sorted((r["x"], r["gamma"]) for r in pts)
        ax.plot([p[0] for p in g], [p[1] for p in g], "--", color=f"C{k}", label=f"bound gamma, {key} {v}")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend(fontsize=6)
    if own:
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def _plot_fig13(path: Path, rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for k, c in enumerate(sorted({r["clip"] for r in rows})):
        pts = sorted((r["x"], r["clipped_grad_norm"], r["grad_norm"]) for r in rows if r["clip"] == c)
        a.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=f"C{k}", label=f"min(||g||, C), C={c:g}")
        a.plot([p[0] for p in pts], [p[2] for p in pts], "x:", color=f"C{k}", label=f"||g|| (unclipped), C={c:g}")
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_xlabel("epsilon")
    a.set_ylabel("average gradient norm (all points, all steps)")
    a.legend(fontsize=6)
    _plot_eps(path, rows, "clip", "Fig. 13 (digits): success by clipping norm C", ax=b)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_fig12(path: Path, rows: list[dict[str, Any]]) -> None:
    _plot_eps(path, rows, "rho", "Fig. 12 (digits): no prior, pixel tolerance", attack="attack",
              ylabel="success (>= rho of pixels within 32/255)")
