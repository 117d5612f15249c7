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

Sampling and the unit of privacy are part of the mechanism (``sampler="shuffle"`` or
``sampler=Sampling("shuffle", examples_per_user=3)``; see :mod:`rerokit.bounds.schedule`): a run
with shuffled fixed-size batches is certified without
amplification by subsampling (each epoch one Gaussian release of the target), and the Poisson
number is shown beside it in ``poisson_assumption``, flagged as an assumption the run did not meet.

Pure numpy/scipy: never imports torch (``python -c "import rerokit; rerokit.reconstruction_risk(
noise_multiplier=1, sample_rate=0.01, steps=1000, prior=10)"`` loads no torch).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Sequence

from rerokit._validate import check_choice, check_nonnegative, check_positive, check_probability
from rerokit.bounds.priors import resolve_baseline
from rerokit.bounds.schedule import Sampling, Schedule

__all__ = ["ReconstructionRisk", "MembershipRisk", "TprAtFpr", "RiskOptions", "reconstruction_risk",
           "reconstruction_risks", "as_schedule"]

DEFAULT_FPRS = (1e-3, 1e-2, 1e-1)

ADJACENCIES = ("remove", "add_remove")


@dataclass(frozen=True)
class RiskOptions:
    """Rarely changed settings of :func:`reconstruction_risk` / :func:`reconstruction_risks`.

    ``reconstruction_risk(accountant, prior=10, options=RiskOptions(fprs=(0.01,), adjacency="add_remove"))``.

    Attributes:
      fprs: the false-positive rates at which to bound the membership TPR, each in [0, 1] (default
        1e-3, 1e-2, 1e-1; any other FPR can still be asked of the result's ``tpr_at_fpr``).
      prior_membership: the probability that the target is a member, in (0, 1), for the Bayes
        accuracy of a membership guess (default 0.5).
      adjacency: the membership risks' pair: "remove" (default: the pair of Hayes et al., H1 =
        member) or "add_remove" (the symmetrised f-DP curve, as riskcal reports). gamma always uses
        the remove pair of Hayes et al. Thm 2.
      eta: the reconstruction-error threshold of a prior with a continuous error (balls, Gaussians,
        pixel tolerance), a number >= 0; None (default): the prior's natural threshold (exact match
        for discrete priors).
      value_discretization_interval: the PLD grid step, a finite number > 0; None (default) chooses
        it automatically.

    Raises:
      ValueError: if a field is out of range (the message names it, e.g. ``RiskOptions.fprs[1]``).
      TypeError: if a field has the wrong type.
    """

    fprs: tuple[float, ...] = DEFAULT_FPRS
    prior_membership: float = 0.5
    adjacency: str = "remove"
    eta: float | None = None
    value_discretization_interval: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.fprs, (str, bytes)) or not isinstance(self.fprs, Sequence):
            raise TypeError(f"RiskOptions.fprs must be a sequence of numbers in [0, 1], got {type(self.fprs).__name__}")
        object.__setattr__(self, "fprs", tuple(check_probability(f"RiskOptions.fprs[{i}]", f, low_open=False)
                                               for i, f in enumerate(self.fprs)))
        object.__setattr__(self, "prior_membership", check_probability(
            "RiskOptions.prior_membership", self.prior_membership, high_open=True))
        check_choice("RiskOptions.adjacency", self.adjacency, ADJACENCIES)
        if self.eta is not None:
            object.__setattr__(self, "eta", check_nonnegative("RiskOptions.eta", self.eta))
        if self.value_discretization_interval is not None:
            object.__setattr__(self, "value_discretization_interval", check_positive(
                "RiskOptions.value_discretization_interval", self.value_discretization_interval))


class TprAtFpr(dict):
    """{fpr: upper bound on the TPR of any membership test at that FPR}, answerable at *any* FPR.

    The FPRs computed up front are stored; ``tpr[x]`` or ``tpr(x)`` at another x in [0, 1] reads
    the same certified trade-off curve (upper end of its bracket, :meth:`interval` for both
    ends). ``tpr(array)`` returns an array.
    """

    def __init__(self, values: dict[float, float], intervals: dict[float, tuple[float, float]], curve: Any = None):
        super().__init__(values)
        self._intervals = dict(intervals)
        self._curve = curve

    def _query(self, x: Any) -> Any:
        import numpy as np

        if self._curve is None:
            raise KeyError(f"no TPR stored at FPR {x!r} and no trade-off curve to compute it "
                           f"(stored: {sorted(self)})")
        arr = np.asarray(x, dtype=float)
        if not np.all((arr >= 0.0) & (arr <= 1.0)):
            raise ValueError(f"fpr must be in [0, 1], got {x!r}")
        return self._curve.tpr_at_fpr(arr)

    def __missing__(self, x: Any) -> float:
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise KeyError(x)
        return self.interval(float(x))[1]

    def __call__(self, fpr: Any) -> Any:
        """Upper bound on the TPR at ``fpr`` (a float in [0, 1] or an array of them).

        Raises:
          ValueError: if an FPR is outside [0, 1].
        """
        import numpy as np

        if np.ndim(fpr) == 0:
            return self[float(fpr)]
        return np.asarray(self._query(fpr).upper, dtype=float)

    def interval(self, fpr: float) -> tuple[float, float]:
        """Certified bracket (lower, upper) of the TPR at ``fpr``."""
        import numpy as np

        if fpr in self._intervals:
            return self._intervals[fpr]
        t = self._query(float(fpr))
        return float(np.ravel(t.lower)[0]), float(np.ravel(t.upper)[0])

    def points(self) -> list[dict[str, Any]]:
        """The stored points as JSON objects ``{"fpr", "tpr", "interval"}`` (sorted by FPR)."""
        return [{"fpr": f, "tpr": self[f], "interval": list(self.interval(f))} for f in sorted(self)]


@dataclass(frozen=True)
class MembershipRisk:
    """Membership-inference risks read off the same trade-off curve (upper ends, brackets beside).

    Attributes:
      advantage: max over tests of TPR - FPR (= total variation; Kulynych et al. 2025).
      advantage_interval: its certified bracket.
      tpr_at_fpr: :class:`TprAtFpr`, {fpr: upper bound on the TPR of any test at that FPR} for the
        requested FPRs, and ``tpr_at_fpr(x)`` / ``tpr_at_fpr[x]`` for any other x in [0, 1].
      tpr_intervals: {fpr: (lower, upper)} certified brackets of the requested FPRs.
      bayes_accuracy: the best accuracy of a membership guess when the target is a member with
        probability ``prior_membership``; ``bayes_accuracy_interval`` its bracket.
      adjacency: "remove" (H1 = member; the curve of gamma) or "add_remove" (symmetrised).
    """

    advantage: float
    advantage_interval: tuple[float, float]
    tpr_at_fpr: TprAtFpr
    tpr_intervals: dict[float, tuple[float, float]]
    bayes_accuracy: float
    bayes_accuracy_interval: tuple[float, float]
    prior_membership: float
    adjacency: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: the membership risks with their certified brackets (the keys of
        ``rerokit bound dpsgd --json``'s ``membership`` object, which adds ``method``); the TPRs as
        a list of ``{"fpr", "tpr", "interval"}`` objects (keys without dots)."""
        return {
            "advantage": self.advantage,
            "advantage_interval": list(self.advantage_interval),
            "tpr_at_fpr": [{"fpr": f, "tpr": self.tpr_at_fpr[f], "interval": list(self.tpr_intervals[f])}
                           for f in sorted(self.tpr_intervals)],
            "bayes_accuracy": self.bayes_accuracy,
            "bayes_accuracy_interval": list(self.bayes_accuracy_interval),
            "prior_membership": self.prior_membership,
            "adjacency": self.adjacency,
        }


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
      poisson_assumption: for a run that did not use Poisson sampling, the numbers a Poisson
        accountant would give (:class:`~rerokit.bounds.certify.PoissonAssumption`; not certified
        for this run); None for Poisson runs.
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
    poisson_assumption: Any = None

    @property
    def gamma_error(self) -> float:
        """Width of the certified bracket of gamma (the numerical error)."""
        return self.gamma_interval[1] - self.gamma_interval[0]

    @property
    def log10_kappa(self) -> float:
        """log10 of the baseline kappa (readable where kappa underflows a float)."""
        return self.log_kappa / math.log(10.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (snake_case keys; the settings echoed back; the rerokit version). No float is
        infinite (``json.dumps`` would write the non-JSON token Infinity): an unbounded value is the string
        "inf", as in the CLI's JSON."""
        return _finite_json(self._dict())

    def _dict(self) -> dict[str, Any]:
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
            "settings": {**settings, "total_steps": self.schedule.total_steps, **self.schedule.sampling_dict()},
            **({"poisson_assumption": self.poisson_assumption.to_dict()} if self.poisson_assumption else {}),
            **({"extras": dict(self.extras)} if self.extras else {}),
            "rerokit_version": __version__,
        }

    def __str__(self) -> str:
        return (f"gamma <= {self.gamma:.4g} (baseline kappa = {self.kappa:.4g}; prior: {self.prior}); "
                f"membership advantage <= {self.membership.advantage:.4g}; "
                f"epsilon = {self.epsilon:.4g} at delta = {self.delta:g}")


def _finite_json(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _finite_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite_json(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def as_schedule(mechanism: Any = None, *, noise_multiplier: Any = None, sample_rate: Any = None,
                steps: Any = None, sampler: str | Sampling | None = None) -> Schedule:
    """The :class:`Schedule` meant by a mechanism object or by the keyword settings (exactly one).

    Args:
        mechanism: an Opacus accountant or its ``.history``, a dp-accounting ``DpEvent``, a
            :class:`Schedule`, or None (then the three settings are required).
        noise_multiplier, sample_rate, steps: sigma, q and T, keywords only.
        sampler: "poisson", "shuffle" or "full_batch", or a :class:`~rerokit.bounds.schedule.Sampling`
            with the unit of privacy; None (or a ``Sampling`` whose sampler is None) keeps the
            mechanism's sampler (a rerokit ``RiskAccountant`` knows it; otherwise Poisson, assumed). The
            unit of privacy is the ``Sampling``'s; with a bare name or None, the mechanism's (default 1).

    Returns:
        The :class:`Schedule` (with its sampler and unit of privacy).

    Raises:
        TypeError: saying what to pass when a number is given positionally (the settings are
            keywords) or the object is of an unknown kind.
        ValueError: settings missing or given together with a mechanism, or out of range.
    """
    settings = (noise_multiplier, sample_rate, steps)
    smp = None if sampler is None else Sampling.of(sampler)
    name, examples_per_user = (None, None) if smp is None else (smp.sampler, smp.examples_per_user)
    if not isinstance(sampler, Sampling):  # a bare name says nothing of the unit of privacy: the mechanism's
        examples_per_user = None
    if mechanism is None:
        if any(s is None for s in settings):
            missing = [n for n, s in zip(("noise_multiplier", "sample_rate", "steps"), settings) if s is None]
            raise ValueError(
                "give the training run: an Opacus accountant (or its .history), a dp_accounting DpEvent, or all "
                f"of noise_multiplier=, sample_rate=, steps= (missing: {', '.join(missing)})"
            )
        return Schedule.from_settings(*settings, sampler=name, examples_per_user=examples_per_user or 1)
    if any(s is not None for s in settings):
        raise ValueError("give either a mechanism (accountant, history, DpEvent, Schedule) or the keyword settings "
                         "noise_multiplier=, sample_rate=, steps=, not both")
    if isinstance(mechanism, numbers.Number) or isinstance(mechanism, bool):
        raise TypeError(
            f"the first argument is the mechanism (an Opacus accountant or its .history, a dp_accounting DpEvent); "
            f"got the number {mechanism!r}. Pass settings as keywords: reconstruction_risk(noise_multiplier=..., "
            "sample_rate=..., steps=..., prior=...)"
        )
    return Schedule.coerce(mechanism).with_sampling(name, examples_per_user)


def _probit_log(log_p: float) -> float:
    from rerokit.bounds.pld.normal import normal_ppf_log  # (scipy-free: no scipy.special on this path)

    return normal_ppf_log(min(log_p, -1e-300))


def _options(options: Any) -> RiskOptions:
    if options is None:
        return RiskOptions()
    if not isinstance(options, RiskOptions):
        raise TypeError(f"options must be a rerokit.RiskOptions, got {type(options).__name__}")
    return options


def reconstruction_risk(
    mechanism: Any = None,
    prior: Any = None,
    *,
    kappa: float | None = None,
    log_kappa: float | None = None,
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    delta: float = 1e-5,
    sampler: str | Sampling | None = None,
    options: RiskOptions | None = None,
) -> ReconstructionRisk:
    """Certified reconstruction and membership risks of a DP-SGD run.

    Args:
      mechanism: the run - an Opacus accountant (``PrivacyEngine().accountant`` or
        :class:`rerokit.opacus.RiskAccountant`), its ``history`` (list of (noise_multiplier,
        sample_rate, steps)), a dp-accounting ``DpEvent`` (Gaussian / PoissonSampled /
        SelfComposed / Composed) or a rerokit ``Schedule``. Omit it to give the settings below.
      prior: the adversary's prior - an int n (n equally likely candidates: kappa = 1/n) or a
        rerokit prior (e.g. ``PixelTolerancePrior``); or give ``kappa=`` / ``log_kappa=``.
      kappa: the baseline success in (0, 1] directly (exactly one of prior / kappa / log_kappa).
      log_kappa: the natural log of the baseline (<= 0), for baselines that underflow.
      noise_multiplier: sigma > 0 of a constant run (keyword settings, with ``sample_rate`` and
        ``steps``, instead of ``mechanism``).
      sample_rate: its sampling rate q in (0, 1].
      steps: its number of steps T >= 1.
      delta: delta of the reported epsilon, in (0, 1) (default 1e-5).
      sampler: how the run formed its batches: "poisson" (amplified), "shuffle" (fixed-size
        shuffled batches, each example at most once per epoch; certified without amplification)
        or "full_batch", or a :class:`~rerokit.bounds.schedule.Sampling` that also gives the unit
        of privacy (``Sampling(examples_per_user=3)``); None: the mechanism's (Poisson, assumed,
        unless a ``RiskAccountant`` knows).
      options: the rarely changed :class:`RiskOptions` (membership FPRs, prior membership,
        adjacency, continuous-error threshold eta, PLD grid step); None for the defaults.

    Returns:
      A frozen :class:`ReconstructionRisk` (``to_dict()`` for JSON).

    Raises:
      ValueError: if the run or the prior is missing or given twice, or a value is out of range
        (the message names it).
      TypeError: if a value has the wrong type (e.g. ``options`` not a :class:`RiskOptions`).
    """
    opts = _options(options)
    sched = as_schedule(mechanism, noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                        sampler=sampler)
    if prior is None and kappa is None and log_kappa is None:
        raise ValueError("give the adversary's prior: prior=n for n equally likely candidates (e.g. prior=10), "
                         "a rerokit prior, or kappa= / log_kappa= for its baseline")
    base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa, eta=opts.eta)
    return _risks(sched, [base], delta, opts)[0]


def reconstruction_risks(
    mechanism: Any = None, priors: Sequence[Any] = (10,), *,
    noise_multiplier: float | None = None, sample_rate: float | None = None, steps: int | None = None,
    delta: float = 1e-5, sampler: str | Sampling | None = None, options: RiskOptions | None = None,
) -> tuple[ReconstructionRisk, ...]:
    """:func:`reconstruction_risk` for several priors of one run, from one composed PLD.

    The trade-off curve, epsilon and the membership risks are computed once and shared; each
    prior adds one query of the curve. ``reconstruction_risks(m, [p])[0]`` equals
    ``reconstruction_risk(m, p)`` number for number.

    Args:
      mechanism: the run (as :func:`reconstruction_risk`), or None with the keyword settings.
      priors: non-empty sequence of priors: ints n (uniform over n candidates) or rerokit priors
        (:class:`~rerokit.bounds.priors.BaselinePrior` for a bare kappa).
      noise_multiplier: sigma > 0 of a constant run (with ``sample_rate`` and ``steps``).
      sample_rate: its sampling rate q in (0, 1].
      steps: its number of steps T >= 1.
      delta: delta of the reported epsilon, in (0, 1) (default 1e-5).
      sampler: as :func:`reconstruction_risk` (a name or a :class:`~rerokit.bounds.schedule.Sampling`).
      options: the :class:`RiskOptions` (as :func:`reconstruction_risk`; its ``eta`` applies to every
        prior).

    Returns:
      One :class:`ReconstructionRisk` per prior, in order.

    Raises:
      ValueError: if ``priors`` is empty or not a sequence, or as :func:`reconstruction_risk`.
      TypeError: as :func:`reconstruction_risk`.
    """
    opts = _options(options)
    sched = as_schedule(mechanism, noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                        sampler=sampler)
    if isinstance(priors, (str, bytes)) or not isinstance(priors, Sequence) or not priors:
        raise ValueError("priors must be a non-empty list of priors (ints n >= 1 or rerokit priors)")
    bases = [resolve_baseline(p, eta=opts.eta) for p in priors]
    return _risks(sched, bases, delta, opts)


def _risks(sched: Schedule, bases: Sequence[Any], delta: float, opts: RiskOptions) -> tuple[ReconstructionRisk, ...]:
    """The risks of ``sched`` at each resolved baseline, from one curve (one composed PLD) of what
    its sampler and unit of privacy certify (:mod:`rerokit.bounds.certify`)."""
    from rerokit.bounds.certify import certified_epsilon, certified_tradeoff, poisson_assumption

    delta = check_probability("delta", delta, high_open=True)
    fprs, prior_membership, adjacency = opts.fprs, opts.prior_membership, opts.adjacency
    value_discretization_interval = opts.value_discretization_interval
    curve, cert = certified_tradeoff(sched, adjacency="remove",
                                     value_discretization_interval=value_discretization_interval)
    mcurve = curve if adjacency == "remove" else certified_tradeoff(
        sched, adjacency=adjacency, value_discretization_interval=value_discretization_interval)[0]
    membership = _membership(mcurve, fprs, prior_membership)
    # the PLD's epsilon where it is finite; below its floor the RDP / Gaussian-DP conversion
    # (sigma outside the PLD's range: the exact epsilon of the q = 1 envelope)
    eps = certified_epsilon(sched, delta, pld_epsilon=curve.epsilon(delta))
    mu_gdp = cert.schedule.mu_full_batch if cert.schedule.full_batch and cert.group_size == 1 else None
    assumed = None
    if sched.sampler != "poisson" and not sched.full_batch:  # what a Poisson accountant prints, flagged as not met
        pois = _risks(sched.as_poisson(), bases, delta, dataclasses.replace(opts, fprs=(), adjacency="remove"))
        assumed = [poisson_assumption(sched, r.gamma, r.epsilon, delta) for r in pois]
    out = []
    for i, base in enumerate(bases):
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
            poisson_assumption=assumed[i] if assumed else None,
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
        advantage=adv.value, advantage_interval=tuple(adv.interval), tpr_at_fpr=TprAtFpr(tpr_up, tpr_iv, curve),
        tpr_intervals=tpr_iv,
        bayes_accuracy=acc.value, bayes_accuracy_interval=tuple(acc.interval), prior_membership=prior_membership,
        adjacency=curve.adjacency,
    )
