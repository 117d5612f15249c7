"""DP-SGD schedules as dp-accounting ``DpEvent``s, Opacus histories, and their (eps, delta) / RDP.

A DP-SGD step with noise multiplier sigma and Poisson sampling rate q is
``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))`` (q = 1: just the Gaussian event); T steps
are ``SelfComposedDpEvent(step, T)``; a schedule of segments (sigma_i, q_i, T_i) is a
``ComposedDpEvent``. These are the inputs of dp-accounting's accountants (PLD: Meiser &
Mohammadi 2018, Doroshenko et al. 2022; RDP: Mironov 2017, Mironov et al. 2019) and the
mechanism of Hayes et al. 2023 Thm 2 (see :mod:`rerokit.bounds.dpsgd`).

dp-accounting is imported lazily (inside the functions): ``import dp_accounting`` costs about a
second, and this module is importable from fast paths. Never imports torch.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from rerokit._validate import check_probability
from dataclasses import dataclass

from rerokit.bounds.schedule import Schedule, Segment, epochs_touched

if TYPE_CHECKING:  # pragma: no cover
    import dp_accounting

__all__ = [
    "dpsgd_event",
    "schedule_event",
    "segments_from_event",
    "segments_from_opacus_history",
    "epsilon_pld",
    "epsilon_rdp",
    "rdp_curve",
    "rdp_epsilon_order2",
    "replace_one_rdp_order2",
    "ReplaceOneRdp",
    "ORDER2_RDP_ORDERS",
    "WEAK_TRIANGLE_ORDERS",
    "RDP_STEP_MARGIN",
]

ORDER2_RDP_ORDERS = (2.0, 2.5, 3.0, 4.0)
"""Orders at which :func:`rdp_epsilon_order2` asks dp-accounting for the RDP curve."""


def dpsgd_event(noise_multiplier: float, sample_rate: float, steps: int) -> "dp_accounting.DpEvent":
    """The dp-accounting event of DP-SGD: ``SelfComposed(PoissonSampled(q, Gaussian(sigma)), T)``.

    For q = 1 (full batch) the sampling wrapper is left out: ``SelfComposed(Gaussian(sigma), T)``.

    Args:
        noise_multiplier: sigma, a finite number > 0.
        sample_rate: q, the Poisson sampling rate, in (0, 1].
        steps: T, an integer >= 1.

    Returns:
        A ``dp_accounting.DpEvent``.

    Raises:
        ValueError: a setting out of range (the error names it).
        TypeError: a setting of the wrong type.
    """
    return Schedule.from_settings(noise_multiplier, sample_rate, steps).to_event()


def schedule_event(segments: Iterable[Sequence[Any]]) -> "dp_accounting.DpEvent":
    """The ``ComposedDpEvent`` of :func:`dpsgd_event` for each (sigma, q, T) segment.

    Args:
        segments: an iterable of (noise_multiplier, sample_rate, steps) triples (or
            :class:`~rerokit.bounds.schedule.Segment`), in training order.

    Returns:
        A ``dp_accounting.ComposedDpEvent``.

    Raises:
        TypeError: ``segments`` is not an iterable of triples of numbers.
        ValueError: it is empty, an entry is not a triple, or a value is out of range.
    """
    import dp_accounting

    sched = Schedule.from_segments(segments)
    return dp_accounting.ComposedDpEvent([Schedule((s,)).to_event() for s in sched])


def segments_from_event(event: Any) -> list[Segment]:
    """The (sigma, q, T) segments of a DP-SGD DpEvent (:meth:`Schedule.from_event`).

    Args:
        event: a dp-accounting event built from ``GaussianDpEvent``, ``PoissonSampledDpEvent`` of
            a Gaussian, ``SelfComposedDpEvent`` and ``ComposedDpEvent``.

    Returns:
        The list of :class:`~rerokit.bounds.schedule.Segment`.

    Raises:
        ValueError: an event holding anything else (e.g. Laplace), no Gaussian step, or a value
            out of range.
    """
    return list(Schedule.from_event(event).segments)


def segments_from_opacus_history(history: Iterable[Sequence[Any]]) -> list[Segment]:
    """The segments of an Opacus ``accountant.history`` (:meth:`Schedule.from_opacus_history`).

    Args:
        history: Opacus' list of (noise_multiplier, sample_rate, steps) entries; consecutive
            entries with equal (sigma, q) are merged.

    Returns:
        The list of :class:`~rerokit.bounds.schedule.Segment`.

    Raises:
        TypeError: ``history`` is not an iterable of triples of numbers.
        ValueError: it is empty, an entry is not a triple, or a value is out of range.
    """
    return list(Schedule.from_opacus_history(history).segments)


def _as_event(segments_or_event: Any) -> "dp_accounting.DpEvent":
    import dp_accounting

    if isinstance(segments_or_event, dp_accounting.DpEvent):
        return segments_or_event
    if isinstance(segments_or_event, Schedule):
        return segments_or_event.to_event()
    return schedule_event(segments_or_event)


def epsilon_pld(segments_or_event: Any, delta: float, *, value_discretization_interval: float = 1e-4) -> float:
    """epsilon at ``delta`` from dp-accounting's ``PLDAccountant`` (add-or-remove, pessimistic).

    The independent reference for rerokit's own PLD (:func:`rerokit.bounds.dpsgd.epsilon_dpsgd`).

    Args:
        segments_or_event: (sigma, q, T) segments, a :class:`~rerokit.bounds.schedule.Schedule`
            or a dp-accounting event.
        delta: in [0, 1).
        value_discretization_interval: dp-accounting's PLD grid step (default 1e-4).

    Returns:
        epsilon (a float; inf where no finite epsilon reaches ``delta``).
    """
    import dp_accounting

    d = check_probability("delta", delta, high_open=True)
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=value_discretization_interval)
    acc.compose(_as_event(segments_or_event))
    return float(acc.get_epsilon(d))


def rdp_curve(segments: Any, orders: Sequence[float] | None = None) -> tuple[Any, Any]:
    """The composed RDP curve of a schedule from dp-accounting's ``RdpAccountant``
    (Mironov et al. 2019 for the Poisson-subsampled Gaussian).

    Args:
        segments: (sigma, q, T) segments, a Schedule or a dp-accounting event.
        orders: the Renyi orders alpha (default: dp-accounting's default orders).

    Returns:
        (orders, eps): two float arrays, eps[i] the RDP epsilon at orders[i].
    """
    import dp_accounting
    import numpy as np

    acc = dp_accounting.rdp.RdpAccountant(orders=orders)
    acc.compose(_as_event(segments))
    return np.asarray(acc.orders, dtype=float).copy(), np.asarray(acc.rdp, dtype=float).copy()


def rdp_epsilon_order2(segments_or_event: Any) -> tuple[float, float]:
    """The ADD/REMOVE (2, eps)-RDP guarantee of a Poisson DP-SGD schedule.

    dp-accounting's RDP curve (Poisson-subsampled Gaussian, Mironov et al. 2019) at
    :data:`ORDER2_RDP_ORDERS`, read at order 2 by :func:`rerokit.bounds.mse.rdp_epsilon_at_order`
    (never interpolated). Not the input of Guo et al. 2022, Thm 1, which needs replace-one
    neighbours: use :func:`replace_one_rdp_order2` (this value is a lower reference for it).

    Args:
      segments_or_event: a :class:`~rerokit.bounds.schedule.Schedule`, (sigma, q, T) triples or a
        dp-accounting ``DpEvent``.

    Returns:
      ``(eps, order)``: the RDP epsilon and the order it was read at (2.0).
    """
    import numpy as np

    from rerokit.bounds.mse import rdp_epsilon_at_order

    orders, rdp = rdp_curve(segments_or_event, ORDER2_RDP_ORDERS)
    if np.any(rdp < 0):
        # dp-accounting's log-space sums round to slightly negative values where the true RDP is
        # ~0 (sigma 1e6, q 1e-6). Order 2 has the closed form T log(1 + q^2 (e^{1/sigma^2} - 1)) per
        # segment (Mironov et al. 2019, integer orders; the formula dp-accounting evaluates), here
        # without cancellation and floored at TINY_RDP; the negative orders are left out.
        eps2 = 0.0
        for sigma, q, steps in Schedule.coerce(segments_or_event):
            inv = 1.0 / sigma / sigma
            step = math.log1p(q * q * math.expm1(inv)) if inv < 700.0 else math.inf
            eps2 += steps * max(step, TINY_RDP)
        rdp = np.where(rdp < 0, np.inf, rdp)
        rdp[orders == 2.0] = eps2
    return rdp_epsilon_at_order(orders, rdp, 2.0)


def epsilon_rdp(segments_or_event: Any, delta: float, orders: Sequence[float] | None = None) -> float:
    """epsilon at ``delta`` from dp-accounting's ``RdpAccountant`` (its RDP-to-DP conversion).

    Args:
        segments_or_event: (sigma, q, T) segments, a Schedule or a dp-accounting event.
        delta: in [0, 1).
        orders: the Renyi orders (default: dp-accounting's).

    Returns:
        epsilon (a float).
    """
    import dp_accounting

    d = check_probability("delta", delta, high_open=True)
    acc = dp_accounting.rdp.RdpAccountant(orders=orders)
    acc.compose(_as_event(segments_or_event))
    eps = float(acc.get_epsilon(d))
    return eps if math.isfinite(eps) else math.inf


WEAK_TRIANGLE_ORDERS = (4, 5, 6, 8, 12, 22, 42)
"""The orders n of the add direction in :func:`replace_one_rdp_order2`'s weak triangle bound
n/(n-1) R(3) + R(n) (besides 3/2 R(4) + R(3)); integer orders only (see there)."""

TINY_RDP = 1e-300
"""Floor of a per-step replace-one RDP value: below it, q^2 or 1/sigma^2 may have underflowed, so the
float result is not resolved (an RDP of 1e-300 gives the same MSE bound, +inf, as any smaller one)."""

RDP_STEP_MARGIN = 1e-13
"""Absolute margin added per step to each dp-accounting RDP value the weak triangle bound uses: at
integer orders dp-accounting sums positive terms for log A_alpha, accurate to a few ulps of it
(about 1e-16 per step); where the true value is below that, its result can even be negative."""

@dataclass(frozen=True)
class ReplaceOneRdp:
    """A replace-one (2, eps)-RDP guarantee of a DP-SGD schedule (the input of Guo et al. 2022, Thm 1).

    Attributes:
      epsilon: eps_2, an upper bound on D_2(A(D u {z}) || A(D u {z'})) over every pair z, z'.
      order: the Renyi order (2.0).
      method: how it was certified, in words.
      relation: the neighbouring relation ("replace-one").
    """

    epsilon: float
    order: float
    method: str
    relation: str = "replace-one"


def _weak_triangle_segment(sigma: float, q: float, steps: int) -> float:
    """Mironov's weak triangle bound on one Poisson segment's replace-one D_2 (see
    :func:`replace_one_rdp_order2`), from R = T x dp-accounting's add/remove RDP at integer orders."""
    import numpy as np

    n = np.asarray(WEAK_TRIANGLE_ORDERS, dtype=float)
    orders, rdp = rdp_curve(Schedule((Segment(sigma, q, steps),)), np.concatenate([[3.0, 4.0], n]))
    r = np.where(np.isnan(rdp), np.inf, np.maximum(rdp, 0.0)) + steps * RDP_STEP_MARGIN
    vals = np.concatenate([[1.5 * r[1] + r[0]], n / (n - 1.0) * r[0] + r[2:]])
    return float(np.min(vals))


def _chi2_segment(sigma: float, q: float) -> float:
    """log(1 + q^2/(1 - q) 4 sinh(1/sigma^2)): one Poisson step's replace-one D_2 (see
    :func:`replace_one_rdp_order2`), inf where sinh overflows."""
    try:
        chi2 = q * q / (1.0 - q) * 4.0 * math.sinh(1.0 / (sigma * sigma))
    except OverflowError:
        return math.inf
    # the closed form is rounded (a few ulps): pad it upwards so the bound stays on the safe side; below
    # TINY_RDP (underflow of q^2 or 1/sigma^2) the float value is not resolved, TINY_RDP bounds it
    return max(math.log1p(chi2) * (1.0 + 1e-12), TINY_RDP)


def replace_one_rdp_order2(segments_or_event: Any) -> ReplaceOneRdp:
    """A certified *replace-one* (2, eps)-RDP guarantee of DP-SGD: the guarantee Guo et al. 2022, Thm 1 needs.

    Guo, Karrer, Chaudhuri & van der Maaten (ICML 2022), Thm 1 (proof: App. B, Hammersley-Chapman-
    Robbins) compares A(D u {z}) with A(D u {z + Delta e_i}): the *replace-one* relation. Replacing
    one record changes the clipped-gradient sum by up to 2C (add/remove: C), so the add/remove RDP
    of :func:`rdp_epsilon_order2` is too small for it (at q = 1 by a factor 4) and Thm 1's MSE
    bound from it too large. Per segment (sigma, q, T), with k = ``examples_per_user``, the
    smallest of these certified bounds (segments compose by adding RDP at order 2; every bound
    below holds per step for any history, so it composes over adaptive steps):

    * no amplification (every sampler; exact for full batch / q = 1): each release of the target
      is a Gaussian mechanism of sensitivity 2kC and noise sigma C, eps_alpha = alpha (2k)^2 /
      (2 sigma^2), i.e. 4 k^2 / sigma^2 at order 2, times the releases (T steps; ceil(T q) epochs
      for shuffled fixed-size batches, see :mod:`rerokit.bounds.schedule`). Subsampling never
      helps the attacker: give it the batch memberships (the same coins for z and z').
    * Poisson, k = 1, q < 1, chi-square: in units of C, one step releases P = (1-q) phi_0 + q phi_g
      against R = (1-q) phi_0 + q phi_g' (phi_m the density of N(m + s, sigma^2 I), s the known sum
      of the other records; |g|, |g'| <= 1). D_2 = log(1 + chi^2(P||R)) and, since r >= (1-q) phi_0,
      chi^2 = q^2 int (phi_g - phi_g')^2 / r <= q^2/(1-q) (e^{|g|^2/s^2} + e^{|g'|^2/s^2}
      - 2 e^{<g,g'>/s^2}) <= q^2/(1-q) 4 sinh(1/sigma^2) (largest at |g| = |g'| = 1, g' = -g).
    * Poisson, k = 1, q < 1, weak triangle: Mironov 2017 ("Renyi Differential Privacy", Prop. 11)
      with Q = A(D) (the dataset without the record) and Hoelder exponent p:
      D_2(P||R) <= (2 - 1/p) D_{2p}(P||Q) + D_{(2p-1)/(p-1)}(Q||R) for every p > 1 (Hoelder with
      exponents p, p/(p-1) on int (p/q)^2 (q/r) dQ). p = 2 gives
      3/2 D_4(P||Q) + D_3(Q||R); p = (n-1)/(n-2) gives n/(n-1) D_3(P||Q) + D_n(Q||R) after raising
      the first order 2p <= 3 to 3 (Renyi divergence is non-decreasing in its order), so only
      integer orders are evaluated (:data:`WEAK_TRIANGLE_ORDERS`; each value padded by
      :data:`RDP_STEP_MARGIN` per step). P||Q is the remove and Q||R the add direction of the Poisson-subsampled Gaussian;
      dp-accounting's add/remove RDP (Mironov, Talwar & Zhang 2019, "Renyi Differential Privacy
      of the Sampled Gaussian Mechanism": the remove direction it computes dominates the add
      direction; checked by quadrature in the tests) bounds both, and each composes over the T
      steps. The minimum over these.

    Measured against the order-2 divergence of the worst collinear pair (g' = -g, |g| = C) by
    quadrature, one step: 1.01x to 1.6x above it for q in [0.001, 0.9], sigma in [0.5, 3]
    (tests/accounting/test_replace_one_rdp.py).

    dp-accounting 0.6 has no REPLACE_ONE accounting of ``PoissonSampledDpEvent`` (its RdpAccountant
    refuses it) and its ``GaussianDpEvent`` RDP does not double the sensitivity for REPLACE_ONE,
    hence this function.

    Args:
      segments_or_event: a :class:`~rerokit.bounds.schedule.Schedule` (its sampler and unit of
        privacy are used), (sigma, q, T) triples or a dp-accounting ``DpEvent`` (Poisson, k = 1).

    Returns:
      A :class:`ReplaceOneRdp` (eps may be inf for sigma too small to represent).

    Raises:
      TypeError, ValueError: as :meth:`Schedule.coerce`.
    """
    sched = Schedule.coerce(segments_or_event)
    k = sched.examples_per_user
    total = 0.0
    amplified = False
    for sigma, q, steps in sched:
        releases = epochs_touched(q, steps) if sched.sampler == "shuffle" else steps
        inv = max(4.0 * k * k / sigma / sigma, TINY_RDP)  # 1/sigma^2 underflows for sigma > 1e154
        eps = releases * inv if math.isfinite(inv) else math.inf
        if sched.sampler == "poisson" and k == 1 and q < 1.0:
            amp = min(steps * _chi2_segment(sigma, q), _weak_triangle_segment(sigma, q, steps))
            if amp < eps:
                eps, amplified = amp, True
        total += eps
    if amplified:
        method = ("Poisson subsampled Gaussian: min of chi-square bound and Mironov 2017 Prop. 11 over "
                  "the add/remove RDP")
    else:
        method = f"Gaussian, sensitivity 2{'' if k == 1 else str(k)}C, no amplification"
    return ReplaceOneRdp(float(total), 2.0, method)
