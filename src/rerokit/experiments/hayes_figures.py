"""Hayes, Mahloujifar & Balle (2023) figures, scaled for CPU on the digits data (PNG + CSV).

* :func:`fig3` - prior-aware attack success vs epsilon (prior size 10, full batch, T = 100,
  C = 0.1) next to the ReRo bound gamma (Fig. 3 / Table 1 row "Figure 3").
* :func:`fig5` - success vs sampling rate q at epsilon = 4 (T = 100, C = 1; Fig. 5): Alg. 3
  (top-qT, App. F) and the log-likelihood attack (App. G) against the bound.
* :func:`fig8` - gradient-based attack (Eq. 1, App. D prior matching) vs the prior-aware attack
  for prior sizes 2, 8 and 128 (Fig. 8).

Each cell (one x value, one prior size) is an audit run whose trials are appended to
``<out_dir>/<figure>_<cell>.jsonl`` (resumable with ``resume=True``); the plotted numbers go to
``<figure>.csv`` and the plot to ``<figure>.png``. Every cell uses the same ``seed``, so trial i
draws the same prior, target and D- in every cell (common random numbers across x).
sigma is calibrated for (epsilon, delta) with dp-accounting (PLD,
:func:`rerokit.bounds.calibrate.noise_multiplier_for_epsilon`). The paper uses 10,000 trials per
point (App. A); the defaults here are far fewer so that a CPU run takes minutes - the 95%
Clopper-Pearson intervals in the CSV say how precise each point is.

Every figure takes the cells' audit settings (``audit``, an
:class:`rerokit.experiments.audit.AuditConfig` whose sigma the figure calibrates) and ``options``
(a :class:`rerokit.executors.RunOptions`: resume, progress, ``executor`` - ``"local"``, ``"ray"`` or
a :class:`rerokit.executors.Executor`, one for all its cells: the blocks of trials run there with
the same results - and ``device``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from rerokit._validate import check_choice, check_instance, check_int, check_positive, check_probability
from rerokit.executors import get_executor, using_executor
from rerokit.experiments._outputs import output_dir, pyplot, write_csv
from rerokit.experiments.audit import PRIOR_AWARE_ATTACKS, AuditConfig, AuditReport, make_trial, rero_gamma
from rerokit.executors import RunOptions
from rerokit.experiments.audit import GradientAttack, run_gradient_audit, run_prior_aware_audit

__all__ = ["fig3", "fig5", "fig8", "CSV_FIELDS", "FIG3_AUDIT", "FIG5_AUDIT"]

CSV_FIELDS = ("figure", "x_name", "x", "prior_size", "attack", "metric", "value", "ci_low", "ci_high",
              "gamma", "kappa", "noise_multiplier", "epsilon", "delta", "sample_rate", "steps", "clip", "trials", "seed")


def sigma_for_epsilon(epsilon: float, delta: float, q: float, T: int) -> float:
    from rerokit.bounds.calibrate import noise_multiplier_for_epsilon

    return float(noise_multiplier_for_epsilon(epsilon, delta, q, T))


def check_run(trials: int, seed: int, attacks: Sequence[str] | None = None, executor: Any = "local",
               device: str = "cpu") -> None:
    """Checks that the audits would make only after sigma is calibrated (done first, cheaply)."""
    from rerokit.training.devices import resolve_device

    check_int("trials", trials, minimum=1)
    check_int("seed", seed, minimum=0)
    if not isinstance(executor, str) or executor != "local":
        get_executor(executor)  # Ray installed; an Executor passes as it is
    resolve_device(device)
    if attacks is not None:
        if len(tuple(attacks)) == 0:
            raise ValueError("attacks must name at least one of " + ", ".join(PRIOR_AWARE_ATTACKS))
        for a in attacks:
            check_choice("attacks", a, PRIOR_AWARE_ATTACKS)


def checked_values(name: str, values: Iterable[float], check: Callable[[str, Any], float], what: str) -> list[float]:
    """Each of ``values`` checked by ``check(name, value)``; at least one (else ValueError)."""
    xs = [check(name, v) for v in values]
    if not xs:
        raise ValueError(f"{name} must hold at least one {what}")
    return xs


def _check_trial(cfg: AuditConfig) -> AuditConfig:
    """``cfg`` once its trial construction (prior size, |D-|) fits the digits (cheap; before any training)."""
    from rerokit.data import load_dataset

    make_trial(load_dataset("digits").n, cfg.prior_size, cfg.n_known, 0, cfg.prior_weights)
    return cfg


@dataclass(frozen=True)
class _Figure:
    """What every cell (one x value, one prior size) of one figure shares: the figure's name, its
    folder, the trials, seed and delta and the run options, as in :func:`fig3`."""

    name: str
    out: Path | str
    trials: int
    seed: int
    delta: float
    options: RunOptions

    def audit(self, run: Callable[..., AuditReport], cfg: AuditConfig, cell: str, ex: Any, **kw: Any) -> AuditReport:
        """``run`` (an audit of :mod:`rerokit.experiments.audit`) of one cell, its trials in ``<name>_<cell>.jsonl``."""
        options = dataclasses.replace(self.options, out=str(self.out / f"{self.name}_{cell}.jsonl"), executor=ex,
                                      workers=None, address=None)
        return run(cfg, kw.pop("trials", self.trials), self.seed, options=options, **kw)

    def row(self, x_name, x, cfg, attack, res, gamma, epsilon, metric=None) -> dict[str, Any]:
        """One CSV row (:data:`CSV_FIELDS`) of an attack's result ``res`` in one cell."""
        return dict(figure=self.name, x_name=x_name, x=x, prior_size=cfg.prior_size, attack=attack,
                    metric=metric or res.metric, value=res.value, ci_low=res.interval[0], ci_high=res.interval[1],
                    gamma=gamma, kappa=cfg.kappa, noise_multiplier=cfg.noise_multiplier, epsilon=epsilon,
                    delta=self.delta, sample_rate=cfg.sample_rate, steps=cfg.steps, clip=cfg.clip, trials=res.trials,
                    seed=self.seed)

    def finish(self, rows: list[dict[str, Any]], x_label: str, title: str) -> dict[str, Any]:
        """Write ``<name>.csv`` and ``<name>.png``; the figure's result (paths and rows)."""
        write_csv(self.out / f"{self.name}.csv", rows, CSV_FIELDS)
        _plot(self.out / f"{self.name}.png", rows, x_label, title, logx=True)
        return {"png": str(self.out / f"{self.name}.png"), "csv": str(self.out / f"{self.name}.csv"), "rows": rows}


def _figure_options(options: RunOptions | None) -> RunOptions:
    """The run options of a figure (default ``RunOptions()``), which writes one file per cell itself."""
    opts = check_instance("options", options, RunOptions, RunOptions)
    if opts.out is not None:
        raise ValueError("options.out must be None: a figure writes one JSON-lines file per cell into out_dir")
    return opts


def _figure_audit(audit: AuditConfig | None, default: AuditConfig, *, per_cell: tuple[str, ...] = ()) -> AuditConfig:
    """The audit settings of a figure's cells: ``audit`` (default ``default``) on the digits, with the
    settings that the figure sets in every cell (sigma, and ``per_cell``) left at their defaults."""
    cfg = default if audit is None else audit
    check_instance("audit", cfg, AuditConfig)
    if cfg.dataset != "digits" or cfg.data_path is not None:
        raise ValueError(f"the figures run on the digits: audit.dataset must be digits, got {cfg.dataset}")
    if cfg.noise_multiplier != 0.0 or cfg.epsilon is not None or cfg.delta is not None:
        raise ValueError("the figure calibrates sigma for each epsilon (at delta): leave audit.noise_multiplier 0 "
                         "and audit.epsilon and audit.delta None")
    base = AuditConfig(noise_multiplier=0.0)
    for name in per_cell:
        if getattr(cfg, name) != getattr(base, name):
            raise ValueError(f"the figure sets {name} in every cell: leave audit.{name} at its default "
                             f"{getattr(base, name)!r}, got {getattr(cfg, name)!r}")
    return cfg


def _prior_aware_figure(fig: _Figure, cells: Sequence[tuple[float, float, float, str]], attacks: Sequence[str],
                        labels: tuple[str, str, str], base: AuditConfig) -> dict[str, Any]:
    """Fig. 3 and Fig. 5: one prior-aware audit per cell ``(x, epsilon, q, cell name)``, sigma calibrated
    for (epsilon, delta) at q just before the cell's audit. ``base``: the cells' :class:`AuditConfig`
    (sigma 0); ``labels``: the x name in the CSV, the x-axis label and the title of the plot."""
    base = _check_trial(base)
    fig = dataclasses.replace(fig, out=output_dir(fig.out))
    x_name, x_label, title = labels
    opts = fig.options
    with using_executor(opts.executor, workers=opts.workers, address=opts.address) as ex:
        rows = []
        for x, e, q, cell in cells:
            cfg = dataclasses.replace(base, sample_rate=q, noise_multiplier=sigma_for_epsilon(e, fig.delta, q, base.steps))
            rep = fig.audit(run_prior_aware_audit, cfg, cell, ex, attacks=tuple(attacks))
            rows += [fig.row(x_name, x, cfg, a, r, rep.gamma, e) for a, r in rep.results.items()]
    return fig.finish(rows, x_label, title)


def _plot(path: Path, rows: list[dict[str, Any]], x_name: str, title: str, logx: bool = False) -> None:
    plt = pyplot()

    sizes = sorted({r["prior_size"] for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.4), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        sub = [r for r in rows if r["prior_size"] == n and r["metric"] == "success"]
        xs = sorted({r["x"] for r in sub})
        ax.plot(xs, [next(r["gamma"] for r in sub if r["x"] == x) for x in xs], "k-", label="bound gamma (Thm 2)")
        ax.axhline(1.0 / n, color="grey", ls=":", label="baseline kappa")
        for attack in sorted({r["attack"] for r in sub}):
            pts = sorted((r["x"], r["value"], r["ci_low"], r["ci_high"]) for r in sub if r["attack"] == attack)
            xv = [p[0] for p in pts]
            yv = [p[1] for p in pts]
            err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
            ax.errorbar(xv, yv, yerr=err, marker="o", ms=3, capsize=2, label=attack)
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel(x_name)
        ax.set_ylabel("reconstruction success")
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{title}, prior size {n}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


FIG3_AUDIT = AuditConfig(noise_multiplier=0.0, clip=0.1)
"""The default cell settings of :func:`fig3` (and :func:`fig8`): digits, MLP 64-10-10, prior size 10,
|D-| = 999, T = 100, C = 0.1, lr 10, full batch (sigma set per cell)."""
FIG5_AUDIT = AuditConfig(noise_multiplier=0.0, clip=1.0)
"""The default cell settings of :func:`fig5`: as :data:`FIG3_AUDIT` with C = 1 (q set per cell)."""


def fig3(
    out_dir: str | Path,
    *,
    epsilons: Sequence[float] = (1, 2, 4, 8, 16),
    trials: int = 100, seed: int = 0, delta: float = 1e-5,
    audit: AuditConfig | None = None,
    attacks: Sequence[str] = ("alg2",),
    options: RunOptions | None = None,
) -> dict[str, Any]:
    """Fig. 3-style: success of the prior-aware attack vs epsilon (q = 1) with the bound gamma (Thm 2).

    Args:
        out_dir: the output folder (created): ``fig3.csv``, ``fig3.png`` and one
            ``fig3_eps<epsilon>.jsonl`` per epsilon.
        epsilons: the x values, each > 0 (at least one); sigma is calibrated for (epsilon, delta).
        trials: prior-aware trials per cell (>= 1).
        seed: the seed of every cell (>= 0): trial i is the same draw in every cell.
        delta: delta in (0, 1) of the calibration.
        audit: the cells' :class:`rerokit.experiments.audit.AuditConfig` (prior_size, steps, clip,
            lr, n_known, model, ...; on the digits) with ``noise_multiplier`` 0 - the figure sets
            sigma in each cell - and ``sample_rate`` 1; None: :data:`FIG3_AUDIT`.
        attacks: names of :data:`rerokit.experiments.audit.PRIOR_AWARE_ATTACKS` (at least one).
        options: the :class:`rerokit.executors.RunOptions` of every cell (``resume``,
            ``overwrite``, ``chunk_size``, ``progress`` bars on stderr, ``executor`` - one for all
            cells -, ``workers``, ``address``, ``device``); its ``out`` must be None (one file per
            cell in ``out_dir``). Default ``RunOptions()``.

    Returns:
        ``{"png": path, "csv": path, "rows": [...]}``, one row (:data:`CSV_FIELDS`) per epsilon and
        attack.

    Raises:
        ValueError: if a setting is out of range (checked before sigma is calibrated and before
            any training), or as :func:`rerokit.experiments.audit.run_prior_aware_audit`.
    """
    opts = _figure_options(options)
    check_run(trials, seed, attacks, opts.executor, opts.device)
    base = _figure_audit(audit, FIG3_AUDIT, per_cell=("sample_rate",))
    delta = check_probability("delta", delta, high_open=True)
    eps = checked_values("epsilons", epsilons, check_positive, "value > 0")
    return _prior_aware_figure(_Figure("fig3", out_dir, trials, seed, delta, opts),
                               [(e, e, 1.0, f"eps{e:g}") for e in eps], attacks,
                               ("epsilon", "epsilon", "Fig. 3 (digits)"), base)


def fig5(
    out_dir: str | Path,
    *,
    sample_rates: Sequence[float] = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0), epsilon: float = 4.0,
    trials: int = 100, seed: int = 0, delta: float = 1e-5,
    audit: AuditConfig | None = None,
    attacks: Sequence[str] = ("alg3", "loglik"),
    options: RunOptions | None = None,
) -> dict[str, Any]:
    """Fig. 5-style: success vs sampling rate q at fixed epsilon (sigma calibrated per q): Alg. 3
    (top-qT, App. F) and the log-likelihood attack (App. G) against the bound gamma.

    Args:
        out_dir: the output folder: ``fig5.csv``, ``fig5.png``, one ``fig5_q<q>.jsonl`` per q.
        sample_rates: the x values, each in (0, 1] (at least one).
        epsilon: the epsilon (> 0) every sigma is calibrated for, at delta.
        trials, seed, delta, attacks, options: as in :func:`fig3`.
        audit: as in :func:`fig3` (``sample_rate`` is set per cell); None: :data:`FIG5_AUDIT`.

    Returns:
        As :func:`fig3`, one row per q and attack.

    Raises:
        ValueError: as :func:`fig3`.
    """
    opts = _figure_options(options)
    check_run(trials, seed, attacks, opts.executor, opts.device)
    base = _figure_audit(audit, FIG5_AUDIT, per_cell=("sample_rate",))
    delta = check_probability("delta", delta, high_open=True)
    e = check_positive("epsilon", epsilon)
    qs = checked_values("sample_rates", sample_rates, check_probability, "value in (0, 1]")
    return _prior_aware_figure(_Figure("fig5", out_dir, trials, seed, delta, opts),
                               [(q, e, q, f"q{q:g}") for q in qs], attacks,
                               ("sample_rate", "sampling rate q", f"Fig. 5 (digits, eps={e:g})"), base)


def fig8(
    out_dir: str | Path,
    *,
    epsilons: Sequence[float] = (1, 4, 16, 64), prior_sizes: Sequence[int] = (2, 8, 128),
    trials: int = 50, gradient_trials: int = 4, seed: int = 0, delta: float = 1e-5,
    audit: AuditConfig | None = None,
    attack: GradientAttack = GradientAttack(),
    options: RunOptions | None = None,
) -> dict[str, Any]:
    """Fig. 8-style: prior-aware (Alg. 2) vs gradient-based attack (Eq. 1 + App. D prior
    matching) success vs epsilon, one panel per prior size. One gradient reconstruction per
    trial serves every prior size (exact App. D probability per size).

    Args:
        out_dir: the output folder: ``fig8.csv``, ``fig8.png``, ``fig8_prior_eps<e>_n<N>.jsonl``
            per epsilon and prior size and ``fig8_gradient_eps<e>.jsonl`` per epsilon.
        epsilons: as in :func:`fig3`.
        prior_sizes: the prior sizes N (each in [2, dataset size]; at least one); |D-| is
            min(``audit.n_known``, dataset size - N) (the gradient audit: dataset size - max N).
        trials: prior-aware trials per cell (>= 1).
        gradient_trials: gradient-attack trials per epsilon (>= 1).
        seed, delta, options: as in :func:`fig3`.
        audit: as in :func:`fig3` (``prior_size`` is set per cell, ``sample_rate`` is 1, no
            ``prior_weights``); None: :data:`FIG3_AUDIT`.
        attack: the gradient attack's :class:`rerokit.experiments.audit.GradientAttack` (Adam
            steps per restart, random restarts, step size).

    Returns:
        As :func:`fig3`: per epsilon one prior-aware row per N, one gradient row per N (App. D
        success) and one gradient MSE row (gamma empty).

    Raises:
        ValueError: as :func:`fig3`.
    """
    from rerokit.data import load_dataset

    opts = _figure_options(options)
    check_run(trials, seed, None, opts.executor, opts.device)
    base = _figure_audit(audit, FIG3_AUDIT, per_cell=("sample_rate", "prior_size", "prior_weights"))
    check_int("gradient_trials", gradient_trials, minimum=1)
    check_instance("attack", attack, GradientAttack)
    delta = check_probability("delta", delta, high_open=True)
    eps = [check_positive("epsilons", e) for e in epsilons]
    n_data = load_dataset("digits").n
    sizes = [check_int("prior_sizes", n, minimum=2, maximum=n_data) for n in prior_sizes]
    if not eps or not sizes:
        raise ValueError("epsilons and prior_sizes must be non-empty")
    n_known, steps = base.n_known, base.steps

    def config(sigma: float, n: int, largest: int) -> AuditConfig:
        """Prior size n, |D-| leaving room for a prior of ``largest`` points."""
        return dataclasses.replace(base, noise_multiplier=sigma, prior_size=n, n_known=min(n_known, n_data - largest))

    # every AuditConfig below, with sigma 0 in place of the calibrated one (checked before any work)
    for n in sizes:
        _check_trial(config(0.0, n, n))
    _check_trial(config(0.0, sizes[0], max(sizes)))
    fig = _Figure("fig8", output_dir(out_dir), trials, seed, delta, opts)
    with using_executor(opts.executor, workers=opts.workers, address=opts.address) as ex:
        rows = []
        for e in eps:
            sigma = sigma_for_epsilon(e, delta, 1.0, steps)
            for n in sizes:
                cfg = config(sigma, n, n)
                rep = fig.audit(run_prior_aware_audit, cfg, f"prior_eps{e:g}_n{n}", ex, attacks=("alg2",))
                rows.append(fig.row("epsilon", e, cfg, "prior-aware (alg2)", rep.results["alg2"], rep.gamma, e))
            gcfg = config(sigma, sizes[0], max(sizes))
            grep_ = fig.audit(run_gradient_audit, gcfg, f"gradient_eps{e:g}", ex, trials=gradient_trials,
                              attack=attack, prior_sizes=tuple(sizes))
            for n in sizes:
                rows.append(fig.row("epsilon", e, dataclasses.replace(gcfg, prior_size=n), "gradient (Eq. 1 + App. D)",
                                    grep_.results[f"prior_success_{n}"], rero_gamma(sigma, 1.0, steps, 1.0 / n), e))
            # no ReRo bound for the MSE row: gamma None (empty in the CSV), not NaN
            rows.append(fig.row("epsilon", e, gcfg, "gradient (Eq. 1)", grep_.results["mse"], None, e, metric="mse"))
    return fig.finish(rows, "epsilon", "Fig. 8 (digits)")
