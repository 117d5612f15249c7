"""``build_report``: every risk of a DP-SGD run in one report (terminal, JSON, HTML card, PNG + CSV).

The input is what :func:`rerokit.reconstruction_risk` takes - the keyword settings, an Opacus
history, a dp-accounting event or a :class:`~rerokit.bounds.schedule.Schedule` - plus an
optional description of the data and an optional audit result. Every number comes from the
library functions the ``bound`` / ``calibrate`` / ``audit`` commands call (no second
implementation):

* informed adversary, priors of 2 / 10 / 100 equally likely candidates and "any image within
  the pixel tolerance" (:class:`~rerokit.bounds.priors.PixelTolerancePrior`, Hayes et al. 2023
  App. I: 32/256 per pixel): gamma of Hayes et al. 2023 Thm 2 with its certified bracket,
  :func:`rerokit.risk.reconstruction_risks` (one composed PLD for all priors);
* membership inference (TPR at FPR 0.1% / 1% / 10%, advantage), epsilon at delta and the
  Gaussian-DP mu, from the same curve;
* the uninformed gradient-inversion adversary of Riess et al. 2024 (:mod:`rerokit.bounds.uninformed`:
  ``mse_rero``, ``mse_rero_over_steps``, ``expected_mse``, ``ncc_bound``), as ``rerokit bound
  uninformed``;
* Guo et al.'s MSE lower bound (:func:`rerokit.bounds.mse.rdp_mse_lower_bound` of the
  replace-one (2, eps)-RDP from :func:`rerokit.accounting.events.replace_one_rdp_order2`), as
  ``rerokit bound mse-rdp``, when a data diameter is given;
* what would change it: sigma (same q, T) and steps (same sigma, q) for gamma <= kappa + 0.05 /
  0.1 / 0.2 at a prior of 10 (:func:`~rerokit.bounds.calibrate.calibrate_noise_multiplier`,
  :func:`~rerokit.bounds.calibrate.calibrate_steps`), as ``rerokit calibrate dpsgd``;
* an audit's measured success with its exact Clopper-Pearson interval against gamma at the
  audit's kappa, and what it proves (:func:`rerokit.bounds.empirical.audit_lower_bounds`); a
  one-run audit in its own terms instead (:mod:`rerokit.report.onerun`: guesses and correct against
  its claimed curve's certified upper tail, epsilon / mu proven against certified).

**Smallest record norm (uninformed adversary).** Riess et al.'s (2024) bound needs r = the smallest
non-zero L2 norm of a record. ``min_norm`` gives it; by default r = the clipping norm C, i.e.
the report assumes every record has norm >= C - Riess et al.'s own data-independent bound gamma'
(Prop. 3), which is an upper bound on gamma for every dataset that satisfies the assumption
(a larger r only lowers the attacker's success). Without ``clip`` and ``min_norm`` the
uninformed section is left out (the verdict says how to get it).

The over-steps figure evaluates the same :func:`~rerokit.risk.reconstruction_risks` on
prefixes of the schedule (:data:`STEP_POINTS` points).
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from rerokit._validate import check_bool, check_int, check_positive, check_probability
from rerokit.bounds.schedule import Sampling, Schedule, Segment
from rerokit.report.format import Lead, Num, Sentence, fmt, fmt_bracket, fmt_log10, key_part, num
from rerokit.report.inputs import AuditSummary, load_audit
from rerokit.report.model import (
    AuditSection, BinomialAudit, DataFacts, DeclaredGuarantee, DiscretePriorRow, GdpFacts, GuoSection,
    InformedMseSection, InformedRow, LevelFacts, MeanAudit, MembershipFacts, NoPriorAttacksView, OneRunAudit,
    OneRunProvenBounds, PixelToleranceRow, PoissonAssumptionView, ProvenBounds, ReportData, ReportOptions,
    RunSettings, Skipped, TprPoint, UninformedSection, VerdictLine, WhatIfSection, WhatIfTarget, as_report_data,
)
from rerokit.report.settings import DEFAULT_MSE_THRESHOLD, DEFAULT_PRIOR_SIZES, DataDescription, ReportSettings
from rerokit.report.terminal import Row, Summary, Table

__all__ = [
    "THREATS",
    "SCHEMA_VERSION",
    "verdict_sentences",
    "tiles",
    "key_numbers",
    "table_rows",
    "what_if_table",
    "schedule_prefix",
    "step_grid",
    "Report",
    "LogBound",
    "build_report",
    "report_summary",
    "DEFAULT_PRIOR_SIZES",
    "PIXEL_TOLERANCE",
    "DEFAULT_MSE_THRESHOLD",
    "WHAT_IF_PRIOR",
    "WHAT_IF_MARGINS",
    "DATASET_SHAPES",
    "STEP_POINTS",
]


PIXEL_TOLERANCE = 32 / 256
"""Per-pixel tolerance of "any image within the pixel tolerance" (Hayes et al. 2023, App. I):
pixels uniform on [0, 1], success when every pixel is within 32/256 (kappa = (2 x 32/256)^d)."""


WHAT_IF_PRIOR = 10
"""Prior size of "what would change it" (and of mu_equivalent when the run is not full batch)."""

WHAT_IF_MARGINS = (0.05, 0.1, 0.2)
"""Targets of "what would change it": gamma <= kappa + margin (targets outside (kappa, 1) skipped)."""

from rerokit.data import DATASET_SHAPES  # noqa: E402 - data shapes of the datasets (one home: rerokit.data)

STEP_POINTS = 25
"""Points along training at which the over-steps figure evaluates gamma and epsilon."""

_LN10 = math.log(10.0)


def _pct(x: float) -> str:
    return f"{x * 100:g}%"


def _shape_text(shape: Sequence[int] | None) -> str:
    return "x".join(str(s) for s in shape) if shape else ""


@dataclass(frozen=True)
class LogBound:
    """A :class:`~rerokit.bounds.types.Bound` with the log of its value (``extras["log_value"]`` of the
    bounds of :mod:`rerokit.bounds.uninformed`, readable where the value underflows a float), read once.

    Attributes:
      value: the bound.
      error: its numerical error.
      log_value: natural log of the value, or None when the bound does not state it.
    """

    value: float
    error: float
    log_value: float | None

    @classmethod
    def of(cls, b: Any) -> "LogBound":
        """The view of a :class:`~rerokit.bounds.types.Bound`."""
        lv = b.extras.get("log_value")
        return cls(b.value, b.error, lv)

    @property
    def log10_value(self) -> float | None:
        """log10 of the value, or None."""
        return None if self.log_value is None else self.log_value / _LN10


# --------------------------------------------------------------------------- schedule helpers


def _schedule_settings(sched: Schedule) -> dict[str, Any]:
    if len(sched) == 1:
        s, q, T = sched.segments[0]
        return {"noise_multiplier": s, "sample_rate": q, "steps": T, "total_steps": T}
    return {"schedule": sched.as_triples(), "total_steps": sched.total_steps}


def schedule_prefix(sched: Schedule, steps: int) -> Schedule:
    """The first ``steps`` steps of a schedule (segments cut at that step).

    Args:
      sched: the schedule.
      steps: an integer in [1, total_steps].

    Returns:
      The prefix as a :class:`~rerokit.bounds.schedule.Schedule`.
    """
    t = check_int("steps", steps, minimum=1, maximum=sched.total_steps)
    out = []
    for s, q, T in sched.segments:
        if t <= 0:
            break
        out.append(Segment(s, q, min(T, t)))
        t -= T
    return Schedule(tuple(out), sched.sampler, sched.examples_per_user, sched.sampler_source)


def step_grid(total: int, points: int = STEP_POINTS) -> list[int]:
    """Up to ``points`` distinct step counts from 1 to ``total`` (linear, ``total`` included).

    Args:
      total: the run's total steps (>= 1).
      points: how many step counts at most.

    Returns:
      Increasing step counts, the last one ``total``.
    """
    n = min(points, total)
    if n <= 1:
        return [total]
    return sorted({max(1, round(1 + i * (total - 1) / (n - 1))) for i in range(n)})


# --------------------------------------------------------------------------- the report


@dataclass
class Report:
    """A built report: its typed sections (:attr:`sections`, JSON by :meth:`to_dict`), the verdict and
    tables (:meth:`summary`), the HTML card (:meth:`to_html`) and the figures (:meth:`write_png`).

    Attributes:
      sections: the :class:`~rerokit.report.model.ReportData` (every section, typed).
      risks: the :class:`~rerokit.risk.ReconstructionRisk` s by key ("prior_10", ...).
      schedule: the evaluated schedule.
      audit: the :class:`~rerokit.report.inputs.AuditSummary` or None.
    """

    sections: ReportData
    risks: dict[str, Any]
    schedule: Schedule
    audit: AuditSummary | None = None
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    def memo(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()`` computed once per report and key (figures and step series are drawn by
        several renderers of the same report)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def data(self) -> dict[str, Any]:
        """The JSON-ready dict (a new copy on each access; :meth:`to_dict`)."""
        return self.sections.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict (what ``rerokit report --json`` prints).

        Returns:
          A new dict (:meth:`~rerokit.report.model.ReportData.to_dict` of :attr:`sections`).
        """
        return self.sections.to_dict()

    def summary(self) -> Summary:
        """Verdict sentences, the table of quantities, "what would change it" and notes.

        Returns:
          The :class:`~rerokit.report.terminal.Summary` (:func:`report_summary` of :attr:`sections`).
        """
        return report_summary(self.sections)

    @property
    def verdict(self) -> list[str]:
        """The verdict sentences as plain text."""
        return [v.text for v in self.sections.verdict]

    def render_terminal(self, file: Any = None, color: bool | None = None) -> None:
        """Print the verdict and tables (rich; colour only on a terminal).

        Args:
          file: the stream (default stdout).
          color: force colour on/off.
        """
        from rerokit.report.terminal import render

        s = self.summary()
        render(None, verdict=s.verdict, rows=s.rows, tables=s.tables, notes=s.notes, title=s.title,
               file=file, color=color, glossary=s.glossary)

    def steps_series(self, points: int = STEP_POINTS) -> dict[str, list]:
        """gamma (each prior size) and epsilon at ``points`` step counts along the schedule.

        Args:
          points: number of step counts (at most the total steps).

        Returns:
          ``{"step": [...], "gamma_prior_n": [...], ..., "epsilon": [...]}``.
        """
        return self.memo(("steps", points), lambda: self._steps_series(points))

    def _steps_series(self, points: int) -> dict[str, list]:
        from rerokit.risk import RiskOptions, reconstruction_risks

        sizes = list(self.sections.options.prior_sizes)
        grid = step_grid(self.schedule.total_steps, points)
        out: dict[str, list] = {"step": grid, **{f"gamma_prior_{n}": [] for n in sizes}, "epsilon": []}
        delta = self.sections.delta
        for t in grid:
            if t == self.schedule.total_steps:  # the report's own risks: no second PLD build
                rs = tuple(self.risks[f"prior_{n}"] for n in sizes)
            else:
                rs = reconstruction_risks(schedule_prefix(self.schedule, t), list(sizes), delta=delta,
                                          options=RiskOptions(fprs=()))
            for n, r in zip(sizes, rs):
                out[f"gamma_prior_{n}"].append(r.gamma)
            out["epsilon"].append(rs[0].epsilon)
        return out

    def to_html(self) -> str:
        """The self-contained HTML card (inline CSS and SVG; no scripts, nothing from the network).

        Returns:
          The HTML text (:func:`rerokit.report.html.render_html`).
        """
        from rerokit.report.html import render_html

        return render_html(self)

    def write_html(self, path: Any) -> str:
        """Write :meth:`to_html` to ``path`` (UTF-8).

        Args:
          path: the file to write.

        Returns:
          The path written.
        """
        p = os.fspath(path)
        text = self.to_html()
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        return p

    def write_png(self, directory: Any) -> list[str]:
        """Write every figure as PNG with the CSV of its plotted numbers beside it.

        Args:
          directory: folder (created if missing).

        Returns:
          The paths written (``name.png``, ``name.csv`` pairs).
        """
        from rerokit.report.figures import write_png

        return write_png(self, directory)


# --------------------------------------------------------------------------- building


def _resolve_audit(audit: Any) -> AuditSummary | None:
    if audit is None:
        return None
    if isinstance(audit, AuditSummary):
        return audit
    from rerokit.experiments.audit_outcome import AuditOutcome
    from rerokit.report.inputs import audit_from_dict

    if isinstance(audit, AuditOutcome):  # run_audit(...).summary(): read as its printed JSON is
        return audit_from_dict(audit.to_dict())
    if isinstance(audit, dict):
        return audit_from_dict(audit)
    if isinstance(audit, (str, bytes, os.PathLike)):
        return load_audit(audit)
    raise TypeError(f"audit must be a path, the dict 'rerokit audit ... --json' prints, an AuditOutcome or an "
                    f"AuditSummary, got {type(audit).__name__}")


def _audit_schedule(a: AuditSummary) -> Schedule:
    where = f"audit {a.path}" if a.path else "audit"
    if a.noise_multiplier == 0:
        raise ValueError(f"{where}: was run without noise (noise_multiplier 0): there is no DP guarantee to report")
    # the sampler the audit file states (the audit engine samples Poisson, or full batch at q = 1)
    return Schedule.from_settings(a.noise_multiplier, a.sample_rate, a.steps, sampler=a.sampler,
                                  sampler_source="declared" if a.sampler else None)


def _same_schedule(a: Schedule, b: Schedule) -> bool:
    if len(a) != len(b):
        return False
    for (s1, q1, t1), (s2, q2, t2) in zip(a, b):
        if t1 != t2 or not math.isclose(s1, s2, rel_tol=1e-9) or not math.isclose(q1, q2, rel_tol=1e-12):
            return False
    return True


def build_report(
    mechanism: Any = None,
    *,
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    sampler: str | Sampling | None = None,
    delta: float | None = None,
    audit: Any = None,
    data: DataDescription | None = None,
    settings: ReportSettings | None = None,
    what_if: bool = True,
) -> Report:
    """Build the reconstruction-risk report of a DP-SGD run (see the module docstring).

    Args:
      mechanism: the run as :func:`rerokit.reconstruction_risk` takes it (Opacus accountant or
        history, dp-accounting ``DpEvent``, ``Schedule``); or give the keyword settings; or
        neither, with an ``audit`` (its settings are used).
      noise_multiplier: sigma > 0 of a constant run (with ``sample_rate`` and ``steps``).
      sample_rate: its sampling rate q in (0, 1].
      steps: its number of steps T >= 1.
      sampler: how the run formed batches ("poisson", "shuffle", "full_batch"), or a
        :class:`~rerokit.bounds.schedule.Sampling` with the unit of privacy; None: the mechanism's or
        the audit file's, else Poisson, assumed.
      delta: delta of epsilon, in (0, 1); None: the audit file's declared delta, else 1e-5.
      audit: a path to an audit result (JSON or JSON lines), its parsed dict, the
        :class:`~rerokit.experiments.audit_outcome.AuditOutcome` of ``run_audit(...).summary()``, or an
        :class:`~rerokit.report.inputs.AuditSummary`.
      data: the :class:`~rerokit.report.settings.DataDescription` (record shape, dataset size,
        clipping norm, smallest record norm, data diameter, MSE threshold, data range); None: nothing
        known beyond the audit.
      settings: the :class:`~rerokit.report.settings.ReportSettings` (label, source, prior sizes);
        None for the defaults.
      what_if: compute "what would change it" (six calibrations; False skips them).

    Returns:
      The :class:`Report`.

    Raises:
      ValueError / TypeError: naming the parameter and its valid range (or the file and what is
        wrong with it).
    """
    from rerokit.bounds.priors import BaselinePrior, PixelTolerancePrior, UniformDiscretePrior
    from rerokit.risk import as_schedule, reconstruction_risks

    if data is None:
        data = DataDescription()
    elif not isinstance(data, DataDescription):
        raise TypeError(f"data must be a rerokit.report.DataDescription, got {type(data).__name__}")
    if settings is None:
        settings = ReportSettings()
    elif not isinstance(settings, ReportSettings):
        raise TypeError(f"settings must be a rerokit.report.ReportSettings, got {type(settings).__name__}")
    check_bool("what_if", what_if)
    label, source, sizes = settings.label, settings.source, settings.prior_sizes
    a = _resolve_audit(audit)
    settings_given = any(x is not None for x in (noise_multiplier, sample_rate, steps))
    if mechanism is None and not settings_given and a is not None:
        smp = None if sampler is None else Sampling.of(sampler)
        # a bare sampler name keeps the audit's unit of privacy; a Sampling states its own
        k = smp.examples_per_user if isinstance(sampler, Sampling) else None
        sched = _audit_schedule(a) if smp is None else _audit_schedule(a).with_sampling(smp.sampler, k)
        src = source or (f"audit {a.path}" if a.path else "audit settings")
    else:
        sched = as_schedule(mechanism, noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                            sampler=sampler)
        src = source or ("settings" if mechanism is None else type(mechanism).__name__)
        if a is not None and not _same_schedule(sched, _audit_schedule(a)):
            where = f"audit {a.path}" if a.path else "audit"
            raise ValueError(f"{where}: was run with noise_multiplier={a.noise_multiplier!r}, sample_rate="
                             f"{a.sample_rate!r}, steps={a.steps}, not the report's settings; report the audited "
                             "run (omit the settings to take them from the audit)")
    if delta is None:  # the guarantee the audited run declared travels with its file
        delta = a.delta if a is not None and a.delta is not None else 1e-5
    delta = check_probability("delta", delta, high_open=True)
    ref = WHAT_IF_PRIOR if WHAT_IF_PRIOR in sizes else sizes[0]
    eta = data.mse_threshold
    rng = data.data_range

    # ------------------------------------------------------------- data description
    data_note = None
    shape = data.data_shape
    if shape is None and a is not None and a.dataset in DATASET_SHAPES:
        shape = DATASET_SHAPES[a.dataset]
        data_note = f"data shape of the audited dataset {a.dataset}"
    clip = data.clip
    if clip is None and a is not None and a.clip is not None:
        clip = a.clip
    C = None if clip is None else check_positive("clip", clip)
    r_given = data.min_norm
    n_data = data.dataset_size
    D = data.diameter
    dim = math.prod(shape) if shape else None

    # ------------------------------------------------------------- one curve, every prior
    keys: list[str] = [f"prior_{n}" for n in sizes]
    priors: list[Any] = [UniformDiscretePrior(n) for n in sizes]
    if dim is not None:
        keys.append("pixel_tolerance")
        priors.append(PixelTolerancePrior(dim, PIXEL_TOLERANCE))
    mse_lk = None
    if dim is not None:  # certified counterpart of the gradient-inversion laws: a continuous data prior
        from rerokit.bounds.uninformed_scope import log_kappa_uniform_cube

        mse_lk = log_kappa_uniform_cube(dim, eta, rng)
        if math.isfinite(mse_lk):
            keys.append("informed_mse")
            priors.append(BaselinePrior(log_kappa=mse_lk))
    audit_key = None
    if a is not None:
        audit_key = next((f"prior_{n}" for n in sizes if 1.0 / n == a.kappa), None)
        if audit_key is None:
            audit_key = "audit_prior"
            keys.append(audit_key)
            priors.append(BaselinePrior(a.kappa))
    rs = reconstruction_risks(sched, priors, delta=delta)
    risks = dict(zip(keys, rs))
    r0 = risks[f"prior_{ref}"]

    informed: dict[str, InformedRow] = {}
    for k, pr, r in zip(keys, priors, rs):
        if k in ("audit_prior", "informed_mse"):
            continue
        common = dict(prior=r.prior, kappa=r.kappa, log10_kappa=r.log10_kappa, gamma=r.gamma,
                      gamma_interval=tuple(r.gamma_interval), gamma_error=r.gamma_error, advantage=r.advantage,
                      mu_equivalent=r.mu_equivalent, method=r.method)
        if isinstance(pr, UniformDiscretePrior):
            informed[k] = DiscretePriorRow(prior_size=pr.n, **common)
        else:
            informed[k] = PixelToleranceRow(dim=dim, data_shape=tuple(shape), tolerance_per_pixel=PIXEL_TOLERANCE,
                                            **common)

    if r0.mu_gdp is not None:
        gdp = GdpFacts(mu=r0.mu_gdp, kind="mu_gdp", exact=True,
                       explanation="full batch: the run is exactly mu-GDP (mu = sqrt(sum T_i / sigma_i^2))"
                       if sched.sampler != "shuffle" else "shuffled batches, no amplification: mu = k sqrt(epochs) / "
                       "sigma (zero-out neighbours)")
    else:
        gdp = GdpFacts(mu=r0.mu_equivalent, kind="mu_equivalent", exact=False, kappa=r0.kappa,
                       explanation=f"Poisson sampling: the mu of the Gaussian mechanism with the same gamma at kappa = "
                                   f"1/{ref} (Phi^-1(gamma) - Phi^-1(kappa)); not a GDP guarantee at other kappa")

    from rerokit.report.facts import privacy_facts
    from rerokit.report.glossary import privacy_level

    lv = privacy_level(r0.epsilon, delta)
    one = len(sched) == 1
    seg = sched.segments[0]
    run = RunSettings(noise_multiplier=seg[0] if one else None, sample_rate=seg[1] if one else None,
                      steps=seg[2] if one else None, schedule=None if one else tuple(map(tuple, sched.as_triples())),
                      total_steps=sched.total_steps, source=src, **sched.sampling_dict())
    facts = DataFacts(shape=tuple(shape) if shape else None, dim=dim, dataset_size=n_data, clip=C, diameter=D,
                      mse_threshold=eta, data_range=rng, source=data_note,
                      expected_batch_size=seg[1] * n_data if n_data is not None and one else None,
                      epochs=seg[1] * seg[2] if n_data is not None and one else None)
    m = r0.membership
    membership = MembershipFacts(
        advantage=m.advantage, advantage_interval=tuple(m.advantage_interval),
        tpr_at_fpr=tuple(TprPoint(fpr=f, tpr=m.tpr_at_fpr[f], interval=tuple(m.tpr_intervals[f]))
                         for f in m.tpr_at_fpr),
        bayes_accuracy=m.bayes_accuracy, bayes_accuracy_interval=tuple(m.bayes_accuracy_interval),
        prior_membership=m.prior_membership, adjacency=m.adjacency)
    pa = r0.poisson_assumption  # the Poisson accountant's numbers, not certified for this run
    uninformed = _uninformed(sched, dim, C, r_given, eta, rng)
    informed_mse = None
    if "informed_mse" in risks:
        rm = risks["informed_mse"]
        informed_mse = InformedMseSection(
            kind="certified", prior=f"pixels uniform on [0, {rng:g}]^{dim} (Anderson + Chernoff upper bound on "
            "kappa)", dim=dim, mse_threshold=eta, kappa=rm.kappa, log10_kappa=rm.log10_kappa,
            gamma=rm.gamma, gamma_interval=tuple(rm.gamma_interval), method=rm.method,
            population="a target drawn from the prior", reference="Hayes et al. 2023, Thm 2")
    notes = []
    if n_data is not None and delta >= 1.0 / n_data:
        notes.append(f"delta = {delta:g} is not below 1/N = {1.0 / n_data:.3g}: epsilon at this delta allows "
                     "leaking a record outright; choose delta < 1/N")
    if isinstance(uninformed, Skipped):
        notes.append("uninformed adversary: " + uninformed.skipped)
    else:
        best = uninformed.no_prior_attacks.best_known
        if informed_mse is not None and best > informed_mse.gamma:
            notes.append(f"gradient inversion: on a record of norm r = {uninformed.min_norm:g} a prior-free "
                         f"attack succeeds with probability {best:.4g}; the certified bound "
                         f"{informed_mse.gamma:.4g} is about a target drawn from the uniform-pixel prior, for "
                         "which records that close to the guess are rare. No bound below 1 holds for one fixed "
                         "record against every attacker (a fixed guess equal to it succeeds)")
    from rerokit import __version__

    out = ReportData(
        schema_version=SCHEMA_VERSION,
        title="DP-SGD reconstruction-risk report",
        label=label,
        settings=run,
        delta=delta,
        epsilon=r0.epsilon,
        level=LevelFacts(name=lv.name, tier=lv.tier, epsilon=lv.epsilon, delta=lv.delta, basis=lv.basis,
                         references=lv.references),
        gdp=gdp,
        data=facts,
        informed=informed,
        membership=membership,
        privacy_facts=privacy_facts(sched, delta, r0.method),
        poisson_assumption=None if pa is None else PoissonAssumptionView(
            gamma=pa.gamma, epsilon=pa.epsilon, delta=pa.delta, kind="assumption", note=pa.note),
        # the guarantee the audited run declared
        declared_guarantee=(DeclaredGuarantee(epsilon=a.target_epsilon, delta=a.delta, source=src)
                            if a is not None and a.target_epsilon is not None else None),
        uninformed=uninformed,
        informed_mse=informed_mse,
        guo_mse=_guo(sched, D, dim),
        audit=_audit_section(a, risks[audit_key], delta, sched, membership) if a is not None else None,
        what_would_change=(_what_if(sched, r0, ref, delta) if what_if else
                           Skipped(skipped="not requested (rerokit report --what-if computes it)")),
        options=ReportOptions(prior_sizes=tuple(sizes), reference_prior_size=ref, pixel_tolerance=PIXEL_TOLERANCE,
                              what_if_margins=tuple(WHAT_IF_MARGINS)),
        notes=tuple(notes),
        rerokit_version=__version__,
    )
    out = dataclasses.replace(out, verdict=tuple(VerdictLine(threat_model=t, text=_plain(s))
                                                 for t, s in verdict_sentences(out)))
    out = dataclasses.replace(out, key_numbers=key_numbers(out))
    return Report(out, risks, sched, a)


def _plain(s: Sentence) -> str:
    from rerokit.report.format import plain

    return plain(s)


def _uninformed(sched: Schedule, dim: int | None, clip: float | None, min_norm: float | None, eta: float,
                data_range: float) -> UninformedSection | Skipped:
    """Riess et al.'s (2024) bounds, as ``rerokit bound uninformed`` computes them."""
    if dim is None:
        return Skipped(skipped="give --data-shape (the data dimension N) for the gradient-inversion bounds")
    if min_norm is None and clip is None:
        return Skipped(skipped="give --clip (assumes every record has norm >= C) or --min-norm for the "
                               "gradient-inversion bounds")
    from rerokit.bounds import uninformed as U
    from rerokit.bounds.uninformed_scope import ATTACK_LAW, no_prior_attacks

    r = min_norm if min_norm is not None else clip
    source = "--min-norm" if min_norm is not None else "clip (assumes C <= min ||X||)"
    sigma = min(s for s, _, _ in sched.segments)  # the least noisy release is the worst case
    b = LogBound.of(U.mse_rero(eta, sigma, dim, min_norm=r, clip=clip))
    over: dict[str, Any] = {"gamma_over_steps": None,
                            "over_steps_note": "a schedule with several segments: only the least noisy single "
                                               "release is bounded"}
    if len(sched) == 1:
        _, q, T = sched.segments[0]
        if sched.sampler == "shuffle":  # the record is in exactly one step of each epoch it touches
            from rerokit.bounds.schedule import epochs_touched

            e = epochs_touched(q, T)
            bt = U.mse_rero(eta, sigma, dim, min_norm=r, releases=e)
            over = dict(steps=T, sampling_rate=q, gamma_over_steps=bt.value, expected_releases=float(e))
        else:
            bt = U.mse_rero_over_steps(eta, sigma, dim, T, q, min_norm=r)
            over = dict(steps=T, sampling_rate=q, gamma_over_steps=bt.value, expected_releases=T * q)
    # the laws are those of ONE attack (the optimal unbiased one), not bounds on every attacker
    return UninformedSection(
        noise_multiplier=sigma, dim=dim, min_norm=r, min_norm_source=source, clip=clip, mse_threshold=eta,
        psnr_threshold_db=10.0 * math.log10(data_range * data_range / eta), data_range=data_range,
        gamma=b.value, gamma_error=b.error, log10_gamma=b.log10_value,
        expected_mse=U.expected_mse(sigma, r, 1), ncc_bound=U.ncc_bound(sigma, dim, 1),
        optimal_rows=U.optimal_rows(clip, r) if clip is not None else None,
        kind=ATTACK_LAW, attack="optimal unbiased analytic gradient inversion (Riess et al. 2024, Thm 2)",
        no_prior_attacks=NoPriorAttacksView.of(no_prior_attacks(eta, sigma, r, dim)), **over)


def _guo(sched: Schedule, diameter: float | None, dim: int | None) -> GuoSection | Skipped:
    """Guo et al. 2022 Thm 1, as ``rerokit bound mse-rdp`` computes it for DP-SGD."""
    if diameter is None:
        return Skipped(skipped="give --diameter (per-coordinate range of the data) for Guo et al.'s MSE bound")
    from rerokit.accounting.events import replace_one_rdp_order2
    from rerokit.bounds.mse import rdp_mse_lower_bound

    r = replace_one_rdp_order2(sched)  # Thm 1 compares replace-one neighbours (sensitivity 2C)
    b = rdp_mse_lower_bound(r.epsilon, diameter, dim)
    return GuoSection(mse_lower_bound=b.value, error=b.error, epsilon_rdp2=r.epsilon, order_used=r.order,
                      neighbouring_relation=r.relation, rdp_method=r.method, diameter=diameter, dim=b.inputs["dim"],
                      attack="unbiased", reference="Guo et al. 2022, Thm 1")


def _audit_section(a: AuditSummary, risk: Any, delta: float, sched: Schedule,
                   membership: MembershipFacts) -> AuditSection:
    """The audit against the bound gamma at its kappa, and the empirical lower bounds it proves
    (a one-run audit: against what the certified curve implies for its game, ``one_run_view``)."""
    base = a.run_fields()  # every AuditRun field, as read
    gamma_interval = tuple(risk.gamma_interval)
    # a mean of a single per-trial probability has no interval: no verdict on consistency then
    consistent = None if (not a.binomial and a.trials < 2) else bool(a.interval[0] <= risk.gamma)
    d = a.delta if a.delta is not None else delta
    certified_mu = risk.mu_gdp if risk.mu_gdp is not None else risk.mu_equivalent
    mu_kind = "mu_gdp" if risk.mu_gdp is not None else "mu_equivalent"
    if a.one_run is not None:  # a one-run audit proves its bounds with its own analysis (one_run_bound)
        from rerokit.experiments.onerun import report_fields
        from rerokit.report.onerun import one_run_view

        f = report_fields(a.one_run)
        v = one_run_view(a.one_run, membership, risk.gamma, list(risk.gamma_interval))
        if f["certified_mu"] is not None:  # the one-run audit's sqrt(T)/sigma (x2 replace-one): a Gaussian-DP mu
            certified_mu, mu_kind = f["certified_mu"], "mu_gdp"  # (an upper one at q < 1)
        # the all-slot accuracy is compared with the per-slot bound of the game it played
        return OneRunAudit(
            **base, one_run=a.one_run, gamma=v.per_slot_bound.value, gamma_interval=tuple(v.per_slot_bound.interval),
            consistent=f["consistent"], lower_bounds=OneRunProvenBounds(**f["lower_bounds"]),
            certified_mu=certified_mu, certified_mu_kind=mu_kind, certified_epsilon=f["certified_epsilon"],
            certified_epsilon_delta=v.delta, one_run_view=v,
            consistent_meaning="the run's own claimed curve is not rejected")
    if not a.binomial:
        return MeanAudit(**base, gamma=risk.gamma, gamma_interval=gamma_interval, consistent=consistent,
                         lower_bounds_note="the gradient audit's success is a mean of per-trial probabilities, not "
                                           "a count of successes: no Clopper-Pearson lower bound on epsilon")
    from rerokit.bounds.empirical import audit_lower_bounds

    lb = audit_lower_bounds(a.successes, a.trials, a.kappa, delta=d)
    if d == delta:
        eps = risk.epsilon
    else:
        from rerokit.bounds.certify import certified_epsilon

        eps = certified_epsilon(sched, d)
    return BinomialAudit(**base, gamma=risk.gamma, gamma_interval=gamma_interval, consistent=consistent,
                         lower_bounds=ProvenBounds.from_dict(lb), certified_mu=certified_mu,
                         certified_mu_kind=mu_kind, certified_epsilon=eps, certified_epsilon_delta=d)


def _what_if(sched: Schedule, r0: Any, ref: int, delta: float) -> WhatIfSection | Skipped:
    """sigma (same q, T) and steps (same sigma, q) for gamma <= kappa + margin at a prior of ``ref``."""
    if len(sched) != 1:
        return Skipped(skipped="a schedule with several segments: calibrate one segment with 'rerokit calibrate "
                               "dpsgd'")
    from rerokit.bounds.calibrate import calibrate_noise_multiplier, calibrate_steps

    s, q, T = sched.segments[0]
    kappa = 1.0 / ref
    from rerokit.bounds.schedule import Sampling

    samp = {"sampler": Sampling(sched.sampler, sched.examples_per_user)}
    rows = []
    for m in WHAT_IF_MARGINS:
        tgt = kappa + m
        if not kappa < tgt < 1.0:
            continue
        row: dict[str, Any] = {"target_gamma": tgt}
        try:
            c = calibrate_noise_multiplier(tgt, q, T, prior=ref, delta=delta, **samp)
            row.update(noise_multiplier=c.noise_multiplier, epsilon=c.epsilon, gamma_at_noise_multiplier=c.gamma)
        except ValueError as exc:
            row.update(noise_multiplier=None, noise_multiplier_note=str(exc))
        try:
            c = calibrate_steps(tgt, s, q, prior=ref, delta=None, **samp)
            row.update(steps=c.steps, steps_capped=c.capped, gamma_at_steps=c.gamma)
        except ValueError as exc:
            row.update(steps=None, steps_note=str(exc))
        rows.append(WhatIfTarget(**row))
    return WhatIfSection(prior_size=ref, kappa=kappa, gamma=r0.gamma, noise_multiplier=s, sample_rate=q, steps=T,
                         targets=tuple(rows))


# --------------------------------------------------------------------------- words


_METHOD = {
    "exact": "Hayes et al. 2023 Thm 2, PLD",
    "closed-form": "Hayes et al. 2023 Thm 2, closed form",
    "envelope": "Hayes et al. 2023 Thm 2, envelope",
}


def run_words(d: ReportData | dict[str, Any]) -> str:
    """The run in words ("DP-SGD with sigma = 1, q = 0.01, T = 1000 steps").

    Args:
      d: the report (:class:`~rerokit.report.model.ReportData` or its dict).

    Returns:
      The phrase.
    """
    st = as_report_data(d).settings
    if st.schedule is not None:
        return f"A DP-SGD schedule of {len(st.schedule)} segments ({st.total_steps} steps in total)"
    return (f"DP-SGD with \u03c3 = {fmt(st.noise_multiplier)}, q = {fmt(st.sample_rate)}, T = {st.steps} "
            + ("step" if st.steps == 1 else "steps"))


THREATS = {
    "level": "Level",
    "informed": "Reconstruction, informed adversary",
    "pixel_tolerance": "Reconstruction, pixel tolerance",
    "membership": "Membership inference",
    "uninformed": "Gradient inversion, no prior",
    "informed_mse": "Reconstruction, MSE threshold",
    "guo_mse": "Error view",
    "audit": "Audit",
}
"""Verdict ids (``threat_model`` in the JSON verdict, ``data-threat`` in the HTML card) and titles."""

SCHEMA_VERSION = 2
"""Version of the JSON of ``rerokit report --json`` (``schema_version``; the schema file is
``rerokit/report/report.schema.json``). 2: membership TPRs as ``{fpr, tpr, interval}`` objects,
dotless ``key_numbers``, ``level``, odds in the verdict."""


def _odds_num(key: str | None, p: float, log10: float | None = None) -> Num:
    from rerokit.report.format import odds

    return Num(None, p, odds(p, log10))


def _chance(k: float, log10: float | None = None) -> str:
    from rerokit.report.format import chance

    return chance(k, log10)


def _against(n_attempts: str, kappa: float, log10: float | None = None) -> str:
    """', against 10 by chance' (same denominator as the odds) or ', against 1 in 3.4e38 by chance'."""
    c = _chance(kappa, log10)
    if n_attempts.endswith(" in 100") and c.endswith(" in 100"):
        c = c[: -len(" in 100")]
    return f", against {c} by chance"


def _vs(e: DiscretePriorRow) -> str:
    """'2 candidates: 83 in 100 vs 50 by chance' for one prior's entry."""
    o = _odds_num(None, e.gamma).text
    return f"{e.prior_size} candidates: {o}" + _against(o, e.kappa)[1:].replace("against", "vs")


def verdict_sentences(d: ReportData | dict[str, Any]) -> list[tuple[str, Sentence]]:
    """One line per threat model in odds against the blind guess, after the run's level.

    The odds (Nanayakkara et al. 2023: "at most 37 in 100 attempts, against 10 by chance") round
    the certified bound up, so they never understate it; the exact numbers are in the table.

    Args:
      d: the report (:class:`~rerokit.report.model.ReportData`, or its dict :meth:`Report.to_dict`).

    Returns:
      ``(threat_model, sentence)`` pairs (ids of :data:`THREATS`; the first is the level).
    """
    d = as_report_data(d)
    out: list[tuple[str, Sentence]] = []
    lv = d.level
    out.append(("level", (
        Lead("Level: "), f"{lv.name} \u2014 (\u03b5 = {fmt(d.epsilon)}, \u03b4 = {fmt(d.delta)})-DP on the "
        f"{lv.basis}.",
    )))
    discrete = d.discrete_priors
    if discrete:
        ref = f"prior_{d.options.reference_prior_size}"
        main = ref if ref in discrete else next(iter(discrete))
        e = discrete[main]
        o = _odds_num(None, e.gamma)
        parts: list[Any] = [Lead("Reconstruction, informed adversary: "),
                            f"knowing every other training record and that the target is one of {e.prior_size} "
                            "equally likely candidates, it picks the target at most ", o, " attempts",
                            _against(o.text, e.kappa)]
        others = [k for k in discrete if k != main]
        if others:
            parts.append(" (" + "; ".join(_vs(discrete[k]) for k in others) + ")")
        parts.append(".")
        out.append(("informed", tuple(parts)))
    px = d.pixel_tolerance
    if px is not None:
        o = _odds_num(None, px.gamma)  # gamma of a pixel tolerance is a float: no log10 needed
        out.append(("pixel_tolerance", (
            Lead("Reconstruction, pixel tolerance: "),
            f"rebuilding a whole {_shape_text(px.data_shape)} image to within 32/256 per pixel succeeds at most ",
            o, " attempts", _against(o.text, px.kappa, px.log10_kappa), ".",
        )))
    pt = d.membership.tpr_at(0.01)
    if pt is not None:
        o = _odds_num(None, pt.tpr)
        out.append(("membership", (
            Lead("Membership inference: "), "a test of \"was this record in training?\" that wrongly flags 1 in 100 "
            "non-members catches at most ", o, " members (a coin with the same false alarms: 1 in 100).",
        )))
    u = d.uninformed
    if isinstance(u, UninformedSection):
        assume = f"records with L2 norm \u2265 {fmt(u.min_norm)}"
        parts = [Lead("Gradient inversion, no prior: "), f"the best-known attack of a malicious server ({assume}; the "
                 "optimal unbiased analytic attack, Riess et al. 2024) reconstructs a record to MSE "
                 f"\u2264 {fmt(u.mse_threshold)} (PSNR \u2265 {fmt(u.psnr_threshold_db, 3)} dB) in "]
        if u.gamma_over_steps is not None:
            parts += [_odds_num(None, u.gamma_over_steps), f" attempts averaging all {u.steps} steps, ",
                      _odds_num(None, u.gamma, u.log10_gamma), " from one release"]
        else:
            parts += [_odds_num(None, u.gamma, u.log10_gamma), " attempts from one release"]
        parts.append(" \u2014 the law of that attack, not a bound on every attacker")
        npa = u.no_prior_attacks
        if npa.best_known > u.gamma:
            parts += [f"; without any prior, the {npa.best_known_attack} does better from one release: ",
                      _odds_num(None, npa.best_known), " attempts"]
        parts.append(".")
        out.append(("uninformed", tuple(parts)))
    im = d.informed_mse
    if im is not None:
        o = _odds_num(None, im.gamma)  # a certified gamma is a float: no log10 needed
        out.append(("informed_mse", (
            Lead("Reconstruction, MSE threshold: "), "a record drawn from a prior of pixels uniform on "
            f"[0, {fmt(u.data_range if isinstance(u, UninformedSection) else 1.0)}] is rebuilt to MSE \u2264 "
            f"{fmt(im.mse_threshold)} by any attacker at most ", o, " attempts",
            _against(o.text, im.kappa, im.log10_kappa), ".",
        )))
    g = d.guo_mse
    if isinstance(g, GuoSection):
        out.append(("guo_mse", (
            Lead("Error view: "), "an unbiased attacker's reconstruction is off by a mean squared error of at least ",
            num(None, g.mse_lower_bound), f" per value (data diameter {fmt(g.diameter)}).",
        )))
    au = d.audit
    if isinstance(au, OneRunAudit):
        from rerokit.report.onerun import one_run_sentence

        out.append(("audit", one_run_sentence(au.one_run_view)))
    elif au is not None:
        lo, hi = au.interval
        parts = [Lead("Audit: "), f"the {au.attack} attack succeeded in ",
                 f"{fmt(100 * au.success, 3)} of 100 trials ({au.trials} run; 95% CI "
                 f"{math.floor(100 * lo)}\u2013{math.ceil(100 * hi)}), where the bound allows at most ",
                 _odds_num(None, au.gamma)]
        if au.consistent:
            parts.append(" \u2014 consistent with the bound.")
        elif au.consistent is None:
            parts.append(" (one trial: no interval, no verdict).")
        else:
            parts.append(" \u2014 ABOVE the bound: the audit contradicts the certified guarantee (check that it audited "
                         "these settings).")
        out.append(("audit", tuple(parts)))
    return out


def tiles(d: ReportData | dict[str, Any]) -> list[tuple[str, Sentence, Sentence]]:
    """The key-number tiles of the HTML card: ``(label, big number, line below)``.

    Args:
      d: the report (:class:`~rerokit.report.model.ReportData` or its dict).

    Returns:
      The tiles (reconstruction at the reference prior, membership TPR at 1% FPR, epsilon and mu,
      gradient inversion when computed, the audit when given).
    """
    d = as_report_data(d)
    ref = d.options.reference_prior_size
    e = d.informed[f"prior_{ref}"]
    m = d.membership
    gdp = d.gdp
    pt = m.tpr_at(0.01)
    out: list[tuple[str, Sentence, Sentence]] = [
        (f"Reconstruction, prior of {ref}", ("\u2264 ", num(f"gamma_prior_{ref}", e.gamma)),
         ("blind guess \u03ba = ", num(f"kappa_prior_{ref}", e.kappa))),
    ]
    if pt is not None:
        out.append(("Membership TPR at FPR 1%", ("\u2264 ", num("membership_tpr_at_fpr_0p01", pt.tpr)),
                    ("advantage \u2264 ", num("membership_advantage", m.advantage))))
    out.append((f"\u03b5 at \u03b4 = {fmt(d.delta)}", ("\u2264 ", num("epsilon", d.epsilon)),
                ("\u03bc = " if gdp.exact else "\u03bc-equivalent = ",
                 num("mu_gdp" if gdp.exact else "mu_equivalent", gdp.mu))))
    u = d.uninformed
    im = d.informed_mse
    if im is not None and isinstance(u, UninformedSection):
        # the certified number; the attack law is what the best-known attack achieves
        best = max(u.gamma, u.no_prior_attacks.best_known)
        out.append((f"Gradient inversion, P(MSE \u2264 {fmt(im.mse_threshold)})",
                    ("\u2264 ", num("gamma_informed_mse", im.gamma)),
                    ("certified, target from a uniform-pixel prior; best-known attack on a record of norm r: ",
                     num(None, best))))
    elif isinstance(u, UninformedSection):
        if u.gamma_over_steps is not None:
            out.append((f"Gradient inversion, P(MSE \u2264 {fmt(u.mse_threshold)})",
                        ("= ", num("uninformed_p_mse_over_steps", u.gamma_over_steps)),
                        (f"attack law, all {u.steps} steps; one release ",
                         num("uninformed_p_mse_one_release", u.gamma, log10=u.log10_gamma))))
        else:
            out.append((f"Gradient inversion, P(MSE \u2264 {fmt(u.mse_threshold)})",
                        ("= ", num("uninformed_p_mse_one_release", u.gamma, log10=u.log10_gamma)),
                        ("one release; attack law",)))
    au = d.audit
    if isinstance(au, OneRunAudit):
        from rerokit.report.onerun import one_run_tile

        out.append(one_run_tile(au.one_run_view))
    elif au is not None:
        out.append((f"Audit success ({au.attack})", (num("audit_success", au.success),),
                    ("bound ", num("audit_gamma", au.gamma))))
    return out


def key_numbers(d: ReportData | dict[str, Any]) -> dict[str, Any]:
    """The numbers the HTML card marks with ``data-key``, by key (dotless: ``membership_tpr_at_fpr_0p01``).

    Args:
      d: the report (:class:`~rerokit.report.model.ReportData` or its dict).

    Returns:
      ``{key: value}`` (e.g. ``gamma_prior_10``, ``kappa_prior_10``, ``epsilon``, ``membership_advantage``).
    """
    d = as_report_data(d)
    out: dict[str, Any] = {}

    def take(parts: Any) -> None:
        for p in parts if isinstance(parts, tuple) else (parts,):
            if isinstance(p, Num) and p.key:
                out[p.key] = p.value

    for _, s in verdict_sentences(d):
        take(s)
    for r in table_rows(d):
        take(r.value)
    for _, big, sub in tiles(d):
        take(big)
        take(sub)
    wc = what_if_table(d)
    for row in wc.rows if wc is not None else ():
        for x in row:
            take(x)
    for k, e in d.informed.items():
        out[f"kappa_{k}"] = e.kappa
        out[f"log10_kappa_{k}"] = e.log10_kappa
    if d.informed_mse is not None:
        out["kappa_informed_mse"] = d.informed_mse.kappa
    return out


def report_summary(d: ReportData | dict[str, Any]) -> Summary:
    """Verdict, table of quantities, "what would change it", glossary and notes of a report.

    Args:
      d: the report (:class:`~rerokit.report.model.ReportData`, or its dict :meth:`Report.to_dict`,
        also what ``rerokit report --json`` prints).

    Returns:
      The :class:`~rerokit.report.terminal.Summary` the terminal and the HTML card render; its
      title names the run, its notes end with the glossary of the symbols shown.
    """
    from rerokit.report.facts import facts_line
    from rerokit.report.format import plain
    from rerokit.report.glossary import glossary_for

    d = as_report_data(d)
    # the privacy-facts header first (rerokit.report.facts)
    verdict = (facts_line(d.privacy_facts),) + tuple(s for _, s in verdict_sentences(d))
    rows = tuple(table_rows(d))
    tables = []
    wc = what_if_table(d)
    if wc is not None:
        tables.append(wc)
    title = (d.label + " \u2014 " if d.label else "") + d.title + ": " + run_words(d) + "."
    texts = [plain(v) for v in verdict] + [title] + [f"{r.label} {r.method} {r.section or ''}" for r in rows]
    texts += [" ".join(t.columns) + " " + (t.title or "") for t in tables]
    gl = glossary_for(texts)
    return Summary(verdict=verdict, rows=rows, tables=tuple(tables), notes=tuple(d.notes), title=title,
                   glossary=tuple(gl))


def table_rows(d: ReportData | dict[str, Any]) -> list[Row]:
    """Every number of the report with its method and whether it is certified (see :class:`Row`).

    Args:
      d: the report (:class:`~rerokit.report.model.ReportData` or its dict).

    Returns:
      The rows, grouped by threat model (``section`` on the first row of each group).
    """
    d = as_report_data(d)
    rows: list[Row] = []
    first = True
    for k, e in d.informed.items():
        if isinstance(e, DiscretePriorRow):
            what = f"\u03b3, prior of {e.prior_size} (\u03ba = {fmt(e.kappa)})"
        else:
            what = (f"\u03b3, any {_shape_text(e.data_shape)} image \u00b1 32/256 "
                    f"(\u03ba = {fmt_log10(e.log10_kappa)})")
        rows.append(Row(what, ("\u2264 ", num(f"gamma_{k}", e.gamma)), fmt_bracket(e.gamma_interval),
                        _METHOD.get(e.method, e.method), "certified",
                        section="Informed adversary" if first else None))
        first = False
    m = d.membership
    first = True
    for pt in m.tpr_at_fpr:
        f = pt.fpr
        rows.append(Row(f"TPR at FPR {_pct(f)}", ("\u2264 ", num(f"membership_tpr_at_fpr_{key_part(f)}", pt.tpr)),
                        fmt_bracket(pt.interval), "f-DP curve, same PLD", "certified",
                        section="Membership inference" if first else None))
        first = False
    rows.append(Row("advantage (TPR \u2212 FPR)", ("\u2264 ", num("membership_advantage", m.advantage)),
                    fmt_bracket(m.advantage_interval), "same curve (TV)", "certified"))
    rows.append(Row("accuracy (Bayes, prior 1/2)", ("\u2264 ", num(None, m.bayes_accuracy)),
                    fmt_bracket(m.bayes_accuracy_interval), "same curve",
                    "certified"))
    rows.append(Row(f"\u03b5 at \u03b4 = {fmt(d.delta)}", ("\u2264 ", num("epsilon", d.epsilon)), "",
                    "PLD, both directions", "certified", section="Differential privacy"))
    gdp = d.gdp
    if gdp.exact:
        shuffled = d.settings.sampler == "shuffle"
        rows.append(Row("\u03bc (Gaussian DP, " + ("shuffled, no amplification)" if shuffled else "full batch)"),
                        ("= ", num("mu_gdp", gdp.mu)), "",
                        "k \u221a(epochs)/\u03c3" if shuffled else "\u221a(\u03a3 T/\u03c3\u00b2), q = 1", "exact"))
    else:
        rows.append(Row(f"\u03bc-equivalent at \u03ba = {fmt(gdp.kappa)}", ("\u2264 ", num("mu_equivalent", gdp.mu)),
                        "", "\u03a6\u207b\u00b9(\u03b3) \u2212 \u03a6\u207b\u00b9(\u03ba)", "certified"))
    u = d.uninformed
    if isinstance(u, UninformedSection):
        sec = f"Uninformed adversary (r = {fmt(u.min_norm)}, N = {u.dim})"
        law = "attack law"
        rows.append(Row(f"P(MSE \u2264 {fmt(u.mse_threshold)}), one release, unbiased attack",
                        ("= ", num("uninformed_p_mse_one_release", u.gamma, log10=u.log10_gamma)), "",
                        "Riess et al. 2024 Prop. 3", law, section=sec))
        if u.gamma_over_steps is not None:
            rows.append(Row(f"P(MSE \u2264 {fmt(u.mse_threshold)}), all {u.steps} steps averaged",
                            ("= ", num("uninformed_p_mse_over_steps", u.gamma_over_steps)), "",
                            "Riess et al. 2024 Sec. 4.3 + Prop. 7", law))
        rows.append(Row("Expected MSE, one release", ("= ", num("uninformed_expected_mse", u.expected_mse)), "",
                        "Riess et al. 2024 Prop. 2: \u03c3\u00b2 r\u00b2", law))
        rows.append(Row("NCC, one release", ("\u2264 ", num("uninformed_ncc", u.ncc_bound)), "",
                        "Riess et al. 2024 Prop. 6", law))
        npa = u.no_prior_attacks
        rows.append(Row(f"P(MSE \u2264 {fmt(u.mse_threshold)}), constant guess 0", ("= ", num(None, npa.zero_guess)),
                        "", "\u2016X\u2016\u00b2/N \u2264 \u03b7", law))
        bs = npa.best_shrinkage
        rows.append(Row(f"P(MSE \u2264 {fmt(u.mse_threshold)}), shrinkage {fmt(bs.factor)} X\u0302",
                        ("= ", num(None, bs.success)), "", "non-central \u03c7\u00b2", law))
    im = d.informed_mse
    if im is not None:
        rows.append(Row(f"\u03b3, MSE \u2264 {fmt(im.mse_threshold)}, pixels uniform (\u03ba \u2264 "
                        f"{fmt_log10(im.log10_kappa)})", ("\u2264 ", num("gamma_informed_mse", im.gamma)),
                        fmt_bracket(im.gamma_interval), _METHOD.get(im.method, im.method), "certified",
                        section="Informed adversary, MSE threshold (continuous prior)"))
    pa = d.poisson_assumption
    if pa is not None:
        at = fmt(gdp.kappa) if gdp.kappa is not None else "0.1"
        rows.append(Row(f"\u03b3 at \u03ba = {at} if the batches had been Poisson-sampled", ("", num(None, pa.gamma)),
                        "", "Poisson accountant", "assumption", section="Not met by this run"))
        rows.append(Row(f"\u03b5 at \u03b4 = {fmt(pa.delta)} if Poisson-sampled", ("", num(None, pa.epsilon)), "",
                        "Poisson accountant", "assumption"))
    g = d.guo_mse
    if isinstance(g, GuoSection):
        rows.append(Row("MSE of an unbiased attacker", ("\u2265 ", num("guo_mse_lower_bound", g.mse_lower_bound)), "",
                        f"Guo et al. 2022 Thm 1, replace-one (2, {fmt(g.epsilon_rdp2)})-RDP", "certified",
                        section="Released model (error view)"))
    au = d.audit
    if isinstance(au, OneRunAudit):
        from rerokit.report.onerun import one_run_rows

        rows.extend(one_run_rows(au.one_run_view))
    elif au is not None:
        rows.append(Row(f"Attack success ({au.attack}, {au.trials} trials)", num("audit_success", au.success),
                        "95% CI " + fmt_bracket(au.interval, 4),
                        "Clopper-Pearson" if au.successes is not None else "Student-t on the mean",
                        "estimate", section=f"Audit (\u03ba = {fmt(au.kappa)})"))
        same = next((k for k, e in d.informed.items() if e.kappa == au.kappa), None)
        if same is None:  # else it is the informed row of that prior (the same number, shown once)
            rows.append(Row(f"Bound at the audit's \u03ba = {fmt(au.kappa)}",
                            ("\u2264 ", num("audit_gamma", au.gamma)), fmt_bracket(au.gamma_interval),
                            "Hayes et al. 2023 Thm 2, PLD", "certified"))
        lb = au.lower_bounds
        if lb is not None:
            rows.append(Row("\u03b5 proven by the audit", ("\u2265 ", num("audit_epsilon_lower", lb.epsilon_lower)), "",
                            "log((s_lo \u2212 \u03b4)/\u03ba)", "empirical (95%)"))
            rows.append(Row("\u03bc proven by the audit", ("\u2265 ", num("audit_mu_lower", lb.mu_gdp_lower)), "",
                            "\u03a6\u207b\u00b9(s_lo) \u2212 \u03a6\u207b\u00b9(\u03ba)", "empirical (95%)"))
    return rows


def what_if_table(d: ReportData | dict[str, Any]) -> Table | None:
    """The "what would change it" table.

    Args:
      d: the report (:class:`~rerokit.report.model.ReportData` or its dict).

    Returns:
      The :class:`~rerokit.report.terminal.Table`, or None when it was skipped.
    """
    wc = as_report_data(d).what_would_change
    if isinstance(wc, Skipped) or not wc.targets:
        return None
    rows = []
    for t in wc.targets:
        if t.noise_multiplier is not None:
            sig: Any = num(f"noise_multiplier_for_gamma_{key_part(t.target_gamma)}", t.noise_multiplier)
        else:
            sig = "any" if "every noise" in (t.noise_multiplier_note or "") else "none"
        eps = fmt(t.epsilon) if t.noise_multiplier is not None else ""
        if t.steps is not None:
            st: Any = num(f"steps_for_gamma_{key_part(t.target_gamma)}", t.steps)
            if t.steps_capped:
                st = Num(st.key, st.value, "\u2265 " + st.text)
        else:
            st = "none"
        rows.append((f"\u2264 {fmt(t.target_gamma)}", sig, eps, st))
    title = (f"Prior of {wc.prior_size} (now \u03b3 \u2264 {fmt(wc.gamma)}): the noise multiplier for the same "
             f"q = {fmt(wc.sample_rate)} and T = {wc.steps}, or the steps for the same \u03c3 = "
             f"{fmt(wc.noise_multiplier)}, that keep \u03b3 below a target")
    return Table(title, ("target \u03b3", "\u03c3 needed (same q, T)", "\u03b5 at that \u03c3", "steps allowed (same \u03c3, q)"),
                 tuple(rows))
