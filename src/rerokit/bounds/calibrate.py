"""Calibrate DP-SGD to a target reconstruction risk (Hayes et al. 2023, Thm 2 / Cor. 3) or (eps, delta).

Every calibrator here is one call of the one solver :func:`rerokit.bounds.solve.calibrate_monotone`
on a monotone certified curve, started from a closed-form guess so that it converges in a few
evaluations:

``calibrate_noise_multiplier``
    the smallest sigma whose certified ReRo bound gamma(sigma, q, T, kappa)
    (:func:`rerokit.bounds.dpsgd.rero_dpsgd`, method "exact") is at most a target. Start: the
    sigma at which the Gaussian-DP approximation of DP-SGD (q = 1: exact; q < 1: the CLT of
    Bu et al. 2020, mu = q sqrt(T (e^{1/sigma^2} - 1))) meets the target.
``calibrate_steps``
    the largest number of steps T with gamma <= target (same guess, solved for T).
``noise_multiplier_for_epsilon``
    the smallest sigma such that DP-SGD is (epsilon, delta)-DP (add-or-remove adjacency): exact
    Gaussian-DP composition for q = 1 (:mod:`rerokit.bounds.gaussian`), rerokit's certified PLD
    epsilon (:func:`rerokit.bounds.dpsgd.epsilon_dpsgd`) for q < 1, bracketed above by the q = 1
    value (subsampling never increases epsilon).

Every calibrator takes the run's ``sampler`` ("poisson", "shuffle", "full_batch", or a
:class:`~rerokit.bounds.schedule.Sampling` with the unit of privacy ``examples_per_user``) and calibrates what is certified under them
(:mod:`rerokit.bounds.certify`): with shuffled batches no amplification by subsampling, so the
noise multiplier for a target gamma after E epochs satisfies Phi(Phi^{-1}(kappa) + k sqrt(E)/sigma)
<= target.

The searches compare the *certified upper* value with the target, so the returned setting
provably meets it; the (epsilon, delta) reported beside a gamma calibration is rerokit's own
certified PLD epsilon (no dp-accounting import: the whole calibration takes well under a second).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from rerokit._validate import check_int, check_positive, check_probability
from rerokit.bounds.priors import resolve_baseline
from rerokit.bounds.solve import AllFeasible, NoFeasibleValue, SearchRange, calibrate_monotone

__all__ = [
    "CalibrationResult",
    "calibrate_noise_multiplier",
    "calibrate_steps",
    "noise_multiplier_for_epsilon",
    "SIGMA_SEARCH_RANGE",
    "MIN_MEANINGFUL_NOISE_MULTIPLIER",
]

SIGMA_SEARCH_RANGE = (1e-6, 2.0**40)
"""Noise multipliers the gamma calibration searches (outside it: a one-line error)."""

MIN_MEANINGFUL_NOISE_MULTIPLIER = 1e-4
"""Below this sigma (noise std < 1e-4 C) training is effectively non-private; an (epsilon,
delta) target that needs less noise is rejected rather than searched for."""


@dataclass(frozen=True)
class CalibrationResult:
    """A calibrated DP-SGD setting and its certified bound.

    Attributes:
      noise_multiplier, sample_rate, steps: the setting (one of sigma / T was solved for).
      kappa, log_kappa: the prior's baseline (kappa exactly 1/n for a uniform prior of size n).
      target_gamma: the target; ``gamma`` (<= target) is the certified upper bound at the setting
        and ``gamma_error`` the width of its certified bracket.
      epsilon: certified epsilon at ``delta`` of the setting (None when ``delta`` was None).
      delta: the delta of ``epsilon`` (nan when ``delta`` was None).
      bracket: the last search interval ``(lo, hi)`` in the solved parameter: one end the returned
        value, the other an evaluated infeasible one - ``(sigma', sigma)`` with sigma' < sigma
        infeasible for the noise multiplier, ``(T, T + 1)`` (or ``(max_steps, max_steps)`` when
        capped) for the steps.
      evaluations: bound evaluations used by the search.
      capped: steps only - the target still held at ``max_steps``.
      sampler: the sampler calibrated under ("poisson", "shuffle", "full_batch").
      examples_per_user: the unit of privacy calibrated for.
    """

    noise_multiplier: float
    sample_rate: float
    steps: int
    kappa: float
    log_kappa: float
    target_gamma: float
    gamma: float
    gamma_error: float
    epsilon: float | None
    delta: float
    bracket: tuple[float, float]
    evaluations: int
    capped: bool = False
    sampler: str = "poisson"
    examples_per_user: int = 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the fields (``bracket`` as a list)."""
        d = asdict(self)
        d["bracket"] = list(self.bracket)
        return d


def _check_target(target_gamma: float, lk: float) -> float:
    g = check_probability("target_gamma", target_gamma)
    if not g > math.exp(lk) or g >= 1.0:
        raise ValueError(f"target_gamma must be in (kappa, 1) = ({math.exp(lk):.6g}, 1), got {target_gamma!r}")
    return g


def _probit(log_p: float) -> float:
    """Phi^{-1}(e^log_p) (:func:`rerokit.bounds.pld.normal.normal_ppf_log`, scipy-free) - for start guesses."""
    from rerokit.bounds.pld.normal import normal_ppf_log  # (the PLD package: loaded when first needed)

    return normal_ppf_log(log_p)


def _gdp_target_mu(target: float, lk: float) -> float:
    """mu with Phi(Phi^{-1}(kappa) + mu) = target (the q = 1 closed form of gamma, inverted)."""
    return max(1e-12, _probit(math.log(target)) - _probit(lk))


def _sched(sigma: float, q: float, T: int, sampling: tuple[str, int]):
    from rerokit.bounds.schedule import Schedule

    return Schedule.from_settings(sigma, q, T, sampler=sampling[0], examples_per_user=sampling[1])


def _check_sampling(sampler: Any) -> tuple[str, int]:
    from rerokit.bounds.schedule import Sampling

    s = Sampling.of(sampler)
    return s.sampler or "poisson", s.examples_per_user


def _sigma_guess(mu: float, q: float, T: int, sampling: tuple[str, int] = ("poisson", 1)) -> float:
    """sigma at which DP-SGD's mu-GDP approximation (q = 1: exact; q < 1: CLT, Bu et al. 2020) is ``mu``;
    without amplification (shuffle / full batch) and for groups the exact k sqrt(releases)/mu."""
    if sampling != ("poisson", 1):
        c = _sched(1.0, q, T, sampling).certification()
        if c.group_size == 1:  # releases at noise sigma / k: sigma = k sqrt(releases) / mu
            return sampling[1] * math.sqrt(c.releases) / mu
        return sampling[1] * _sigma_guess(mu, q, T)
    if q == 1.0:
        return math.sqrt(T) / mu
    r = mu / (q * math.sqrt(T))  # mu = q sqrt(T (e^{1/sigma^2} - 1))
    return 1.0 / math.sqrt(math.log1p(r * r))


def _steps_guess(mu: float, sigma: float, q: float) -> float:
    # a starting point only: inf (the search starts at T = 1) where it over- or underflows
    # (sigma 1e308 made per_step 0, q 1e-300 overflowed the square)
    if q == 1.0:
        x = mu * sigma
        return x * x
    per_step = q * math.sqrt(math.expm1(min(1.0 / sigma / sigma, 700.0)))
    if per_step == 0.0:
        return math.inf
    r = mu / per_step
    return r * r


def _bound(sigma: float, q: float, T: int, lk: float, h: float | None, *, delta: float | None = None,
           sampling: tuple[str, int] = ("poisson", 1)):
    # The search compares the very value that is reported: the bracketed run's. A run without the
    # bracket skips the width-chosen refinements, so its upper end can differ (both certified); the
    # search once compared that one and reported gamma above the target (1e-6 asked, sigma 0.4499,
    # q 1e-3, T 1e3, kappa 1e-9: tests/bounds/test_calibrate.py).
    from rerokit.bounds.certify import certified_rero

    from rerokit.bounds.options import Comparisons, Numerics

    return certified_rero(_sched(sigma, q, T, sampling), log_kappa=lk,
                          comparisons=False if delta is None else Comparisons(delta=delta),
                          numerics=Numerics(value_discretization_interval=h))[0]


def _result(sigma: float, q: float, T: int, base, g: float, h: float | None, delta: float | None, bracket,
            evaluations: int, capped: bool = False, sampling: tuple[str, int] = ("poisson", 1)) -> CalibrationResult:
    """The certified bound (with its bracket) and epsilon at the calibrated setting."""
    from rerokit.bounds.dpsgd_details import DpsgdDetails

    b = _bound(sigma, q, T, base.log_kappa, h, delta=delta, sampling=sampling)
    cmp = DpsgdDetails.of(b).comparisons
    return CalibrationResult(
        noise_multiplier=sigma, sample_rate=q, steps=T, kappa=base.kappa, log_kappa=base.log_kappa,
        target_gamma=g, gamma=b.value, gamma_error=b.error,
        epsilon=cmp.epsilon if delta is not None and cmp is not None else None,
        delta=delta if delta is not None else float("nan"), bracket=bracket, evaluations=evaluations + 1,
        capped=capped, sampler=sampling[0], examples_per_user=sampling[1],
    )


def calibrate_noise_multiplier(
    target_gamma: float,
    sample_rate: float,
    steps: int,
    kappa: float | None = None,
    *,
    log_kappa: float | None = None,
    prior: Any = None,
    delta: float | None = 1e-5,
    rtol: float = 1e-4,
    value_discretization_interval: float | None = None,
    sampler: Any = "poisson",
) -> CalibrationResult:
    """Smallest sigma (to relative precision ``rtol``) with certified gamma(sigma) <= target_gamma.

    gamma is non-increasing in sigma (a larger sigma garbles the pair of Hayes et al. Thm 2).

    Args:
      target_gamma: target bound on the reconstruction success, in (kappa, 1).
      sample_rate: Poisson sampling rate q in (0, 1].
      steps: number of steps T >= 1.
      kappa: the prior's baseline in (0, 1]. Give exactly one of ``kappa`` / ``log_kappa`` /
        ``prior`` (see :func:`rerokit.bounds.priors.resolve_baseline`).
      log_kappa: natural log of kappa (<= 0), for tiny baselines.
      prior: a prior (an int n = uniform over n, or a rerokit ``Prior``).
      delta: delta of the reported epsilon, in (0, 1) (default 1e-5); None skips it.
      rtol: relative precision of sigma, > 0 (default 1e-4).
      value_discretization_interval: PLD grid step (default automatic).
      sampler: "poisson" (default; q is the Poisson rate), "shuffle" (fixed-size shuffled batches,
        q = 1/(steps per epoch); no amplification) or "full_batch"; or a
        :class:`~rerokit.bounds.schedule.Sampling` with the unit of privacy (``examples_per_user``).

    Returns:
      :class:`CalibrationResult`; ``bracket = (sigma', sigma)`` with sigma' < sigma infeasible.

    Raises:
      ValueError: the target is outside (kappa, 1), or met by every sigma (at or above the
        never-sampled supremum 1 - (1-q)^T (1-kappa), or already at the bottom of
        ``SIGMA_SEARCH_RANGE``), or by none in ``SIGMA_SEARCH_RANGE``; or another argument is out
        of range.
      TypeError: if an argument has the wrong type.
    """
    base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa)
    lk = base.log_kappa
    g = _check_target(target_gamma, lk)
    q = check_probability("sample_rate", sample_rate)
    T = check_int("steps", steps, minimum=1)
    rtol = check_positive("rtol", rtol)
    sampling = _check_sampling(sampler)
    if delta is not None:
        delta = check_probability("delta", delta, high_open=True)
    from rerokit.bounds.dpsgd import log_sup_gamma

    # A target at or above sup over sigma of gamma = 1 - (1-q)^T (1-kappa) is met by every sigma:
    # say so at once instead of searching down to the end of the range. (Unamplified runs: the
    # target is in every release, so gamma -> 1 as sigma -> 0.)
    q_sup = q if sampling[0] == "poisson" else 1.0
    sup_gamma = math.exp(log_sup_gamma([(1.0, q_sup, T)], lk))
    if g >= sup_gamma:
        raise ValueError(
            f"target_gamma={target_gamma!r} is met by every noise multiplier: with sample_rate={q!r} and "
            f"steps={T} no noise multiplier gives gamma above 1 - (1-q)^T (1-kappa) = {sup_gamma:.6g}"
        )
    lo, hi = SIGMA_SEARCH_RANGE
    start = min(hi, max(lo, _sigma_guess(_gdp_target_mu(g, lk), q, T, sampling)))
    h = value_discretization_interval
    try:
        r = calibrate_monotone(
            lambda s: _bound(s, q, T, lk, h, sampling=sampling).value, g, feasible="above",
            search=SearchRange(lo, hi, start), rtol=rtol, growth=1.25,
        )
    except NoFeasibleValue:
        raise ValueError(f"target_gamma={target_gamma!r} is not reached by any noise multiplier <= 2^40 (gamma "
                         f"falls to kappa = {math.exp(lk):.6g} only as sigma grows without bound: ask for a target "
                         "further above kappa)") from None
    except AllFeasible:
        raise ValueError(f"target_gamma={target_gamma!r} is met even at noise_multiplier < {lo:g}") from None
    return _result(r.x, q, T, base, g, h, delta, r.bracket, r.evaluations, sampling=sampling)


def calibrate_steps(
    target_gamma: float, noise_multiplier: float, sample_rate: float, kappa: float | None = None, *,
    log_kappa: float | None = None, prior: Any = None, delta: float | None = 1e-5, max_steps: int = 10_000_000,
    value_discretization_interval: float | None = None, sampler: Any = "poisson",
) -> CalibrationResult:
    """Largest T <= ``max_steps`` with certified gamma(T) <= target_gamma.

    gamma is non-decreasing in T (composition).

    Args:
      target_gamma, sample_rate, kappa, log_kappa, prior, delta, value_discretization_interval,
        sampler: as in :func:`calibrate_noise_multiplier`.
      noise_multiplier: sigma > 0.
      max_steps: search limit, an integer >= 1 (default 1e7); the result has ``capped=True`` if the
        target holds there.

    Returns:
      :class:`CalibrationResult` with ``bracket = (T, T + 1)`` (or ``(max_steps, max_steps)`` capped).

    Raises:
      ValueError: even T = 1 exceeds the target, or the target is outside (kappa, 1), or another
        argument is out of range.
      TypeError: if an argument has the wrong type.
    """
    base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa)
    lk = base.log_kappa
    g = _check_target(target_gamma, lk)
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sample_rate", sample_rate)
    max_steps = check_int("max_steps", max_steps, minimum=1)
    sampling = _check_sampling(sampler)
    if delta is not None:
        delta = check_probability("delta", delta, high_open=True)
    h = value_discretization_interval
    guess = _steps_guess(_gdp_target_mu(g, lk), sigma / sampling[1], q if sampling[0] == "poisson" else 1.0)
    start = float(min(max_steps, max(1, math.floor(guess)) if math.isfinite(guess) else 1))
    try:
        r = calibrate_monotone(
            lambda T: _bound(sigma, q, int(T), lk, h, sampling=sampling).value, g,
            feasible="below", search=SearchRange(1.0, float(max_steps), start), integer=True, growth=1.5,
        )
    except NoFeasibleValue:
        one = _bound(sigma, q, 1, lk, h, sampling=sampling).value
        raise ValueError(
            f"target_gamma={target_gamma!r} is below the bound after a single step "
            f"(gamma(T=1) <= {one:.6g}); no number of steps meets it"
        ) from None
    T = int(r.x)
    bracket = (T, T) if r.at_limit else (T, int(r.bracket[1]))
    return _result(sigma, q, T, base, g, h, delta, bracket, r.evaluations, capped=r.at_limit, sampling=sampling)


def _met_at_floor(epsilon: float, delta: float, q: float, T: int, sampling: tuple[str, int]) -> str:
    """Why the calibration has no answer when even the smallest calibrated sigma meets the target.

    Poisson sampling alone gives (0, 1 - (1-q)^T)-DP under add-or-remove (the outputs differ only
    when the example is drawn at least once), so where that is <= delta every sigma, 0 included,
    meets epsilon: say so instead of calling the training non-private."""
    floor = MIN_MEANINGFUL_NOISE_MULTIPLIER
    used = -math.expm1(T * math.log1p(-q))
    if sampling == ("poisson", 1) and used <= delta:
        return (f"epsilon={epsilon!r} at delta={delta!r} needs no noise: with sample_rate={q!r} and steps={T} "
                f"the example is used at all with probability 1-(1-q)^T = {used:.3g} <= delta, which alone is "
                f"(0, delta)-DP, so every noise multiplier (0 included) meets it; there is nothing to calibrate")
    return (f"epsilon={epsilon!r} at delta={delta!r} (sample_rate={q!r}, steps={T}) is met by every noise "
            f"multiplier down to {floor:g}, the smallest rerokit calibrates (below it training is effectively "
            f"non-private): use noise_multiplier {floor:g}, or ask for a smaller epsilon")


def noise_multiplier_for_epsilon(
    epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    *,
    tol: float = 1e-4,
    value_discretization_interval: float | None = None,
    sampler: Any = "poisson",
) -> float:
    """Smallest sigma (to relative ``tol``) such that DP-SGD(sigma, q, T) is (epsilon, delta)-DP (add-or-remove).

    q = 1: exact (T Gaussian steps are one mu-GDP mechanism with mu = sqrt(T)/sigma; Balle & Wang
    2018 Thm 8 inverted, :func:`rerokit.bounds.gaussian.noise_multiplier_full_batch`). q < 1:
    rerokit's certified PLD epsilon (:func:`rerokit.bounds.dpsgd.epsilon_dpsgd`, both
    directions), searched from the CLT guess and bracketed above by the q = 1 value.

    Args:
      epsilon: target epsilon > 0.
      delta: delta in (0, 1).
      sample_rate: q in (0, 1].
      steps: T >= 1.
      tol: relative precision of sigma, > 0 (default 1e-4).
      value_discretization_interval: PLD grid step for q < 1 (default automatic).
      sampler: "poisson" (default), "shuffle" or "full_batch", or a
        :class:`~rerokit.bounds.schedule.Sampling` (with k examples per user): unamplified samplers
        are R Gaussian releases at noise sigma / k (R epochs or steps), so sigma = k sqrt(R) / mu
        exactly, mu the Gaussian-DP mu of (epsilon, delta).

    Returns:
      sigma on the private side (its certified epsilon is <= ``epsilon``).

    Raises:
      ValueError: an argument is out of range, or the target needs sigma below
        ``MIN_MEANINGFUL_NOISE_MULTIPLIER`` (effectively non-private training).
      TypeError: if an argument has the wrong type.
    """
    from rerokit.bounds.gaussian import gdp_mu

    eps = check_positive("epsilon", epsilon)
    d = check_probability("delta", delta, high_open=True)
    q = check_probability("sample_rate", sample_rate)
    T = check_int("steps", steps, minimum=1)
    tol = check_positive("tol", tol)
    if not 1e-15 <= tol <= 1.0:  # the search's relative precision (bounds.solve.MIN_RTOL)
        raise ValueError(f"tol must be a relative precision in [1e-15, 1], got {tol!r}")
    sampling = _check_sampling(sampler)
    mu = gdp_mu(eps, d, rtol=min(tol, 1e-9))
    k = sampling[1]
    cert = _sched(1.0, q, T, sampling).certification()
    if cert.group_size == 1 and sampling != ("poisson", 1):
        q, T = 1.0, cert.releases  # R unamplified releases at sigma / k (k = 1 at Poisson q = 1 too)
    sigma_full = math.nextafter(k * math.sqrt(T) / mu, math.inf)  # exact for q = 1; feasible for q < 1
    floor = MIN_MEANINGFUL_NOISE_MULTIPLIER
    too_small = (f"epsilon={epsilon!r} at delta={delta!r} (sample_rate={q!r}, steps={T}) needs a noise multiplier "
                 f"below {floor:g}: such training is effectively non-private; use noise_multiplier 0 for that, "
                 "or a smaller epsilon")
    if q == 1.0:
        if sigma_full < floor:
            raise ValueError(too_small)
        return float(sigma_full)
    if sigma_full <= floor:
        raise ValueError(too_small)
    from rerokit.bounds.certify import certified_epsilon

    start = min(sigma_full, max(floor, k * _sigma_guess(mu, q, T)))
    try:
        r = calibrate_monotone(
            lambda s: certified_epsilon(_sched(s, q, T, sampling), d,
                                        value_discretization_interval=value_discretization_interval),
            eps, feasible="above", search=SearchRange(floor, sigma_full, start), rtol=tol, growth=1.25,
            transform="identity",
        )
    except AllFeasible:
        raise ValueError(_met_at_floor(eps, d, q, T, sampling)) from None
    except NoFeasibleValue:
        # the PLD's (certified, pessimistic) epsilon at sigma_full can exceed the exact value that
        # sigma_full meets; sigma_full itself is feasible exactly (subsampling never hurts)
        return float(sigma_full)
    return float(r.x)
