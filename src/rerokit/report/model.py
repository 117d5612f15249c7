"""The typed content of a built report: one frozen dataclass per section of ``rerokit report --json``.

:func:`rerokit.report.build.build_report` builds a :class:`ReportData` once; the renderers (terminal
verdict and tables, HTML card, figures, model card) read its attributes, never string keys.
:meth:`ReportData.to_dict` is the one place the JSON object of ``rerokit report --json`` (schema
``report.schema.json``, :data:`SCHEMA_VERSION`) is written: the fields of every class are in the
order of the JSON keys; a field marked :data:`OMIT_NONE` is left out of the JSON when it is None
(a key the JSON has only in some reports), every other field is always written (``null`` when
None). :meth:`ReportData.from_dict` reads that JSON back (the CLI's ``summary`` and the model card
receive the printed dict), so ``ReportData.from_dict(d).to_dict() == d``.

A section that may be absent is an ``Optional`` field (``audit``, ``informed_mse``,
``poisson_assumption``, ``declared_guarantee``); a section that was not computed says why with
:class:`Skipped` (``uninformed``, ``guo_mse``, ``what_would_change``). Renderers check these
with ``is None`` / ``isinstance(x, Skipped)``.
"""

from __future__ import annotations

import collections.abc
import typing
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Mapping, Optional, Union

from rerokit.report.facts import PrivacyFacts

__all__ = [
    "OMIT_NONE", "Skipped", "RunSettings", "LevelFacts", "GdpFacts", "DataFacts", "DiscretePriorRow",
    "PixelToleranceRow", "InformedRow", "TprPoint", "MembershipFacts", "PoissonAssumptionView", "DeclaredGuarantee",
    "Shrinkage", "NoPriorAttacksView", "UninformedSection", "InformedMseSection", "GuoSection", "ProvenBounds",
    "OneRunProvenBounds", "PerSlotBound", "OneRunView", "AuditRun", "BinomialAudit", "MeanAudit", "OneRunAudit",
    "AuditSection", "WhatIfTarget", "WhatIfSection", "ReportOptions", "VerdictLine", "ReportData",
    "as_report_data",
]

OMIT_NONE = {"omit_none": True}
"""Field metadata: the key is left out of the JSON when the value is None."""


def _opt() -> Any:
    """A field written to the JSON only when it is not None (default None)."""
    return field(default=None, metadata=OMIT_NONE)


def _json(v: Any) -> Any:
    if is_dataclass(v) and not isinstance(v, type):
        return to_json(v)
    if isinstance(v, (tuple, list)):
        return [_json(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _json(x) for k, x in v.items()}
    return v


def to_json(obj: Any) -> dict[str, Any]:
    """The JSON-ready dict of a section: its fields in order (tuples as lists), OMIT_NONE fields left
    out when None. A class with its own ``to_dict`` (PrivacyFacts) is written by it."""
    if not hasattr(obj, "_json_fields") and hasattr(obj, "to_dict"):
        return obj.to_dict()
    out: dict[str, Any] = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if v is None and f.metadata.get("omit_none"):
            continue
        out[f.name] = _json(v)
    return out


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _from(tp: Any, v: Any) -> Any:
    """``v`` (parsed JSON) as type ``tp``: dataclasses from dicts, tuples from lists."""
    if v is None or tp is Any:
        return v
    origin = typing.get_origin(tp)
    if origin is Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _from(args[0], v)
        for a in args:  # a union of sections: the first that accepts the dict
            if is_dataclass(a) and isinstance(v, Mapping) and a.accepts(v):
                return from_json(a, v)
        raise ValueError(f"no section type of {tp} matches the keys {sorted(v)}")
    if is_dataclass(tp):
        return from_json(tp, v)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from(args[0], x) for x in v)
        return tuple(_from(a, x) for a, x in zip(args, v))
    if origin in (dict, collections.abc.Mapping):
        args = typing.get_args(tp)
        vt = args[1] if len(args) == 2 else Any
        return {k: _from(vt, x) for k, x in v.items()}
    return v


def from_json(cls: type, d: Mapping[str, Any]) -> Any:
    """A section of type ``cls`` from its JSON dict (keys not among its fields are ignored)."""
    if not isinstance(d, Mapping):
        raise TypeError(f"{cls.__name__}: expected a JSON object, got {type(d).__name__}")
    hints = _hints(cls)
    kw = {f.name: _from(hints[f.name], d[f.name]) for f in fields(cls) if f.name in d}
    return cls(**kw)


class _Section:
    """Mixin of the report's sections: :meth:`to_dict` / :meth:`from_dict` / :meth:`accepts`."""

    _json_fields = True

    def to_dict(self) -> dict[str, Any]:
        """The section's JSON-ready dict (the keys of ``rerokit report --json``, in order)."""
        return to_json(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Any:
        """The section from its JSON dict."""
        return from_json(cls, d)

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        """Whether a JSON dict is of this section type (where a field holds one of several)."""
        return True


_frozen = dataclass(frozen=True, kw_only=True)


@_frozen
class Skipped(_Section):
    """A section that was not computed, and why (``{"skipped": "give --diameter ..."}``)."""

    skipped: str

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        return "skipped" in d


# --------------------------------------------------------------------------- run and guarantees


@_frozen
class RunSettings(_Section):
    """``settings``: sigma, q, T of a constant run (or its ``schedule``), the source and the sampler."""

    noise_multiplier: Optional[float] = _opt()
    sample_rate: Optional[float] = _opt()
    steps: Optional[int] = _opt()
    schedule: Optional[tuple[tuple[Any, ...], ...]] = _opt()
    total_steps: int
    source: str
    sampler: str
    sampler_source: str
    examples_per_user: int
    neighbouring_relation: str


@_frozen
class LevelFacts(_Section):
    """``level``: the run's epsilon tier (:func:`rerokit.report.glossary.privacy_level`)."""

    name: str
    tier: int
    epsilon: float
    delta: float
    basis: str
    references: tuple[str, ...]


@_frozen
class GdpFacts(_Section):
    """``gdp``: the run's mu (exact Gaussian DP, or the mu-equivalent at ``kappa``)."""

    mu: float
    kind: str
    exact: bool
    kappa: Optional[float] = _opt()
    explanation: str


@_frozen
class DataFacts(_Section):
    """``data``: what is known about the data (shape, size, clipping norm, diameter, MSE threshold)."""

    shape: Optional[tuple[int, ...]]
    dim: Optional[int]
    dataset_size: Optional[int]
    clip: Optional[float]
    diameter: Optional[float]
    mse_threshold: float
    data_range: float
    source: Optional[str]
    expected_batch_size: Optional[float] = _opt()
    epochs: Optional[float] = _opt()


# --------------------------------------------------------------------------- informed adversary


@_frozen
class DiscretePriorRow(_Section):
    """``informed.prior_<n>``: gamma at a prior of n equally likely candidates."""

    prior_size: int
    prior: str
    kappa: float
    log10_kappa: float
    gamma: float
    gamma_interval: tuple[float, float]
    gamma_error: float
    advantage: float
    mu_equivalent: Optional[float]
    method: str

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        return "prior_size" in d


@_frozen
class PixelToleranceRow(_Section):
    """``informed.pixel_tolerance``: gamma for "any image within 32/256 per pixel"."""

    dim: int
    data_shape: tuple[int, ...]
    tolerance_per_pixel: float
    prior: str
    kappa: float
    log10_kappa: float
    gamma: float
    gamma_interval: tuple[float, float]
    gamma_error: float
    advantage: float
    mu_equivalent: Optional[float]
    method: str

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        return "tolerance_per_pixel" in d


InformedRow = Union[DiscretePriorRow, PixelToleranceRow]


# --------------------------------------------------------------------------- membership


@_frozen
class TprPoint(_Section):
    """One membership TPR bound: at ``fpr``, TPR <= ``tpr`` (certified ``interval``)."""

    fpr: float
    tpr: float
    interval: tuple[float, float]


@_frozen
class MembershipFacts(_Section):
    """``membership``: the f-DP curve's TPR bounds, advantage and Bayes accuracy."""

    advantage: float
    advantage_interval: tuple[float, float]
    tpr_at_fpr: tuple[TprPoint, ...]
    bayes_accuracy: float
    bayes_accuracy_interval: tuple[float, float]
    prior_membership: float
    adjacency: str

    def tpr_at(self, fpr: float) -> TprPoint | None:
        """The TPR bound at exactly ``fpr``, or None."""
        return next((p for p in self.tpr_at_fpr if p.fpr == fpr), None)


@_frozen
class PoissonAssumptionView(_Section):
    """``poisson_assumption``: what a Poisson accountant would give (not certified for this run)."""

    gamma: float
    epsilon: float
    delta: float
    kind: str
    note: str


@_frozen
class DeclaredGuarantee(_Section):
    """``declared_guarantee``: the (epsilon, delta) the audited run declared."""

    epsilon: float
    delta: Optional[float]
    source: str


# --------------------------------------------------------------------------- gradient inversion, MSE


@_frozen
class Shrinkage(_Section):
    """A shrunk estimate c X_hat: its factor and P(MSE <= eta)."""

    factor: float
    success: float


@_frozen
class NoPriorAttacksView(_Section):
    """``uninformed.no_prior_attacks`` (:class:`rerokit.bounds.uninformed_scope.NoPriorAttacks`)."""

    kind: str
    record: str
    unbiased_attack: float
    zero_guess: float
    mse_optimal_shrinkage: Shrinkage
    best_shrinkage: Shrinkage
    best_known: float
    best_known_attack: str

    @classmethod
    def of(cls, n: Any) -> "NoPriorAttacksView":
        """The view of a :class:`~rerokit.bounds.uninformed_scope.NoPriorAttacks`."""
        from rerokit.bounds.uninformed_scope import ATTACK_LAW

        return cls(kind=ATTACK_LAW, record="a record of the smallest norm r", unbiased_attack=n.unbiased,
                   zero_guess=n.zero_guess, mse_optimal_shrinkage=Shrinkage(factor=n.mse_optimal_factor,
                                                                            success=n.mse_optimal_shrinkage),
                   best_shrinkage=Shrinkage(factor=n.best_factor, success=n.best_shrinkage), best_known=n.best,
                   best_known_attack=n.best_attack)


@_frozen
class UninformedSection(_Section):
    """``uninformed``: Riess et al. 2024's laws of the optimal unbiased gradient inversion."""

    noise_multiplier: float
    dim: int
    min_norm: float
    min_norm_source: str
    clip: Optional[float]
    mse_threshold: float
    psnr_threshold_db: float
    data_range: float
    gamma: float
    gamma_error: float
    log10_gamma: Optional[float]
    expected_mse: float
    ncc_bound: float
    optimal_rows: Optional[int] = _opt()
    kind: str
    attack: str
    no_prior_attacks: NoPriorAttacksView
    steps: Optional[int] = _opt()
    sampling_rate: Optional[float] = _opt()
    gamma_over_steps: Optional[float]
    expected_releases: Optional[float] = _opt()
    over_steps_note: Optional[str] = _opt()

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        return "skipped" not in d


@_frozen
class InformedMseSection(_Section):
    """``informed_mse``: the certified gamma for MSE <= eta under a uniform-pixel prior."""

    kind: str
    prior: str
    dim: int
    mse_threshold: float
    kappa: float
    log10_kappa: float
    gamma: float
    gamma_interval: tuple[float, float]
    method: str
    population: str
    reference: str


@_frozen
class GuoSection(_Section):
    """``guo_mse``: Guo et al. 2022 Thm 1, the MSE lower bound of an unbiased attacker."""

    mse_lower_bound: float
    error: float
    epsilon_rdp2: float
    order_used: float
    neighbouring_relation: str
    rdp_method: str
    diameter: float
    dim: Optional[int]
    attack: str
    reference: str

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        return "skipped" not in d


# --------------------------------------------------------------------------- audits


@_frozen
class ProvenBounds(_Section):
    """``audit.lower_bounds`` of a count of successes (:func:`rerokit.bounds.empirical.audit_lower_bounds`)."""

    successes: int
    trials: int
    confidence: float
    log_kappa: float
    success_lower: float
    mu_gdp_lower: float
    epsilon_lower: float
    delta: float


@_frozen
class OneRunProvenBounds(_Section):
    """``audit.lower_bounds`` of a one-run audit (:func:`rerokit.experiments.onerun.report_fields`)."""

    epsilon_lower: float
    mu_gdp_lower: float
    method: Optional[str]
    family: Optional[str]
    confidence: Optional[float]
    guesses: Optional[int]
    correct: Optional[int]
    correct_upper: Optional[int]


@_frozen
class PerSlotBound(_Section):
    """The certified per-slot success of a one-run audit's game."""

    value: float
    interval: tuple[float, float]
    name: str
    method: str


@_frozen
class OneRunView(_Section):
    """``audit.one_run_view``: what the report shows of a one-run audit (:func:`rerokit.report.onerun.one_run_view`)."""

    game: str
    threat: Optional[str]
    canaries: int
    options: int
    guesses: int
    abstentions: int
    correct: int
    accuracy_guesses: Optional[float]
    selection: Optional[str]
    thresholds_tried: Optional[int]
    confidence: float
    significance: Optional[float]
    method: Optional[str]
    family: Optional[str]
    adjacency: Optional[str]
    delta: Optional[float]
    epsilon_relation: str
    claim: Optional[str]
    claim_rejected: Optional[bool]
    correct_upper: Optional[int]
    epsilon_lower: float
    mu_lower: float
    certified_epsilon: Optional[float]
    certified_mu: Optional[float]
    slots: int
    accuracy_all: float
    accuracy_interval: tuple[float, float]
    per_slot_bound: PerSlotBound


@_frozen
class AuditRun(_Section):
    """The fields every audit section starts with: the attack, its successes, and the audited run.

    The one declaration of these fields: the audit as the report reads it
    (:class:`rerokit.report.inputs.AuditSummary`) is an ``AuditRun`` too, and each audit section
    copies them from it by :meth:`run_fields`.

    Attributes:
      attack: the attack's name (``alg2``, ``alg3``, ``loglik``, ``alg2_nosub``, ``gradient`` or
        ``one-run.<threat>``).
      successes: number of successful trials (None for the gradient audit, whose per-trial
        success is a probability, not a 0/1 outcome).
      trials: number of trials.
      success: the measured success rate.
      interval: its two-sided 95% interval (exact Clopper-Pearson; Student-t for the gradient audit).
      kappa: the baseline success of the audit's prior (1/N for N equally likely candidates).
      noise_multiplier, sample_rate, steps, clip: the audited DP-SGD settings.
      dataset: the audited dataset's name (or None).
      target_epsilon, delta: the epsilon sigma was calibrated for (None when sigma was given) and
        its delta (None when the file does not say).
      seed: the audit's seed.
      source: "json" (``--json`` output) or "jsonl" (``--out`` file).
      path: the file read (None for a dict).
      sampler: the audited run's sampler as its file states it ("poisson", "full_batch"; None
        when the file does not say).
    """

    attack: str
    successes: Optional[int]
    trials: int
    success: float
    interval: tuple[float, float]
    kappa: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    clip: Optional[float]
    dataset: Optional[str]
    target_epsilon: Optional[float]
    delta: Optional[float]
    seed: Optional[int]
    source: str
    path: Optional[str]
    sampler: Optional[str]

    def run_fields(self) -> dict[str, Any]:
        """This object's :class:`AuditRun` fields by name (what an audit section copies from the audit read)."""
        return {f.name: getattr(self, f.name) for f in fields(AuditRun)}


@_frozen
class BinomialAudit(AuditRun):
    """``audit`` of a count of successes over independent trials (prior-aware audits)."""

    successes: int  # a count here (keeps its place after ``attack``)
    gamma: float
    gamma_interval: tuple[float, float]
    consistent: Optional[bool]
    lower_bounds: ProvenBounds
    certified_mu: float
    certified_mu_kind: str
    certified_epsilon: float
    certified_epsilon_delta: float

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        return "one_run_view" not in d and "lower_bounds_note" not in d


@_frozen
class MeanAudit(AuditRun):
    """``audit`` whose success is a mean of per-trial probabilities (the gradient audit): no lower bound."""

    gamma: float
    gamma_interval: tuple[float, float]
    consistent: Optional[bool]
    lower_bounds: None = None
    lower_bounds_note: str

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        return "lower_bounds_note" in d


@_frozen
class OneRunAudit(AuditRun):
    """``audit`` of one training run with canary slots (``rerokit audit one-run``)."""

    one_run: Mapping[str, Any]
    gamma: float
    gamma_interval: tuple[float, float]
    consistent: Optional[bool]
    lower_bounds: OneRunProvenBounds
    certified_mu: float
    certified_mu_kind: str
    certified_epsilon: Optional[float]
    certified_epsilon_delta: Optional[float]
    one_run_view: OneRunView
    consistent_meaning: str

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        return "one_run_view" in d


AuditSection = Union[OneRunAudit, MeanAudit, BinomialAudit]


# --------------------------------------------------------------------------- what would change it


@_frozen
class WhatIfTarget(_Section):
    """One target of "what would change it": the sigma and the steps for gamma <= ``target_gamma``."""

    target_gamma: float
    noise_multiplier: Optional[float]
    epsilon: Optional[float] = _opt()
    gamma_at_noise_multiplier: Optional[float] = _opt()
    noise_multiplier_note: Optional[str] = _opt()
    steps: Optional[int]
    steps_capped: Optional[bool] = _opt()
    gamma_at_steps: Optional[float] = _opt()
    steps_note: Optional[str] = _opt()


@_frozen
class WhatIfSection(_Section):
    """``what_would_change``: calibrations at the reference prior."""

    prior_size: int
    kappa: float
    gamma: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    targets: tuple[WhatIfTarget, ...]

    @classmethod
    def accepts(cls, d: Mapping[str, Any]) -> bool:
        return "skipped" not in d


@_frozen
class ReportOptions(_Section):
    """``options``: prior sizes, the reference prior, the pixel tolerance, the what-if margins."""

    prior_sizes: tuple[int, ...]
    reference_prior_size: int
    pixel_tolerance: float
    what_if_margins: tuple[float, ...]


@_frozen
class VerdictLine(_Section):
    """One verdict sentence as plain text, with its threat model."""

    threat_model: str
    text: str


# --------------------------------------------------------------------------- the report


@_frozen
class ReportData(_Section):
    """The report: every section of ``rerokit report --json`` (:meth:`to_dict`), typed."""

    schema_version: int
    title: str
    label: Optional[str]
    settings: RunSettings
    delta: float
    epsilon: float
    level: LevelFacts
    gdp: GdpFacts
    data: DataFacts
    informed: Mapping[str, InformedRow]
    membership: MembershipFacts
    privacy_facts: PrivacyFacts
    poisson_assumption: Optional[PoissonAssumptionView] = _opt()
    declared_guarantee: Optional[DeclaredGuarantee] = _opt()
    uninformed: Union[UninformedSection, Skipped]
    informed_mse: Optional[InformedMseSection] = _opt()
    guo_mse: Union[GuoSection, Skipped]
    audit: Optional[AuditSection]
    what_would_change: Union[WhatIfSection, Skipped]
    options: ReportOptions
    notes: tuple[str, ...]
    verdict: tuple[VerdictLine, ...] = ()
    key_numbers: Mapping[str, Any] = field(default_factory=dict)
    rerokit_version: str

    @property
    def discrete_priors(self) -> dict[str, DiscretePriorRow]:
        """The ``prior_<n>`` rows of ``informed``, in order."""
        return {k: e for k, e in self.informed.items() if isinstance(e, DiscretePriorRow)}

    @property
    def pixel_tolerance(self) -> PixelToleranceRow | None:
        """The pixel-tolerance row of ``informed``, or None without a data shape."""
        e = self.informed.get("pixel_tolerance")
        return e if isinstance(e, PixelToleranceRow) else None


def as_report_data(d: Any) -> ReportData:
    """A report's :class:`ReportData` from itself or from its JSON dict (``rerokit report --json``).

    Args:
      d: a :class:`ReportData`, or the dict :meth:`ReportData.to_dict` /
        :meth:`rerokit.report.build.Report.to_dict` returns (extra keys such as ``written`` ignored).

    Returns:
      The :class:`ReportData`.
    """
    if isinstance(d, ReportData):
        return d
    if isinstance(d, Mapping):
        return ReportData.from_dict(d)
    raise TypeError(f"expected a report (ReportData or its dict), got {type(d).__name__}")
