"""The practitioner's entry point: every certified risk of a DP-SGD run, from one call.

``rerokit.reconstruction_risk(mechanism, prior=...)`` takes the training run in the form the
user has it - an Opacus accountant or its ``history``, a dp-accounting ``DpEvent``, a rerokit
``Schedule``, or the keyword settings ``noise_multiplier=, sample_rate=, steps=`` - and a prior
(an int n: n equally likely candidates; a rerokit prior; or ``kappa=`` / ``log_kappa=``), builds
the privacy-loss distribution of the schedule once (:func:`rerokit.bounds.tradeoff.dpsgd_tradeoff`)
and reads off it (Kulynych, Gomez, Kaissis, Hayes, Balle et al., NeurIPS 2025, "Unifying
re-identification, attribute inference, and data reconstruction risks"):

* the reconstruction bound gamma = 1 - beta(kappa) of Hayes et al. 2023 (Thm 2 / Cor. 3) with its
  certified bracket - no attack that reconstructs the target from the trained model (or from all
  its gradients) succeeds with higher probability;
* the membership-inference risks of the same curve: advantage (TPR - FPR), TPR at given FPRs and
  the Bayes-optimal membership accuracy;
* epsilon at delta (add-or-remove adjacency), and the Gaussian-DP mu (exact for full-batch runs;
  for every run the mu of the Gaussian mechanism with the same reconstruction risk at this kappa).

Pure numpy/scipy: never imports torch (``python -c "import rerokit; rerokit.reconstruction_risk(
noise_multiplier=1, sample_rate=0.01, steps=1000, prior=10)"`` loads no torch).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Sequence

from rerokit._validate import check_probability
from rerokit.bounds.priors import resolve_baseline
from rerokit.bounds.schedule import Schedule

__all__ = ["ReconstructionRisk", "MembershipRisk", "reconstruction_risk", "reconstruction_risks", "as_schedule"]

DEFAULT_FPRS = (1e-3, 1e-2, 1e-1)


@dataclass(frozen=True)
class MembershipRisk:
    """Membership-inference risks read off the same trade-off curve (upper ends, brackets beside).

    Attributes:
      advantage: max over tests of TPR - FPR (= total variation; Kulynych et al. 2025).
      advantage_interval: its certified bracket.
      tpr_at_fpr: {fpr: upper bound on the TPR of any test at that FPR}.
      tpr_intervals: {fpr: (lower, upper)} certified brackets.
      bayes_accuracy: the best accuracy of a membership guess when the target is a member with
        probability ``prior_membership``; ``bayes_accuracy_interval`` its bracket.
      adjacency: "remove" (H1 = member; the curve of gamma) or "add_remove" (symmetrised).
    """

    advantage: float
    advantage_interval: tuple[float, float]
    tpr_at_fpr: dict[float, float]
    tpr_intervals: dict[float, tuple[float, float]]
    bayes_accuracy: float
    bayes_accuracy_interval: tuple[float, float]
    prior_membership: float
    adjacency: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: the membership risks with their certified brackets (the keys of
        ``rerokit bound dpsgd --json``'s ``membership`` object, which adds ``method``)."""
        out: dict[str, Any] = {
            "advantage": self.advantage,
            "membership_advantage": self.advantage,  # alias, as in `rerokit bound dpsgd --json`
            "advantage_interval": list(self.advantage_interval),
        }
        for f, v in self.tpr_at_fpr.items():
            out[f"tpr_at_fpr_{f:g}"] = v
        out["tpr_at_fpr_intervals"] = {f"{f:g}": list(iv) for f, iv in self.tpr_intervals.items()}
        out.update(bayes_accuracy=self.bayes_accuracy, bayes_accuracy_interval=list(self.bayes_accuracy_interval),
                   prior_membership=self.prior_membership, adjacency=self.adjacency)
        return out


@dataclass(frozen=True)
class ReconstructionRisk:
    """The certified risks of one DP-SGD run (see the module docstring).

    Attributes:
      gamma: certified upper bound on the success of any reconstruction attack (Hayes et al. 2023).
      gamma_interval: certified bracket (lower, upper) of the exact gamma; its width is the
        numerical error.
      kappa, log_kappa: the prior's baseline (the success of the best guess without the model);
        kappa is exactly 1/n for n equally likely candidates and may underflow to 0 (use
        log_kappa then).
      prior: a description of the prior.
      advantage: (gamma - kappa) / (1 - kappa), the normalised gain over the baseline.
      epsilon, delta: (epsilon, delta)-DP of the run (add-or-remove adjacency, certified PLD).
      mu_gdp: the exact Gaussian-DP mu of a full-batch run (q = 1), else None.
      mu_equivalent: Phi^-1(gamma) - Phi^-1(kappa), the mu of the Gaussian mechanism with the same
        reconstruction risk at this kappa (an upper bound, since gamma is).
      membership: :class:`MembershipRisk` of the same curve.
      schedule: the :class:`~rerokit.bounds.schedule.Schedule` evaluated.
      method: "exact" (certified PLD), "closed-form" or "envelope" (sigma outside the PLD's range).
      curve: the :class:`~rerokit.bounds.tradeoff.TradeoffCurve` (remove adjacency) every number
        above was read off, for further queries without a second PLD build (not in ``to_dict``).
    """

    gamma: float
    gamma_interval: tuple[float, float]
    kappa: float
    log_kappa: float
    prior: str
    advantage: float
    epsilon: float
    delta: float
    mu_gdp: float | None
    mu_equivalent: float
    membership: MembershipRisk
    schedule: Schedule
    method: str
    extras: dict[str, Any] = field(default_factory=dict)
    curve: Any = field(default=None, repr=False, compare=False)

    @property
    def gamma_error(self) -> float:
        """Width of the certified bracket of gamma (the numerical error)."""
        return self.gamma_interval[1] - self.gamma_interval[0]

    @property
    def log10_kappa(self) -> float:
        """log10 of the baseline kappa (readable where kappa underflows a float)."""
        return self.log_kappa / math.log(10.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (snake_case keys; the settings echoed back; the rerokit version)."""
        from rerokit import __version__

        steps = self.schedule.segments
        settings: dict[str, Any] = (
            {"noise_multiplier": steps[0][0], "sample_rate": steps[0][1], "steps": steps[0][2]}
            if len(steps) == 1 else {"schedule": self.schedule.as_triples()}
        )
        return {
            "gamma": self.gamma,
            "gamma_interval": list(self.gamma_interval),
            "gamma_error": self.gamma_error,
            "kappa": self.kappa,
            "log10_kappa": self.log10_kappa,
            "prior": self.prior,
            "advantage": self.advantage,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "mu_gdp": self.mu_gdp,
            "mu_equivalent": self.mu_equivalent,
            "membership": self.membership.to_dict(),
            "method": self.method,
            "settings": {**settings, "total_steps": self.schedule.total_steps},
            **({"extras": dict(self.extras)} if self.extras else {}),
            "rerokit_version": __version__,
        }

    def __str__(self) -> str:
        return (f"gamma <= {self.gamma:.4g} (baseline kappa = {self.kappa:.4g}; prior: {self.prior}); "
                f"membership advantage <= {self.membership.advantage:.4g}; "
                f"epsilon = {self.epsilon:.4g} at delta = {self.delta:g}")


def as_schedule(mechanism: Any = None, *, noise_multiplier: Any = None, sample_rate: Any = None,
                steps: Any = None) -> Schedule:
    """The :class:`Schedule` meant by a mechanism object or by the keyword settings (exactly one).

    Args:
        mechanism: an Opacus accountant or its ``.history``, a dp-accounting ``DpEvent``, a
            :class:`Schedule`, or None (then the three settings are required).
        noise_multiplier, sample_rate, steps: sigma, q and T, keywords only.

    Returns:
        The :class:`Schedule`.

    Raises:
        TypeError: saying what to pass when a number is given positionally (the settings are
            keywords) or the object is of an unknown kind.
        ValueError: settings missing or given together with a mechanism, or out of range.
    """
    settings = (noise_multiplier, sample_rate, steps)
    if mechanism is None:
        if any(s is None for s in settings):
            missing = [n for n, s in zip(("noise_multiplier", "sample_rate", "steps"), settings) if s is None]
            raise ValueError(
                "give the training run: an Opacus accountant (or its .history), a dp_accounting DpEvent, or all "
                f"of noise_multiplier=, sample_rate=, steps= (missing: {', '.join(missing)})"
            )
        return Schedule.from_settings(*settings)
    if any(s is not None for s in settings):
        raise ValueError("give either a mechanism (accountant, history, DpEvent, Schedule) or the keyword settings "
                         "noise_multiplier=, sample_rate=, steps=, not both")
    if isinstance(mechanism, numbers.Number) or isinstance(mechanism, bool):
        raise TypeError(
            f"the first argument is the mechanism (an Opacus accountant or its .history, a dp_accounting DpEvent); "
            f"got the number {mechanism!r}. Pass settings as keywords: reconstruction_risk(noise_multiplier=..., "
            "sample_rate=..., steps=..., prior=...)"
        )
    return Schedule.coerce(mechanism)


def _probit_log(log_p: float) -> float:
    from scipy.special import ndtri_exp

    return float(ndtri_exp(min(log_p, -1e-300)))


def reconstruction_risk(
    mechanism: Any = None,
    prior: Any = None,
    *,
    kappa: float | None = None,
    log_kappa: float | None = None,
    eta: float | None = None,
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    delta: float = 1e-5,
    fprs: Sequence[float] = DEFAULT_FPRS,
    prior_membership: float = 0.5,
    adjacency: str = "remove",
    value_discretization_interval: float | None = None,
) -> ReconstructionRisk:
    """Certified reconstruction and membership risks of a DP-SGD run.

    Args:
      mechanism: the run - an Opacus accountant (``PrivacyEngine().accountant`` or
        :class:`rerokit.opacus.RiskAccountant`), its ``history`` (list of (noise_multiplier,
        sample_rate, steps)), a dp-accounting ``DpEvent`` (Gaussian / PoissonSampled /
        SelfComposed / Composed) or a rerokit ``Schedule``. Omit it to give the settings below.
      prior: the adversary's prior - an int n (n equally likely candidates: kappa = 1/n) or a
        rerokit prior (e.g. ``PixelTolerancePrior``); or give ``kappa=`` / ``log_kappa=``.
      kappa, log_kappa: the baseline directly (exactly one of prior / kappa / log_kappa).
      eta: the error threshold for priors with a continuous error (balls, Gaussians).
      noise_multiplier, sample_rate, steps: keyword settings of a constant run (instead of
        ``mechanism``).
      delta: delta of the reported epsilon.
      fprs: false-positive rates at which to bound the membership TPR.
      prior_membership: probability that the target is a member, for the Bayes accuracy.
      adjacency: "remove" (default: the pair of Hayes et al., H1 = member) or "add_remove" (the
        symmetrised f-DP curve, as riskcal reports) for the membership risks; gamma always uses
        the remove pair of Hayes et al. Thm 2.
      value_discretization_interval: PLD grid step (default automatic).

    Returns:
      A frozen :class:`ReconstructionRisk` (``to_dict()`` for JSON).
    """
    sched = as_schedule(mechanism, noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps)
    if prior is None and kappa is None and log_kappa is None:
        raise ValueError("give the adversary's prior: prior=n for n equally likely candidates (e.g. prior=10), "
                         "a rerokit prior, or kappa= / log_kappa= for its baseline")
    base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa, eta=eta)
    return _risks(sched, [base], delta, fprs, prior_membership, adjacency, value_discretization_interval)[0]


def reconstruction_risks(
    mechanism: Any = None, priors: Sequence[Any] = (10,), *, eta: float | None = None,
    noise_multiplier: float | None = None, sample_rate: float | None = None, steps: int | None = None,
    delta: float = 1e-5, fprs: Sequence[float] = DEFAULT_FPRS, prior_membership: float = 0.5,
    adjacency: str = "remove", value_discretization_interval: float | None = None,
) -> tuple[ReconstructionRisk, ...]:
    """:func:`reconstruction_risk` for several priors of one run, from one composed PLD.

    The trade-off curve, epsilon and the membership risks are computed once and shared; each
    prior adds one query of the curve. ``reconstruction_risks(m, [p])[0]`` equals
    ``reconstruction_risk(m, p)`` number for number.

    Args:
      mechanism, noise_multiplier, sample_rate, steps: the run (as :func:`reconstruction_risk`).
      priors: non-empty sequence of priors: ints n (uniform over n candidates) or rerokit priors
        (:class:`~rerokit.bounds.priors.BaselinePrior` for a bare kappa).
      eta, delta, fprs, prior_membership, adjacency, value_discretization_interval: as
        :func:`reconstruction_risk`.

    Returns:
      One :class:`ReconstructionRisk` per prior, in order.
    """
    sched = as_schedule(mechanism, noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps)
    if isinstance(priors, (str, bytes)) or not isinstance(priors, Sequence) or not priors:
        raise ValueError("priors must be a non-empty list of priors (ints n >= 1 or rerokit priors)")
    bases = [resolve_baseline(p, eta=eta) for p in priors]
    return _risks(sched, bases, delta, fprs, prior_membership, adjacency, value_discretization_interval)


def _risks(sched: Schedule, bases: Sequence[Any], delta: float, fprs: Sequence[float], prior_membership: float,
           adjacency: str, value_discretization_interval: float | None) -> tuple[ReconstructionRisk, ...]:
    """The risks of ``sched`` at each resolved baseline, from one curve (one composed PLD)."""
    from rerokit.bounds.tradeoff import dpsgd_tradeoff

    delta = check_probability("delta", delta, high_open=True)
    prior_membership = check_probability("prior_membership", prior_membership, high_open=True)
    fprs = tuple(check_probability(f"fprs[{i}]", f, low_open=False) for i, f in enumerate(fprs))
    curve = dpsgd_tradeoff(segments=sched, adjacency="remove",
                           value_discretization_interval=value_discretization_interval)
    mcurve = curve if adjacency == "remove" else dpsgd_tradeoff(
        segments=sched, adjacency=adjacency, value_discretization_interval=value_discretization_interval)
    membership = _membership(mcurve, fprs, prior_membership)
    eps = curve.epsilon(delta)  # both directions' PLDs, or the exact epsilon of the q = 1 envelope
    mu_gdp = sched.mu_full_batch if sched.full_batch else None
    out = []
    for base in bases:
        g = curve.reconstruction_success(log_kappa=base.log_kappa)
        lo, hi = g.interval if g.interval is not None else (base.kappa, g.value)
        if base.log_kappa >= 0.0 or g.value >= 1.0:
            mu_eq = 0.0 if base.log_kappa >= 0.0 else math.inf
        else:
            mu_eq = max(0.0, _probit_log(math.log(g.value)) - _probit_log(base.log_kappa))
        adv = 0.0 if base.kappa >= 1.0 else (g.value - base.kappa) / (1.0 - base.kappa)
        out.append(ReconstructionRisk(
            gamma=g.value, gamma_interval=(float(lo), float(hi)), kappa=base.kappa, log_kappa=base.log_kappa,
            prior=base.prior.name, advantage=adv, epsilon=float(eps), delta=delta, mu_gdp=mu_gdp,
            mu_equivalent=mu_eq, membership=membership, schedule=sched, method=g.method, curve=curve,
        ))
    return tuple(out)


def _membership(curve: Any, fprs: tuple[float, ...], prior_membership: float) -> MembershipRisk:
    import numpy as np

    adv = curve.advantage()
    acc = curve.bayes_accuracy(prior_membership)
    tpr = curve.tpr_at_fpr(np.asarray(fprs, dtype=float)) if fprs else None
    tpr_up = {f: float(tpr.upper[i]) for i, f in enumerate(fprs)} if tpr is not None else {}
    tpr_iv = {f: (float(tpr.lower[i]), float(tpr.upper[i])) for i, f in enumerate(fprs)} if tpr is not None else {}
    return MembershipRisk(
        advantage=adv.value, advantage_interval=tuple(adv.interval), tpr_at_fpr=tpr_up, tpr_intervals=tpr_iv,
        bayes_accuracy=acc.value, bayes_accuracy_interval=tuple(acc.interval), prior_membership=prior_membership,
        adjacency=curve.adjacency,
    )
