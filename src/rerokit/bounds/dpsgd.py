"""The DP-SGD reconstruction-robustness bound of Hayes, Mahloujifar & Balle (NeurIPS 2023).

Theorem 2 / Corollary 3 of Hayes et al. (proof: Hayes, Mahloujifar & Balle 2023, App. M.1-M.2): DP-SGD with noise
multiplier sigma, Poisson sampling rate q and T steps is (eta, gamma)-ReRo for every prior with
baseline kappa, where

    gamma = sup { mu(E) : nu(E) <= kappa },
    nu = N(0, sigma^2)^T,   mu = prod_{t=1}^T [(1-q) N(0, sigma^2) + q N(1, sigma^2)],

i.e. gamma is the power at level kappa of the most powerful test of nu against mu
(Neyman-Pearson). A heterogeneous schedule (segments of (sigma_i, q_i, T_i)) takes the product
of the corresponding one-dimensional pairs.

Three methods compute it:

``exact`` (default)
    Via the privacy-loss distribution (PLD) of L = log(mu/nu) under mu (dp-accounting's REMOVE
    adjacency: mu_upper = mixture, mu_lower = N(0, sigma^2)). For every eps,
    mu(E) <= e^eps nu(E) + delta(eps) with delta(eps) = E_mu[(1 - e^{eps-L})_+], so
    gamma <= inf_eps (e^eps kappa + delta(eps)), with equality for the exact delta (the pair is
    testable: continuous likelihood ratio, App. M.1). We discretise the one-step loss on the grid
    l_j = j h into buckets (l_j, l_{j+1}] and build two discrete experiments from the same buckets:

    * upper: each bucket's (mu, nu) mass is split onto the two end atoms l_j, l_{j+1} so that both
      masses are preserved ("connect the dots", Doroshenko et al. 2022). Its hockey-stick curve
      is the chord of the true (convex in e^eps) curve on every bucket, hence >= the true one for
      every eps: the discrete pair dominates the true pair (Blackwell), and so does its T-fold
      product. The top tail (mu mass <= tau) goes to an atom at +infinity, the bottom tail to
      the lowest atom - both pessimistic. gamma of the composed discrete pair is computed
      exactly: f(s) = s kappa + p_inf + sum_i p_i (1 - s e^{-l_i})_+ is convex and piecewise
      linear in s = e^eps, so its infimum sits at the atom where the nu-mass e^{-l_i} p_i
      accumulated from the top first reaches kappa (the randomised Neyman-Pearson test).
    * lower: the statistic S = sum_t (bucket index of step t) is a function of the output, so
      any threshold test on S is a test of the true pair; its exact (mu, nu) power and level
      come from convolving the bucket masses. The best randomised threshold test with level
      <= kappa gives a certified lower bound on gamma.

    ``error`` = upper - lower: a certified bracket of the true gamma, including floating-point
    round-off through a proven bound (double-precision FFT, extended precision where that bound
    would be a fifth of the bracket; Higham 2002 Thm 24.2 in componentwise form;
    :mod:`rerokit.bounds.pld.compose`). Where the automatic grid leaves a bracket wider than 1%, it
    is recomputed on a finer grid; one step (T = 1) is answered by its exact Neyman-Pearson power. T-fold composition uses one FFT power per distinct
    (sigma, q) on a window chosen by Chernoff bounds; the mass outside the window (< 1e-17 per
    side) is added to the upper and subtracted from the lower value. At small kappa the far tail
    is recomputed by exponential tilting (:mod:`rerokit.bounds.pld.tilt`), with relative
    precision; where gamma is near 1, 1 - gamma is computed in relative precision by tilting
    towards P's lower tail, with the steps on a finer grid composed in blocks
    (:mod:`rerokit.bounds.pld.lowertail`; its bracket within 1e-9 on the issue's grid). Below kappa = 1e-300 (step masses beyond double precision) the floored value is the
    minimum of the RDP bound and Hölder's inequality at the best real order
    (:mod:`rerokit.bounds.pld.chernoff`: exact integer moments, certified real-order integrals,
    the binomial GDP mixture, the tilted PLD where gamma is above T 1e-300; computed on schedules
    of <= 8 steps, and elsewhere only where the tilt's bracket is wider than 5e-3 in log) and the
    tilted PLD's upper end with its steps continued in log masses (:mod:`rerokit.bounds.pld.logtail`;
    1e-4-4.4e-3 wide in log at T = 1e3-1e5, kappa 1e-473 and 1e-1850), and the lower end is kept in
    logs (``extras['log_gamma_lower']``: the max test, the linear test and the tilted PLD's lower
    end, :mod:`rerokit.bounds.dpsgd_exact`; ~1e-8 wide at T <= 2):
    within 0.02% of the exact log gamma at T = 1, 2 and kappa = 1e-473, 1e-1000 (mpmath), within
    2% at q = 1, T = 1000 (the Hölder bound alone). Noise multipliers all above the exact range get the smaller of the
    closed-form envelope and the exact value at the range's top edge (more noise is
    post-processing), so the value is non-increasing in sigma across it. At q = 1 the exact
    Gaussian-DP closed form answers (no PLD). Small noise multipliers (one sampled step reveals the
    target) are answered, before any PLD is built, by two certified closed forms - the max test's
    power and the never-sampled supremum - where their bracket is within 1e-6 of gamma and of 1 - gamma
    (:mod:`rerokit.bounds.dpsgd_tinysigma`; the PLD took 3-90 s there). The engine is the
    public package :mod:`rerokit.bounds.pld`, the exact method's refinements are
    :mod:`rerokit.bounds.dpsgd_exact`; this module keeps the entry points. The value
    reported is the upper one, never below the truth.

``closed-form``
    For q = 1 (full batch) the pair is two Gaussians at distance mu_GDP = sqrt(sum_i T_i /
    sigma_i^2), and gamma = Phi(Phi^{-1}(kappa) + mu_GDP) exactly (Kaissis et al. 2023; Hayes et
    al. main text). ``error`` = 0. Raises for q < 1.

``mc``
    Hayes et al. Algorithm 1: N samples of nu, likelihood ratios r = mu/nu, threshold at the
    (1 - kappa)-quantile of r, estimate mean(r 1[r > tau]) (App. M.4 / Prop. 4: consistent). A
    point *estimate* with a 95% confidence interval, not a guarantee. Caveat (measured): r is
    heavy-tailed when mu and nu are far apart, and the estimate then falls far below the truth,
    e.g. q=0.1, sigma=1, T=1000, kappa=0.01: true 0.917, Algorithm 1 with 10^6 samples 0.709; with 10^5 samples (seed 0) we measured 0.586 with
    "95%" interval [0.363, 0.809] - the interval assumes a finite, well-estimated variance of
    r 1[r > tau] and misses the truth there. Where r is light-tailed (small T/sigma^2) its
    empirical coverage is >= 95% (200 seeds, three settings).

Every result also carries, in ``extras``, the RDP-based bound (Balle et al. 2022 Thm 2 applied
to the exact integer-order RDP curve of the Poisson-subsampled Gaussian, Mironov et al. 2019)
and the DP-SGD (epsilon, delta=1e-5) of the same schedule from our own pessimistic PLD (both
ADD and REMOVE directions, as dp-accounting's PLDAccountant). Both are cross-checked against
dp-accounting in the tests. This module imports only numpy at load time (normal tails via
``math.erfc``; scipy.special only for very large grids, conversions only for the closed form)
so that the CLI starts fast: ``import dp_accounting`` costs about a second, ``scipy.special``
a few tenths.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from rerokit._validate import check_choice, check_int, check_positive, check_probability
from rerokit.bounds.pld import (
    LOG_TAU,
    RDP_ORDERS,
    DiscretePLD,
    GridPMF,
    PLDTooWide,
    SchedulePLD,
    ThresholdTests,
    log_rdp_gamma_many,
    rdp_curve_subsampled_gaussian,
    rdp_poisson_gaussian,
    schedule_pld,
)
from rerokit.bounds.dpsgd_envelope import (
    MAX_EXACT_STEPS,
    SIGMA_EXACT_RANGE,
    check_full_batch,
    envelope_bound,
    envelope_log_gamma,
    envelope_note,
    log_sup_gamma,
    outside_exact_range,
    round_up_exp,
)
from rerokit.bounds.dpsgd_tinysigma import (
    CLOSED_FORM_WIDTH, ClosedFormBracket, narrow_closed_form_bracket, supremum_capped,
)
from rerokit.bounds.dpsgd_exact import MIN_TILTED_LOG, ExactPower, exact_power_many
from rerokit.bounds.dpsgd_tinysigma_epsilon import closed_form_epsilon
from rerokit.bounds.options import Comparisons, MonteCarlo, Numerics
from rerokit.bounds.priors import resolve_baseline
from rerokit.bounds.schedule import Schedule, Segment
from rerokit.bounds.types import Bound

__all__ = [
    "rero_dpsgd",
    "normalize_segments",
    "rdp_poisson_gaussian",
    "rdp_curve_subsampled_gaussian",
    "dpsgd_pld",
    "DpsgdPLD",
    "epsilon_from_pld",
    "exact_power_many",
    "ExactPower",
    "np_upper_many",
    "np_lower_many",
    "log_rdp_gamma_many",
    "epsilon_dpsgd",
    "PLDTooWide",
    "MAX_EXACT_STEPS",
    "RDP_ORDERS",
    "METHODS",
    "round_up_exp",
    "check_group_size",
    "SIGMA_EXACT_RANGE",
    "check_full_batch",
    "outside_exact_range",
    "envelope_note",
    "envelope_log_gamma",
    "log_sup_gamma",
    "envelope_bound",
]

METHODS = ("exact", "closed-form", "mc")

# The composed PLDs of a schedule (kept under its former name).
DpsgdPLD = SchedulePLD


# --------------------------------------------------------------------------- inputs


def normalize_segments(
    noise_multiplier: float | None,
    sample_rate: float | None,
    steps: int | None,
    segments: Any = None,
) -> tuple[Segment, ...]:
    """Validated DP-SGD schedule as a tuple of (sigma, q, T) segments (:class:`~rerokit.bounds.schedule.Segment`).

    Give either (noise_multiplier, sample_rate, steps) or ``segments``.

    Args:
      noise_multiplier: sigma, a finite number > 0 (with ``sample_rate`` and ``steps``).
      sample_rate: Poisson sampling rate q in (0, 1].
      steps: number of steps T, an integer >= 1.
      segments: a :class:`~rerokit.bounds.schedule.Schedule`, a sequence of (sigma, q, T) triples or
        a dp-accounting ``DpEvent`` of Poisson-sampled Gaussians; None (default) to use the three
        settings above.

    Returns:
      The non-empty tuple of validated segments, in order.

    Raises:
      TypeError: if ``noise_multiplier`` is a schedule-like object (a list, a ``Schedule``, an
        accountant or a ``DpEvent``: pass it as ``segments``) or a value has the wrong type.
      ValueError: if both or neither of the two forms are given (or only some of the three
        settings), a value is out of range, or the event holds anything but Gaussian /
        Poisson-sampled Gaussian steps.
    """
    if segments is None:
        if isinstance(noise_multiplier, (list, tuple, Schedule)) or hasattr(noise_multiplier, "history") or (
            type(noise_multiplier).__module__.startswith("dp_accounting")
        ):
            raise TypeError(
                f"noise_multiplier must be a number, got {type(noise_multiplier).__name__} (a training run?): pass "
                "a history or DpEvent as segments=..., or use rerokit.reconstruction_risk(accountant_or_history, prior=...)"
            )
        if noise_multiplier is None or sample_rate is None or steps is None:
            raise ValueError("give noise_multiplier, sample_rate and steps (or segments)")
        return Schedule.from_settings(noise_multiplier, sample_rate, steps).segments
    if noise_multiplier is not None or sample_rate is not None or steps is not None:
        raise ValueError("give either noise_multiplier/sample_rate/steps or segments, not both")
    if isinstance(segments, Schedule):
        plain = segments.examples_per_user == 1 and (segments.sampler == "poisson" or segments.full_batch)
        if not plain:
            # the engine composes Poisson-subsampled Gaussian steps of one example: a shuffled run or a
            # group would get an amplified number its run did not earn (bounds.certify maps it first)
            raise ValueError(
                f"segments: this schedule's sampler is {segments.sampler!r} with examples_per_user="
                f"{segments.examples_per_user}; the PLD engine certifies Poisson sampling of one example only. Use "
                "rerokit.reconstruction_risk(schedule, ...) or rerokit.bounds.certify (certified_rero, "
                "certified_tradeoff, certified_epsilon), which certify what this sampler and unit of privacy allow")
        return segments.segments
    if isinstance(segments, (list, tuple)):
        return Schedule.from_segments(segments).segments
    return Schedule.from_event(segments).segments



def check_group_size(group_size: Any) -> int:
    """Validated group size k (examples that move together: the unit of privacy).

    Args:
      group_size: an integer >= 1.

    Returns:
      k as an int.

    Raises:
      ValueError: if it is < 1; TypeError if it is not an integer.
    """
    return check_int("group_size", group_size, minimum=1)


# --------------------------------------------------------------------------- the PLD, by its former names


def dpsgd_pld(
    segments: Sequence[Segment],
    value_discretization_interval: float | None = None,
    *,
    lower: bool = True,
    add_direction: bool = False,
    log_tau: float = LOG_TAU,
    group_size: int = 1,
    eager: bool = True,
) -> SchedulePLD:
    """Build and compose the discrete PLDs of ``segments`` (:func:`rerokit.bounds.pld.schedule_pld`).

    Args:
      segments: validated (sigma, q, T) segments (:func:`normalize_segments`) or a Schedule.
      value_discretization_interval: PLD grid step h, > 0; None (default) for the automatic choice
        (rms loss sd / 40, within [1e-7, 1e-2]).
      lower: also compose the bucket statistic (certified lower ends; default True).
      add_direction: also compose the ADD-direction PLD (needed for epsilon; default False).
      log_tau: natural log of the tail mass allowed outside the truncations (default log 1e-17).
      group_size: k >= 1 examples that move together (default 1).
      eager: size the requested directions now (default: their steps and windows; the FFT
        compositions run on first use) or on first use.

    Returns:
      The :class:`~rerokit.bounds.pld.SchedulePLD`.

    Raises:
      ValueError: if ``value_discretization_interval`` is not a finite number > 0 (TypeError if not
        a number).
      PLDTooWide: (a ValueError) if no grid step fits the size limits.
    """
    h = None if value_discretization_interval is None else check_positive(
        "value_discretization_interval", value_discretization_interval
    )
    if h is not None and h > 1.0:  # a grid step beyond 1 nat only loosens the bound (and 1e308 gave NaN windows)
        raise ValueError(f"value_discretization_interval must be a number in (0, 1], got {value_discretization_interval!r}")
    return schedule_pld(segments, h, group_size=check_group_size(group_size), lower=lower,
                        add_direction=add_direction, log_tau=log_tau, eager=eager)


def epsilon_from_pld(c: DiscretePLD, delta: float) -> float:
    """:meth:`rerokit.bounds.pld.DiscretePLD.epsilon` (kept under its former name)."""
    return c.epsilon(delta)


def np_upper_many(c: DiscretePLD, log_kappas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`rerokit.bounds.pld.DiscretePLD.power` (kept under its former name)."""
    return c.power(log_kappas)


def np_lower_many(cp: GridPMF, cq: GridPMF, log_kappas: np.ndarray) -> np.ndarray:
    """:meth:`rerokit.bounds.pld.ThresholdTests.power_lower` (kept under its former name)."""
    return ThresholdTests(cp, cq).power_lower(log_kappas)


def epsilon_dpsgd(
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    delta: float = 1e-5,
    *,
    segments: Any = None,
    value_discretization_interval: float | None = None,
    group_size: int = 1,
) -> float:
    """Certified upper bound on the epsilon at ``delta`` of a DP-SGD schedule (add-or-remove adjacency).

    Both directions, from the dominating PLDs of :mod:`rerokit.bounds.pld`. The same number as
    ``rero_dpsgd(...).extras["epsilon"]``; cross-checked against dp-accounting's PLD accountant
    in the tests. Where the closed forms of :func:`rerokit.bounds.dpsgd_tinysigma_epsilon.closed_form_epsilon`
    bracket epsilon within 1e-6 (small noise, one segment, one example per step) their upper end is
    returned without a PLD. Schedules with more than :data:`MAX_EXACT_STEPS` steps or whose PLD is too wide
    get the exact epsilon of the same schedule at q = 1 (Gaussian DP with
    mu = k sqrt(sum_i T_i / sigma_i^2); subsampling never increases epsilon), still an upper bound.

    Args:
      noise_multiplier: sigma > 0 (with ``sample_rate`` and ``steps``, or give ``segments``).
      sample_rate: Poisson sampling rate q in (0, 1].
      steps: number of steps T >= 1.
      delta: delta in (0, 1) (default 1e-5).
      segments: a heterogeneous schedule (see :func:`normalize_segments`).
      value_discretization_interval: PLD grid step h (default automatic).
      group_size: k >= 1 examples that move together (the unit of privacy; default 1).

    Returns:
      epsilon >= 0 (inf if even the infinity mass exceeds ``delta``, or mu of the q = 1 envelope
      overflows).

    Raises:
      ValueError: if the schedule is invalid (see :func:`normalize_segments`), ``delta`` is not in
        (0, 1), ``value_discretization_interval`` is not > 0 or ``group_size`` < 1.
      TypeError: if a value has the wrong type.
    """
    segs = normalize_segments(noise_multiplier, sample_rate, steps, segments)
    d = check_probability("delta", delta, high_open=True)
    k = check_group_size(group_size)
    if not outside_exact_range(segs):
        closed = closed_form_epsilon(segs, d) if k == 1 else None
        if closed is not None:  # small noise: certified closed forms within 1e-6, no PLD (seconds there)
            return closed
        try:
            pld = dpsgd_pld(segs, value_discretization_interval, lower=False, add_direction=True, group_size=k)
            return pld.epsilon(d)
        except PLDTooWide:
            pass
    # the exact epsilon of the same schedule at q = 1 (subsampling never increases epsilon)
    from rerokit.bounds.gaussian import gaussian_epsilon

    mu = k * Schedule(tuple(segs)).mu_full_batch
    env = math.inf if not math.isfinite(mu) or mu > 1e150 else gaussian_epsilon(d, mu)
    if sum(T for _, _, T in segs) <= MAX_EXACT_STEPS:
        # every sigma outside the grid range: near-noiseless steps are their revealed sampling
        # indicator and near-silent ones one Gaussian step (pld.builder), a PLD of a few atoms that
        # also dominates; at sigma 9e-5, q 1e-6, T 10 (1 - (1-q)^T < delta) it gives 0, the q = 1
        # bound 6.2e8
        try:
            pld = dpsgd_pld(segs, value_discretization_interval, lower=False, add_direction=True, group_size=k)
            return min(env, pld.epsilon(d))
        except PLDTooWide:
            pass
    return env


def _log_rdp_gamma(segments: Sequence[Segment], log_kappa: float) -> tuple[float, float]:
    v, o = log_rdp_gamma_many(segments, np.array([log_kappa], dtype=float))
    return float(v[0]), float(o[0])


def rero_dpsgd(
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    kappa: float | None = None,
    *,
    log_kappa: float | None = None,
    prior: Any = None,
    segments: Any = None,
    method: str | MonteCarlo = "exact",
    comparisons: bool | Comparisons = True,
    numerics: Numerics | None = None,
) -> Bound:
    """ReRo bound gamma of DP-SGD (Hayes et al. 2023, Thm 2 / Cor. 3) - see the module docstring.

    gamma = sup { mu(E) : nu(E) <= kappa } for nu = N(0, sigma^2)^T and
    mu = prod_t [(1-q) N(0, sigma^2) + q N(1, sigma^2)] (per segment for heterogeneous schedules).
    Schedules outside the exact method's range (a noise multiplier outside
    :data:`SIGMA_EXACT_RANGE`, more than :data:`MAX_EXACT_STEPS` steps, or a PLD beyond its size
    limits) get the certified closed-form envelope (:func:`envelope_log_gamma`, ``method="envelope"``)
    for ``method="exact"``. Where the closed forms of :mod:`rerokit.bounds.dpsgd_tinysigma` (the max test's
    power, the never-sampled supremum) already bracket gamma and 1 - gamma within
    :data:`~rerokit.bounds.dpsgd_tinysigma.CLOSED_FORM_WIDTH` (small noise; one example per step),
    they answer without a PLD (``extras['closed_form_bracket']``; the membership risks, if asked, from
    the trade-off curve's closed forms, :mod:`rerokit.bounds.tradeoff`).

    Args:
      noise_multiplier: sigma > 0 (with ``sample_rate`` and ``steps``, or give ``segments``).
      sample_rate: Poisson sampling rate q in (0, 1].
      steps: number of steps T >= 1.
      kappa: the prior's baseline success in (0, 1]. Give exactly one of ``kappa`` / ``log_kappa`` /
        ``prior``.
      log_kappa: natural log of kappa (<= 0), for tiny baselines.
      prior: a prior (an int n = uniform over n, or a rerokit ``Prior``).
      segments: a heterogeneous schedule: a list of (sigma, q, T) triples, a dp-accounting
        ``DpEvent`` or a :class:`~rerokit.bounds.schedule.Schedule`. A Poisson ``Schedule`` with
        ``examples_per_user=k`` > 1 protects k examples together (the unit of privacy): one step's
        pair is then sum_j Binomial(j; k, q) N(j, sigma^2) against N(0, sigma^2). Other samplers are
        certified by :func:`rerokit.bounds.certify.certified_rero` (ValueError here).
      method: "exact" (certified PLD bracket, default), "closed-form" (q = 1 only), or the Monte
        Carlo estimate of Hayes et al. Alg. 1 with a 95% CI: "mc" (``MonteCarlo()``) or a
        :class:`~rerokit.bounds.options.MonteCarlo` with its sample count, seed and memory budget
        (all recorded in ``extras``).
      comparisons: what to add to ``extras`` beside gamma: True (default; the RDP-based gamma and the
        (epsilon, delta = 1e-5) of the schedule), False (nothing), or a
        :class:`~rerokit.bounds.options.Comparisons` (another delta, the membership-inference risks).
      numerics: the PLD engine's :class:`~rerokit.bounds.options.Numerics` (grid step, whether to
        compute the certified lower end); None (default) for ``Numerics()``.

    Returns:
      A :class:`Bound`: ``value`` = gamma (upper bound for exact/closed-form, estimate for mc),
      ``error`` = certified bracket width (exact), 0 (closed-form) or CI half-width (mc);
      ``interval`` = the certified bracket (exact) or the 95% CI (mc).
      For tiny kappa where the PLD's infinity mass / round-off floors the exact value,
      ``extras['floored']`` is True and the value is min(PLD bound, RDP bound) - still valid.

    Raises:
      ValueError: if the schedule or baseline is invalid, ``method`` is unknown,
        ``method="closed-form"`` is asked for q < 1, the Monte Carlo sample count is < 1/kappa, or a
        Monte Carlo estimate is asked for a group of examples.
      PLDTooWide: (a ValueError) for ``method="closed-form"``/``"mc"`` when the comparisons or the
        membership risks need a PLD that cannot be discretised.
      TypeError: if a value has the wrong type (e.g. ``numerics`` not a :class:`Numerics`).
    """
    k = 1
    if isinstance(segments, Schedule) and segments.sampler == "poisson" and segments.examples_per_user > 1:
        k = segments.examples_per_user  # the engine's group of k examples (the Binomial mixture per step)
        segments = Schedule(segments.segments)
    segs = normalize_segments(noise_multiplier, sample_rate, steps, segments)
    base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa)
    lk = base.log_kappa
    mc = method if isinstance(method, MonteCarlo) else None
    method = "mc" if mc is not None else check_choice("method", method, METHODS)
    if method == "mc" and mc is None:
        mc = MonteCarlo()
    want = Comparisons.of(comparisons)
    comparisons, delta, membership = want.rdp_and_epsilon, want.delta, want.membership
    if numerics is None:
        numerics = Numerics()
    elif not isinstance(numerics, Numerics):
        raise TypeError(f"numerics must be a rerokit.bounds.Numerics, got {type(numerics).__name__}")
    value_discretization_interval, bracket = numerics.value_discretization_interval, numerics.bracket
    if method == "closed-form":
        check_full_batch(segs)
    if method == "mc" and k != 1:
        raise ValueError(f"method='mc' supports one example per user only, got examples_per_user={k}")
    kap = base.kappa
    if method == "exact" and outside_exact_range(segs):
        b = _edge_bound(segs, lk, kap, k, envelope_bound(segs, lk, kap, k))
        if membership:
            b.extras["membership"] = _membership(segs, None, k)
        return b
    inputs: dict[str, Any] = {"method": method}
    if len(segs) == 1 and segments is None:
        inputs.update(noise_multiplier=segs[0][0], sample_rate=segs[0][1], steps=segs[0][2])
    else:
        inputs["segments"] = [list(s) for s in segs]
    inputs["kappa"] = kap
    inputs["log_kappa"] = lk
    if k != 1:
        inputs["group_size"] = k
    extras: dict[str, Any] = {}
    log_rdp = None
    order = None
    if comparisons and k == 1:
        log_rdp, order = _log_rdp_gamma(segs, lk)
    full = all(q == 1.0 for _, q, _ in segs)  # q = 1: the exact Gaussian-DP closed form, no PLD
    if method == "exact" and full:
        return _full_batch(segs, lk, kap, k, inputs, extras, delta, comparisons, membership, log_rdp, order)
    # small noise: the closed forms' bracket (rerokit.bounds.dpsgd_tinysigma) before any PLD is built
    narrow = narrow_closed_form_bracket(segs, lk) if method == "exact" and k == 1 else None
    if narrow is not None:
        if membership:  # the curve's closed forms (rerokit.bounds.tradeoff), its PLD composed only if needed
            from rerokit.bounds.tradeoff import dpsgd_tradeoff

            extras["membership"] = dpsgd_tradeoff(
                segments=segs, value_discretization_interval=value_discretization_interval).membership_summary()
        if comparisons:
            extras.update(rdp_gamma=None if log_rdp is None else round_up_exp(log_rdp), rdp_order=order, delta=delta,
                          epsilon=epsilon_dpsgd(segments=segs, delta=delta,
                                                value_discretization_interval=value_discretization_interval))
        return _closed_form_bound(narrow, inputs, extras)
    pld = None
    if (comparisons and not full) or method == "exact" or (membership and not full):
        try:
            pld = dpsgd_pld(
                segs, value_discretization_interval, lower=((method == "exact" and bracket) or membership),
                add_direction=comparisons, group_size=k,
            )
        except PLDTooWide:
            if method != "exact":
                raise
            b = envelope_bound(segs, lk, kap, k)
            if membership:
                b.extras["membership"] = _membership(segs, None, k)
            return b
    if comparisons:
        extras["rdp_gamma"] = None if log_rdp is None else round_up_exp(log_rdp)
        extras["rdp_order"] = order
        extras["epsilon"] = pld.epsilon(delta) if pld is not None else _full_batch_curve(segs, k).epsilon(delta)
        extras["delta"] = delta
    if membership:
        extras["membership"] = _full_batch_curve(segs, k).membership_summary() if full else _membership(segs, pld, k)

    if method == "closed-form":
        mu = k * math.sqrt(sum(T / (s * s) for s, _, T in segs))
        from rerokit.bounds.conversions import log_rero_from_gdp

        lg = log_rero_from_gdp(mu, lk)
        extras["mu_gdp"] = mu
        extras["log_gamma"] = lg
        return Bound(round_up_exp(lg), 0.0, "closed-form", "upper", None, inputs, extras)

    if method == "mc":
        from rerokit.bounds.dpsgd_mc import mc_gamma

        r = mc_gamma(segs, lk, mc.samples, mc.seed, mc.chunk_elements)
        extras.update(
            seed=r["seed"], mc_samples=mc.samples, se=r["se"], log_threshold=r["log_threshold"],
            chunk_rows=r["chunk_rows"],
        )
        lo, hi = r["interval"]
        return Bound(r["estimate"], (hi - lo) / 2.0, "mc", "estimate", (lo, hi), inputs, extras)

    r = exact_power_many(pld, segs, np.array([lk]), None if log_rdp is None else np.array([log_rdp]))
    # the never-sampled supremum (a closed form, rounded up) is as certified and sometimes tighter
    # (the same cap as TradeoffCurve's: one value for one quantity)
    lv, vv, lw, capped = supremum_capped(segs, np.array([lk]), r.log_value, r.value, r.lower, group_size=k)
    log_value, value, lower = float(lv[0]), float(vv[0]), float(lw[0])
    if capped[0]:
        extras["envelope_tighter"] = True
    floored = bool(r.floored[0])
    extras.update(
        lower=float(r.lower_pld[0]), upper=float(r.upper[0]), value_discretization_interval=float(r.h),
        threshold_epsilon=float(r.eps_star[0]), pld_floor=float(r.floor), floored=floored,
    )
    if r.used_rdp[0]:
        extras["note"] = (
            "the PLD's infinity mass / round-off floor dominates at this kappa; "
            "value is the (smaller, still valid) RDP bound (below kappa = 1e-300: Hölder's inequality at the "
            "best real order, rerokit.bounds.pld.chernoff)"
        )
    elif floored and lk < MIN_TILTED_LOG:
        extras["note"] = ("the untilted PLD's infinity mass / round-off floor dominates at this kappa; value is the "
                          "far-tail tilted PLD's, its steps continued in log masses (rerokit.bounds.pld.logtail)")
    elif floored:
        extras["note"] = "the PLD's infinity mass / round-off floor dominates at this kappa"
    extras["log_gamma"] = log_value
    # the lower end in logs (it underflows below kappa = 1e-300; exact_power_many keeps its log)
    log_lower = math.log(lower) if lower > 0.0 else -math.inf
    if r.log_lower is not None:
        log_lower = max(log_lower, float(r.log_lower[0]))
    extras["log_gamma_lower"] = min(log_lower, log_value)
    return Bound(value, max(0.0, value - lower), "exact", "upper", (lower, value), inputs, extras)


def _closed_form_bound(b: ClosedFormBracket, inputs: dict[str, Any], extras: dict[str, Any]) -> Bound:
    """The ``exact`` method's Bound from the closed forms' certified bracket (no PLD): the max test's
    power and the never-sampled supremum (:mod:`rerokit.bounds.dpsgd_tinysigma`)."""
    value = round_up_exp(b.log_upper)
    lower = min(b.lower, value)
    extras.update(
        lower=lower, upper=value, log_gamma=b.log_upper, log_gamma_lower=b.log_lower,
        log_one_minus_gamma_interval=(b.log_beta_lower, b.log_beta_upper), closed_form_bracket=True,
        value_discretization_interval=None, threshold_epsilon=None, pld_floor=0.0, floored=False,
        note=(f"small noise: both ends are certified closed forms, within {CLOSED_FORM_WIDTH:g} of gamma and of "
              "1 - gamma (lower: the max test's power; upper: 1 - (1 - kappa) prod (1 - q_i)^T_i, the target never "
              "sampled); no PLD was built"),
    )
    return Bound(value, max(0.0, value - lower), "exact", "upper", (lower, value), inputs, extras)


def _edge_bound(segs: Sequence[Segment], lk: float, kap: float, k: int, env: Bound) -> Bound:
    """min(envelope, the exact engine at the range's top edge) for noise multipliers above the range.

    A larger noise multiplier is a post-processing of a smaller one (add independent
    N(0, sigma'^2 - sigma^2) noise to every release), so gamma is non-increasing in sigma and the
    certified value at sigma = SIGMA_EXACT_RANGE[1] bounds every schedule whose noise multipliers
    are all at least that (same q, T). Taking the smaller of it and the envelope keeps the reported
    value non-increasing in sigma across the edge (the envelope alone was looser just outside it:
    0.10000005 at sigma = 1.0001e8 against 0.1000000149 at 1e8 for q = 0.01, T = 1000, kappa = 0.1).
    """
    top = SIGMA_EXACT_RANGE[1]
    if any(s < top for s, _, _ in segs) or sum(T for _, _, T in segs) > MAX_EXACT_STEPS:
        return env
    edge = [Segment(top, q, T) for _, q, T in segs]
    try:
        e = rero_dpsgd(segments=Schedule(tuple(edge), examples_per_user=k), log_kappa=lk, comparisons=False,
                       numerics=Numerics(bracket=False))
    except PLDTooWide:
        return env
    if not e.value < env.value:
        return env
    value = e.value
    lower = min(kap, value)
    extras = dict(env.extras, upper=value, log_gamma=min(float(e.extras["log_gamma"]), env.extras["log_gamma"]),
                  lower=lower, note=(
                      f"noise multipliers above {top:g}: value is the exact engine's certified bound at sigma = "
                      f"{top:g} (more noise is post-processing: gamma is non-increasing in sigma), smaller than the "
                      "closed-form envelope here; error = value - kappa"))
    return Bound(value, max(0.0, value - lower), "envelope", "upper", (lower, value), env.inputs, extras)


def _full_batch(segs: Sequence[Segment], lk: float, kap: float, k: int, inputs: dict[str, Any],
                extras: dict[str, Any], delta: float, comparisons: bool, membership: bool,
                log_rdp: float | None, order: float | None) -> Bound:
    """q = 1 everywhere: the pair is mu-GDP with mu = k sqrt(sum T_i / sigma_i^2) and
    gamma = Phi(Phi^{-1}(kappa) + mu) exactly (Dong, Roth & Su 2022, Eq. 6); the bracket is the
    closed form rounded outwards, read off the closed-form trade-off curve (no PLD is built)."""
    from rerokit.bounds.conversions import log_gdp_power

    curve = _full_batch_curve(segs, k)
    mu = curve.mu_gdp
    if not math.isfinite(mu):
        return envelope_bound(segs, lk, kap, k)
    g = curve.reconstruction_success(log_kappa=lk)
    value = g.value
    lower = g.interval[0]
    lg = log_gdp_power(mu, lk)
    if value > 1e-300:  # the log of the reported value (never below the exact log)
        lg = max(lg, math.log(value))
    if comparisons:
        extras["rdp_gamma"] = None if log_rdp is None else round_up_exp(log_rdp)
        extras["rdp_order"] = order
        extras["epsilon"] = curve.epsilon(delta)
        extras["delta"] = delta
    if membership:
        extras["membership"] = curve.membership_summary()
    from scipy.special import ndtri_exp

    z = -float(ndtri_exp(lk)) if lk < 0 else -math.inf  # the optimal test rejects when x > z (x ~ N(0, 1) under nu)
    # the closed form rounded down, in logs (the lower end underflows below kappa ~ 1e-300)
    lg_low = log_gdp_power(mu, lk, upward=False) if lk < 0.0 else 0.0
    if lower > 0.0:
        lg_low = max(lg_low, math.log(lower))
    extras.update(lower=lower, upper=value, mu_gdp=mu, log_gamma=lg, log_gamma_lower=min(lg_low, lg),
                  floored=False, pld_floor=0.0,
                  value_discretization_interval=None, threshold_epsilon=mu * z - 0.5 * mu * mu,
                  note="q = 1: the exact Gaussian-DP closed form (no discretisation)")
    return Bound(value, max(0.0, value - lower), "exact", "upper", (lower, value), inputs, extras)


def _full_batch_curve(segs: Sequence[Segment], k: int) -> Any:
    """The exact (closed-form, q = 1) trade-off curve of a full-batch schedule."""
    from rerokit.bounds.tradeoff import TradeoffCurve

    return TradeoffCurve(tuple(tuple(x) for x in segs), "remove", "exact", None, None, group_size=k)


def _membership(segs: Sequence[Segment], pld: SchedulePLD | None, group_size: int = 1) -> dict[str, Any]:
    """Membership-inference summary from the already composed PLD (no second build)."""
    from rerokit.bounds.tradeoff import TradeoffCurve

    return TradeoffCurve.from_pld(segs, pld, group_size=group_size).membership_summary()
