"""Typed results of ``bound dpsgd``, ``bound tradeoff`` and ``calibrate dpsgd`` (see
:mod:`rerokit.report.results`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from rerokit.report.results.json_fields import LN10, json_key, json_object, json_pair, json_numbers, json_number

if TYPE_CHECKING:
    from rerokit.bounds.calibrate import CalibrationResult

__all__ = ["DpsgdComparisons", "DpsgdOutput", "DpsgdNoPriorOutput", "TradeoffPoint", "TradeoffTable",
           "TradeoffOutput", "CalibrateOutput"]


# --------------------------------------------------------------------------- bound dpsgd


@dataclass(frozen=True)
class DpsgdComparisons:
    """``comparisons`` of ``bound dpsgd``: the RDP bound of Balle et al. 2022 (Thm 2) for the same schedule
    and the run's (epsilon, delta); all None under the envelope (sigma outside the accounted range)."""

    rdp_gamma: float | None
    rdp_order: float | None
    epsilon: float | None
    delta: float | None
    note: str | None = None

    _KEYS = ("rdp_gamma", "rdp_order", "epsilon", "delta")

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self._KEYS}
        if self.note is not None:
            d["note"] = self.note
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "comparisons") -> "DpsgdComparisons":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key)."""
        return cls(**json_numbers(d, cls._KEYS, where), note=d.get("note"))


@dataclass(frozen=True)
class DpsgdOutput:
    """``rerokit bound dpsgd`` with a prior: the ReRo bound gamma of DP-SGD (Hayes et al. 2023, Thm 2), the
    run's comparisons and the membership risks read off the same composed PLD (Kulynych et al. 2025).

    Attributes:
        gamma, kappa, advantage: the bound, the prior's baseline, (gamma - kappa) / (1 - kappa).
        method, direction, error, interval: the bound's method (a key of :attr:`DETAILS`), direction,
            numerical error (or the estimate's half-width) and bracket (None where it has none).
        log10_gamma, log10_kappa: exact also where gamma or kappa underflow.
        log10_interval: where gamma is below 1e-300, the certified bracket in log10 (the float
            ``interval`` underflows there); else None (and absent from the JSON).
        noise_multiplier, sample_rate, steps: the run (``settings`` in the JSON, as are the next two).
        prior_option: the prior option as given (``{"prior_size": N}``, ``{"log10_kappa": L}`` or ``{}``).
        sampling: the sampler, its source, the unit of privacy and the neighbouring relation
            (:meth:`rerokit.bounds.schedule.Schedule.sampling_dict`).
        certification: how the run is certified (the keys :attr:`CERTIFICATION`).
        details: the method's details (the keys :attr:`DETAILS` names for it; exact: a note where floored).
        comparisons: the :class:`DpsgdComparisons`.
        membership: the membership risks (:class:`rerokit.report.model.MembershipFacts`' keys and the method).
        poisson_assumption: for a non-Poisson sampler, the Poisson accountant's numbers (kind
            "assumption"), else None.
    """

    gamma: float
    kappa: float
    advantage: float
    method: str
    direction: str
    error: float
    interval: tuple[float, float] | None
    log10_gamma: float
    log10_kappa: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    prior_option: Mapping[str, Any]
    sampling: Mapping[str, Any]
    certification: Mapping[str, Any]
    details: Mapping[str, Any]
    comparisons: DpsgdComparisons
    membership: Mapping[str, Any]
    poisson_assumption: Mapping[str, Any] | None = None
    log10_interval: tuple[float, float] | None = None

    CERTIFICATION = ("amplified", "releases", "group_size")
    """The keys of ``certification`` (attributes of :class:`rerokit.bounds.schedule.Certification`)."""
    DETAILS = {"exact": ("lower", "value_discretization_interval", "threshold_epsilon", "floored"),
               "mc": ("seed", "mc_samples", "standard_error"), "closed-form": ("mu_gdp",),
               "envelope": ("lower", "note")}
    """Each method's details, in the JSON's order (exact: then ``note`` where the floor dominates)."""
    RUN_KEYS = ("noise_multiplier", "sample_rate", "steps")
    PRIOR_KEYS = ("prior_size", "log10_kappa")
    _HEAD = ("gamma", "kappa", "advantage", "method", "direction", "error")

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d: dict[str, Any] = {k: getattr(self, k) for k in self._HEAD}
        if self.interval is not None:
            d["interval"] = list(self.interval)
        d.update(log10_gamma=self.log10_gamma, log10_kappa=self.log10_kappa)
        if self.log10_interval is not None:
            d["log10_interval"] = list(self.log10_interval)
        d.update(settings={**{k: getattr(self, k) for k in self.RUN_KEYS}, **self.prior_option, **self.sampling},
                 certification=dict(self.certification), details=dict(self.details),
                 comparisons=self.comparisons.to_dict(), membership=dict(self.membership))
        if self.poisson_assumption is not None:
            d["poisson_assumption"] = dict(self.poisson_assumption)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound dpsgd result") -> "DpsgdOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        method = json_key(d, "method", where)
        if method not in cls.DETAILS:
            raise ValueError(f"{where}: 'method' must be one of {', '.join(cls.DETAILS)}, got {method!r}")
        s = json_object(json_key(d, "settings", where), f"{where}: settings")
        det = json_object(json_key(d, "details", where), f"{where}: details")
        cert = json_object(json_key(d, "certification", where), f"{where}: certification")
        pa = d.get("poisson_assumption")
        return cls(
            **json_numbers(d, ("gamma", "kappa", "advantage", "error", "log10_gamma", "log10_kappa"), where),
            method=method, direction=json_key(d, "direction", where),
            interval=None if d.get("interval") is None else json_pair(d["interval"], "interval", where),
            log10_interval=(None if d.get("log10_interval") is None
                            else json_pair(d["log10_interval"], "log10_interval", where)),
            **json_numbers(s, cls.RUN_KEYS, f"{where}: settings"),
            prior_option={k: s[k] for k in cls.PRIOR_KEYS if k in s},
            sampling={k: v for k, v in s.items() if k not in (*cls.RUN_KEYS, *cls.PRIOR_KEYS)},
            certification={k: json_key(cert, k, f"{where}: certification") for k in cls.CERTIFICATION},
            details={**{k: json_key(det, k, f"{where}: details") for k in cls.DETAILS[method]},
                     **({"note": det["note"]} if method == "exact" and "note" in det else {})},
            comparisons=DpsgdComparisons.from_dict(json_object(json_key(d, "comparisons", where),
                                                               f"{where}: comparisons"),
                                                   f"{where}: comparisons"),
            membership=dict(json_object(json_key(d, "membership", where), f"{where}: membership")),
            poisson_assumption=None if pa is None else dict(json_object(pa, f"{where}: poisson_assumption")))


@dataclass(frozen=True)
class DpsgdNoPriorOutput:
    """``rerokit bound dpsgd`` without a prior: the run's (epsilon, delta) and membership risks (gamma
    needs a prior's kappa).

    Attributes:
        epsilon, delta: the certified epsilon at delta (inf where none is; ``epsilon_note`` says why).
        membership: the membership risks (as in :class:`DpsgdOutput`).
        note: why there is no gamma.
        noise_multiplier, sample_rate, steps, sampling: the run (``settings`` in the JSON).
        certification: how the run is certified (:attr:`DpsgdOutput.CERTIFICATION`).
        poisson_assumption: as in :class:`DpsgdOutput`.
        epsilon_note: why epsilon is inf, or None.
    """

    epsilon: float | None
    delta: float
    membership: Mapping[str, Any]
    note: str
    noise_multiplier: float
    sample_rate: float
    steps: int
    sampling: Mapping[str, Any]
    certification: Mapping[str, Any]
    poisson_assumption: Mapping[str, Any] | None = None
    epsilon_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d: dict[str, Any] = {"epsilon": self.epsilon, "delta": self.delta, "membership": dict(self.membership),
                             "note": self.note,
                             "settings": {**{k: getattr(self, k) for k in DpsgdOutput.RUN_KEYS}, **self.sampling},
                             "certification": dict(self.certification)}
        if self.poisson_assumption is not None:
            d["poisson_assumption"] = dict(self.poisson_assumption)
        if self.epsilon_note is not None:
            d["epsilon_note"] = self.epsilon_note
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound dpsgd result") -> "DpsgdNoPriorOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        s = json_object(json_key(d, "settings", where), f"{where}: settings")
        cert = json_object(json_key(d, "certification", where), f"{where}: certification")
        pa = d.get("poisson_assumption")
        return cls(**json_numbers(d, ("epsilon", "delta"), where),
                   membership=dict(json_object(json_key(d, "membership", where), f"{where}: membership")),
                   note=json_key(d, "note", where), **json_numbers(s, DpsgdOutput.RUN_KEYS, f"{where}: settings"),
                   sampling={k: v for k, v in s.items() if k not in DpsgdOutput.RUN_KEYS},
                   certification={k: json_key(cert, k, f"{where}: certification") for k in DpsgdOutput.CERTIFICATION},
                   poisson_assumption=None if pa is None else dict(json_object(pa, f"{where}: poisson_assumption")),
                   epsilon_note=d.get("epsilon_note"))


# --------------------------------------------------------------------------- bound tradeoff


@dataclass(frozen=True)
class TradeoffPoint:
    """One ``--fpr`` of ``bound tradeoff``: the certified brackets of beta (miss rate) and of the TPR
    at false-positive rate ``fpr``, and the TPR bracket's width ``error``."""

    fpr: float
    beta: tuple[float, float]
    tpr: tuple[float, float]
    error: float

    def to_dict(self) -> dict[str, Any]:
        return {"fpr": self.fpr, "beta": list(self.beta), "tpr": list(self.tpr), "error": self.error}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "point") -> "TradeoffPoint":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key)."""
        return cls(**json_numbers(d, ("fpr", "error"), where),
                   beta=json_pair(json_key(d, "beta", where), "beta", where),
                   tpr=json_pair(json_key(d, "tpr", where), "tpr", where))


@dataclass(frozen=True)
class TradeoffTable:
    """``--grid`` of ``bound tradeoff``: alpha and the lower/upper ends of beta and of the TPR at each point."""

    alpha: tuple[float, ...]
    beta_lower: tuple[float, ...]
    beta_upper: tuple[float, ...]
    tpr_lower: tuple[float, ...]
    tpr_upper: tuple[float, ...]

    _KEYS = ("alpha", "beta_lower", "beta_upper", "tpr_lower", "tpr_upper")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(getattr(self, k)) for k in self._KEYS}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "curve") -> "TradeoffTable":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key)."""
        return cls(**{k: tuple(json_number(x, k, where) for x in json_key(d, k, where)) for k in cls._KEYS})


@dataclass(frozen=True)
class TradeoffOutput:
    """``rerokit bound tradeoff``: the certified trade-off curve of a DP-SGD run (Hayes et al. 2023,
    Thm 2 pair) and the membership risks read off it (Kulynych et al. 2025).

    Attributes:
        noise_multiplier, sample_rate, steps: the run (``settings`` in the JSON, as are the next two).
        adjacency: ``"remove"`` or ``"add_remove"``.
        sampling: the run's sampler, its source, the unit of privacy and the neighbouring relation
            (:meth:`rerokit.bounds.schedule.Schedule.sampling_dict`).
        method: exact, closed-form or envelope.
        value_discretization_interval: the PLD's grid step (None for closed forms).
        points: with ``--fpr``, one :class:`TradeoffPoint` per rate; else None.
        curve: with ``--grid``, the :class:`TradeoffTable`; else None.
        max_error: the largest TPR bracket width.
        advantage, advantage_interval: the advantage TPR - FPR (certified upper end, bracket).
        bayes_accuracy, bayes_accuracy_interval: the Bayes accuracy at ``prior_membership``.
        prior_membership: the prior probability of membership.
        poisson_assumption: for a non-Poisson sampler, the Poisson curve's advantage (kind
            "assumption"), else None.
    """

    noise_multiplier: float
    sample_rate: float
    steps: int
    adjacency: str
    sampling: Mapping[str, Any]
    method: str
    value_discretization_interval: float | None
    points: tuple[TradeoffPoint, ...] | None
    curve: TradeoffTable | None
    max_error: float
    advantage: float
    advantage_interval: tuple[float, float]
    bayes_accuracy: float
    bayes_accuracy_interval: tuple[float, float]
    prior_membership: float
    poisson_assumption: Mapping[str, Any] | None = None

    RUN_KEYS = ("noise_multiplier", "sample_rate", "steps")
    """The run's keys in ``settings`` (then ``adjacency`` and the sampler's)."""

    @property
    def settings(self) -> dict[str, Any]:
        """The JSON's ``settings``: the run, the adjacency, the sampling."""
        return {**{k: getattr(self, k) for k in self.RUN_KEYS}, "adjacency": self.adjacency, **self.sampling}

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d: dict[str, Any] = {"settings": self.settings, "method": self.method,
                             "value_discretization_interval": self.value_discretization_interval}
        if self.points is not None:
            d["points"] = [p.to_dict() for p in self.points]
        if self.curve is not None:
            d["curve"] = self.curve.to_dict()
        d.update(max_error=self.max_error, advantage=self.advantage, advantage_interval=list(self.advantage_interval),
                 bayes_accuracy=self.bayes_accuracy, bayes_accuracy_interval=list(self.bayes_accuracy_interval),
                 prior_membership=self.prior_membership)
        if self.poisson_assumption is not None:
            d["poisson_assumption"] = dict(self.poisson_assumption)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound tradeoff result") -> "TradeoffOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        s = json_object(json_key(d, "settings", where), f"{where}: settings")
        # the sampler is read by the sampling notes (rerokit.cli._common.sampling_summary)
        json_key(s, "sampler", f"{where}: settings")
        if ("points" in d) == ("curve" in d):
            raise ValueError(f"{where}: expected one of 'points' (--fpr) or 'curve' (--grid)")
        pts = d.get("points")
        if pts is not None and not isinstance(pts, (list, tuple)):
            raise TypeError(f"{where}: 'points' must be a list, got {type(pts).__name__}")
        pa = d.get("poisson_assumption")
        return cls(
            **json_numbers(s, cls.RUN_KEYS, f"{where}: settings"),
            adjacency=json_key(s, "adjacency", f"{where}: settings"),
            sampling={k: v for k, v in s.items() if k not in (*cls.RUN_KEYS, "adjacency")},
            method=json_key(d, "method", where),
            value_discretization_interval=json_key(d, "value_discretization_interval", where),
            points=None if pts is None else tuple(TradeoffPoint.from_dict(p, f"{where}: points[{i}]")
                                                  for i, p in enumerate(pts)),
            curve=None if "curve" not in d else TradeoffTable.from_dict(d["curve"], f"{where}: curve"),
            **json_numbers(d, ("max_error", "advantage", "bayes_accuracy", "prior_membership"), where),
            advantage_interval=json_pair(json_key(d, "advantage_interval", where), "advantage_interval", where),
            bayes_accuracy_interval=json_pair(json_key(d, "bayes_accuracy_interval", where), "bayes_accuracy_interval",
                                              where),
            poisson_assumption=None if pa is None else dict(json_object(pa, f"{where}: poisson_assumption")))


# --------------------------------------------------------------------------- calibrate dpsgd


@dataclass(frozen=True)
class CalibrateOutput:
    """``rerokit calibrate dpsgd``: the calibrated DP-SGD setting and its certified bound.

    Attributes:
        calibration: the calibration (:func:`rerokit.bounds.calibrate.calibrate_noise_multiplier` or
            :func:`~rerokit.bounds.calibrate.calibrate_steps`).
        solved: what was solved for, ``"noise_multiplier"`` or ``"steps"``.
        note: remarks (steps capped at --max-steps; why epsilon is inf), or None.
        prior_option: the prior option as given (``{"prior_size": N}``, ``{"log10_kappa": L}`` or ``{}``).
        sampling: the run's sampler, its source, the unit of privacy and the neighbouring relation
            (:meth:`rerokit.bounds.schedule.Schedule.sampling_dict`).
        poisson_assumption: for a non-Poisson sampler, what a Poisson calibration would give (kind
            "assumption"), else None.
    """

    calibration: "CalibrationResult"
    solved: str
    note: str | None
    prior_option: Mapping[str, Any]
    sampling: Mapping[str, Any]
    poisson_assumption: Mapping[str, Any] | None = None

    SOLVED = ("noise_multiplier", "steps")
    """What a calibration solves for (the first key of the JSON)."""
    PRIOR_KEYS = ("prior_size", "log10_kappa")
    """The prior options echoed in ``settings``."""

    @property
    def log10_kappa(self) -> float:
        return self.calibration.log_kappa / LN10

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        c = self.calibration
        d: dict[str, Any] = {self.solved: getattr(c, self.solved)}
        if self.note is not None:
            d["note"] = self.note
        d.update(target_gamma=c.target_gamma, gamma=c.gamma, error=c.gamma_error, kappa=c.kappa,
                 log10_kappa=self.log10_kappa, epsilon=c.epsilon, delta=c.delta,
                 settings={"noise_multiplier": c.noise_multiplier, "sample_rate": c.sample_rate, "steps": c.steps,
                           **self.prior_option, **self.sampling},
                 search={"bracket": list(c.bracket), "evaluations": c.evaluations})
        if self.poisson_assumption is not None:
            d["poisson_assumption"] = dict(self.poisson_assumption)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "calibrate result") -> "CalibrateOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored).

        ``calibration.log_kappa`` is read from ``log10_kappa`` (equal up to the rounding of the
        conversion); ``calibration.capped`` is what the JSON says of it: steps solved for with a
        final bracket of one point ``(max_steps, max_steps)``.
        """
        from rerokit.bounds.calibrate import CalibrationResult

        solved = next((k for k in cls.SOLVED if k in json_object(d, where)), None)
        if solved is None:
            raise ValueError(f"{where}: missing 'noise_multiplier' or 'steps'")
        s = json_object(json_key(d, "settings", where), f"{where}: settings")
        search = json_object(json_key(d, "search", where), f"{where}: search")
        bracket = json_pair(json_key(search, "bracket", f"{where}: search"), "bracket", f"{where}: search")
        n = json_numbers(d, ("target_gamma", "gamma", "error", "kappa", "log10_kappa", "epsilon", "delta"), where)
        run = json_numbers(s, ("noise_multiplier", "sample_rate", "steps", "examples_per_user"), f"{where}: settings")
        c = CalibrationResult(
            noise_multiplier=run["noise_multiplier"], sample_rate=run["sample_rate"], steps=run["steps"],
            kappa=n["kappa"], log_kappa=n["log10_kappa"] * LN10, target_gamma=n["target_gamma"], gamma=n["gamma"],
            gamma_error=n["error"], epsilon=n["epsilon"], delta=n["delta"], bracket=bracket,
            evaluations=json_key(search, "evaluations", f"{where}: search"),
            capped=solved == "steps" and bracket[0] == bracket[1], sampler=json_key(s, "sampler", f"{where}: settings"),
            examples_per_user=run["examples_per_user"])
        pa = d.get("poisson_assumption")
        return cls(calibration=c, solved=solved, note=d.get("note"),
                   prior_option={k: s[k] for k in cls.PRIOR_KEYS if k in s},
                   sampling={k: v for k, v in s.items() if k not in (*cls.SOLVED, "sample_rate", *cls.PRIOR_KEYS)},
                   poisson_assumption=None if pa is None else dict(json_object(pa, f"{where}: poisson_assumption")))
