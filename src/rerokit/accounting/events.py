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
from rerokit.bounds.schedule import Schedule, Segment

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
    "ORDER2_RDP_ORDERS",
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
    return np.asarray(acc._orders, dtype=float).copy(), np.asarray(acc._rdp, dtype=float).copy()


def rdp_epsilon_order2(segments_or_event: Any) -> tuple[float, float]:
    """A (2, eps)-RDP guarantee of a DP-SGD schedule, the input of Guo et al. 2022, Thm 1.

    dp-accounting's RDP curve (Poisson-subsampled Gaussian, Mironov et al. 2019) at
    :data:`ORDER2_RDP_ORDERS`, read at order 2 by :func:`rerokit.bounds.mse.rdp_epsilon_at_order`
    (never interpolated). Used by ``rerokit bound mse-rdp`` and ``rerokit report``.

    Args:
      segments_or_event: a :class:`~rerokit.bounds.schedule.Schedule`, (sigma, q, T) triples or a
        dp-accounting ``DpEvent``.

    Returns:
      ``(eps, order)``: the RDP epsilon and the order it was read at (2.0).
    """
    from rerokit.bounds.mse import rdp_epsilon_at_order

    orders, rdp = rdp_curve(segments_or_event, ORDER2_RDP_ORDERS)
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
