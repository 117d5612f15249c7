"""The outcome of ``rerokit audit prior-aware|gradient`` as typed objects, and their JSON.

:class:`AuditOutcome` is the one declaration of what the audit command prints: the audit writes it
(:meth:`rerokit.experiments.audit.AuditReport.summary`, :meth:`AuditOutcome.to_dict`); the
command's verdict (:mod:`rerokit.report.verdicts`) reads the printed JSON back with
:meth:`AuditOutcome.from_dict` (its inverse), and the report's ``--audit`` reader
(:func:`rerokit.report.inputs.audit_from_dict`) tells the two audits' JSON apart with
:meth:`AuditOutcome.kind_of`, so a key renamed on one side is an error on the other, not a silent
``None``. Torch-free (standard library only), so the report reads audits without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from rerokit.attacks.result import AttackResult

__all__ = ["MetricSummary", "EmpiricalBounds", "AuditOutcome"]


def _key(d: Mapping[str, Any], key: str, where: str) -> Any:
    """``d[key]``, or a ValueError naming the key (a JSON object that is not the command's output)."""
    if not isinstance(d, Mapping):
        raise TypeError(f"{where}: expected a JSON object, got {type(d).__name__}")
    if key not in d:
        raise ValueError(f"{where}: missing {key!r}")
    return d[key]


@dataclass(frozen=True)
class MetricSummary:
    """One attack's (or metric's) outcome in an audit summary.

    Attributes:
        metric: ``"success"`` (a success rate) or ``"mse"`` (a mean reconstruction error).
        value: the estimate (mean over the trials).
        ci_low, ci_high: its 95% interval (exact Clopper-Pearson for success rates).
    """

    metric: str
    value: float
    ci_low: float
    ci_high: float

    @classmethod
    def of(cls, result: "AttackResult") -> "MetricSummary":
        """The summary of an :class:`rerokit.attacks.result.AttackResult`."""
        return cls(result.metric, result.value, result.interval[0], result.interval[1])

    def to_dict(self) -> dict[str, Any]:
        """``{"metric", "value", "ci_low", "ci_high"}`` (an entry of the JSON's ``attacks``)."""
        return {"metric": self.metric, "value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}

    def flat(self) -> dict[str, Any]:
        """``{<metric>: value, "ci_low", "ci_high"}`` (the primary attack at the JSON's top level)."""
        return {self.metric: self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "attack") -> "MetricSummary":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key)."""
        return cls(*(_key(d, k, where) for k in ("metric", "value", "ci_low", "ci_high")))

    @classmethod
    def from_flat(cls, metric: str, d: Mapping[str, Any], where: str = "audit result") -> "MetricSummary":
        """The inverse of :meth:`flat` for a known ``metric`` (ValueError naming a missing key)."""
        return cls(metric, *(_key(d, k, where) for k in (metric, "ci_low", "ci_high")))


@dataclass(frozen=True)
class EmpiricalBounds:
    """What an audit's successes prove about the mechanism (:meth:`rerokit.experiments.audit.AuditReport.empirical_lower_bounds`).

    Attributes:
        success_lower: the one-sided Clopper-Pearson lower end of the success rate.
        mu_gdp_lower: the mechanism is not mu-GDP for any mu below this.
        epsilon_lower: nor (epsilon, delta)-DP for any epsilon below this (at the report's delta).
        confidence: the one-sided confidence of both.
    """

    success_lower: float
    mu_gdp_lower: float
    epsilon_lower: float
    confidence: float

    def flat(self) -> dict[str, Any]:
        """The JSON's ``empirical_*`` keys."""
        return {"empirical_success_lower": self.success_lower, "empirical_mu_lower": self.mu_gdp_lower,
                "empirical_epsilon_lower": self.epsilon_lower, "empirical_confidence": self.confidence}

    @classmethod
    def from_flat(cls, d: Mapping[str, Any], where: str = "audit result") -> "EmpiricalBounds | None":
        """The inverse of :meth:`flat`: None when ``d`` has none of its keys, a ValueError when only some."""
        keys = ("empirical_success_lower", "empirical_mu_lower", "empirical_epsilon_lower", "empirical_confidence")
        if not any(k in d for k in keys):
            return None
        return cls(*(_key(d, k, where) for k in keys))


@dataclass(frozen=True)
class AuditOutcome:
    """The outcome of ``rerokit audit prior-aware|gradient`` as a typed object
    (:meth:`rerokit.experiments.audit.AuditReport.summary`); :meth:`to_dict` is the command's JSON (less ``rerokit_version``).

    Attributes:
        kind: ``"prior-aware"`` or ``"gradient"``.
        attack: the primary attack (prior-aware: its name; gradient: ``prior_success_<N>``).
        result: the primary attack's outcome.
        attacks: every attack's (or metric's) outcome, by name.
        gamma: the ReRo bound at ``kappa``.
        kappa: the baseline success of the best model-free guess.
        noise_multiplier: sigma of the audited training.
        trials: the number of trials.
        seed: the run's seed.
        settings: the run's settings (the results file's header).
        epsilon, delta: what sigma was calibrated for (None when sigma was given).
        empirical: the empirical lower bounds of a prior-aware audit at ``delta``, else None.
        mse: the gradient audit's mean reconstruction MSE, else None.
        mean_target_clipped_fraction: the prior-aware audit's mean fraction of steps whose target
            gradient was clipped, else None.
        out: the results file, or None.
    """

    kind: str
    attack: str
    result: MetricSummary
    attacks: dict[str, MetricSummary]
    gamma: float
    kappa: float
    noise_multiplier: float
    trials: int
    seed: int
    settings: dict[str, Any]
    epsilon: float | None = None
    delta: float | None = None
    empirical: EmpiricalBounds | None = None
    mse: MetricSummary | None = None
    mean_target_clipped_fraction: float | None = None
    out: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of ``rerokit audit ... --json`` (keys in the command's order)."""
        d: dict[str, Any] = {}
        if self.mse is not None:
            d.update(mse=self.mse.value, mse_ci_low=self.mse.ci_low, mse_ci_high=self.mse.ci_high)
        d.update(self.result.flat())
        if self.empirical is not None:
            d.update(self.empirical.flat())
        d.update(gamma=self.gamma, kappa=self.kappa, noise_multiplier=self.noise_multiplier, trials=self.trials,
                 seed=self.seed, attacks={k: m.to_dict() for k, m in self.attacks.items()})
        if self.kind == "gradient":
            d.update(epsilon=self.epsilon, delta=self.delta)
        else:
            d.update(attack=self.attack, epsilon=self.epsilon, delta=self.delta,
                     mean_target_clipped_fraction=self.mean_target_clipped_fraction)
        d["settings"] = dict(self.settings)
        if self.out:
            d["out"] = self.out
        return d

    @staticmethod
    def kind_of(d: Mapping[str, Any]) -> str:
        """``"gradient"`` when ``d`` is the gradient audit's JSON (:meth:`to_dict` writes its mean MSE
        and no ``attack``), else ``"prior-aware"``."""
        return "gradient" if "mse" in d and "attack" not in d else "prior-aware"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "audit result") -> "AuditOutcome":
        """The outcome from the command's JSON: the inverse of :meth:`to_dict`
        (``AuditOutcome.from_dict(o.to_dict()) == o``; ``rerokit_version`` and unknown keys ignored).

        The gradient audit's JSON does not name its primary attack: it is the first entry of
        ``attacks`` besides ``mse`` whose numbers are the top-level success and interval.

        Args:
          d: the parsed JSON object of ``rerokit audit prior-aware|gradient --json``.
          where: prefix of error messages.

        Returns:
          The :class:`AuditOutcome`.

        Raises:
          ValueError: a key the command always writes is missing, or the top-level result is none of
            ``attacks``.
          TypeError: ``d`` (or one of its ``attacks``) is not a JSON object.
        """
        if not isinstance(d, Mapping):
            raise TypeError(f"{where}: expected a JSON object, got {type(d).__name__}")
        kind = cls.kind_of(d)
        raw = _key(d, "attacks", where)
        if not isinstance(raw, Mapping):
            raise TypeError(f"{where}: 'attacks' must be a JSON object, got {type(raw).__name__}")
        attacks = {k: MetricSummary.from_dict(v, f"{where}: attacks.{k}") for k, v in raw.items()}
        result = MetricSummary.from_flat("success", d, where)
        if kind == "gradient":
            attack = next((k for k, m in attacks.items() if k != "mse" and m == result), None)
            if attack is None:
                raise ValueError(f"{where}: the top-level success and interval are none of 'attacks'")
        else:
            attack = _key(d, "attack", where)
        settings = _key(d, "settings", where)
        if not isinstance(settings, Mapping):
            raise TypeError(f"{where}: 'settings' must be a JSON object, got {type(settings).__name__}")
        return cls(
            kind=kind, attack=attack, result=result, attacks=attacks,
            **{k: _key(d, k, where) for k in ("gamma", "kappa", "noise_multiplier", "trials", "seed")},
            settings=dict(settings), epsilon=_key(d, "epsilon", where), delta=_key(d, "delta", where),
            empirical=EmpiricalBounds.from_flat(d, where),
            mse=MetricSummary("mse", d["mse"], _key(d, "mse_ci_low", where), _key(d, "mse_ci_high", where))
            if kind == "gradient" else None,  # kind_of: "mse" in d
            mean_target_clipped_fraction=None if kind == "gradient" else _key(d, "mean_target_clipped_fraction", where),
            out=d.get("out"),
        )
