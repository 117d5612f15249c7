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

from rerokit._validate import check_int, check_positive, check_probability

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
]

Segment = tuple[float, float, int]


def _segment(sigma: Any, q: Any, steps: Any, prefix: str = "") -> Segment:
    return (
        check_positive(prefix + "noise_multiplier", sigma),
        check_probability(prefix + "sample_rate", q),
        check_int(prefix + "steps", steps, minimum=1),
    )


def _step_event(sigma: float, q: float) -> "dp_accounting.DpEvent":
    import dp_accounting

    g = dp_accounting.GaussianDpEvent(sigma)
    return g if q == 1.0 else dp_accounting.PoissonSampledDpEvent(q, g)


def dpsgd_event(noise_multiplier: float, sample_rate: float, steps: int) -> "dp_accounting.DpEvent":
    """``SelfComposed(PoissonSampled(q, Gaussian(sigma)), T)``; for q = 1 no sampling wrapper."""
    import dp_accounting

    s, q, T = _segment(noise_multiplier, sample_rate, steps)
    return dp_accounting.SelfComposedDpEvent(_step_event(s, q), T)


def schedule_event(segments: Iterable[Sequence[Any]]) -> "dp_accounting.DpEvent":
    """``ComposedDpEvent`` of :func:`dpsgd_event` for each (sigma, q, T) segment."""
    import dp_accounting

    segs = _segments(segments)
    return dp_accounting.ComposedDpEvent([dpsgd_event(*s) for s in segs])


def _segments(segments: Iterable[Sequence[Any]]) -> list[Segment]:
    out = []
    for i, seg in enumerate(segments):
        if not isinstance(seg, (list, tuple)) or len(seg) != 3:
            raise ValueError(f"segments[{i}] must be a (noise_multiplier, sample_rate, steps) triple, got {seg!r}")
        out.append(_segment(*seg, prefix=f"segments[{i}]."))
    if not out:
        raise ValueError("segments must be a non-empty list of (noise_multiplier, sample_rate, steps)")
    return out


def segments_from_event(event: Any) -> list[Segment]:
    """Flatten a DpEvent built from Gaussian / PoissonSampled(Gaussian) events into segments.

    Accepts Gaussian, PoissonSampled(q, Gaussian), SelfComposed and Composed events (NoOp events
    are skipped). Anything else raises ValueError (the DP-SGD bound needs Gaussian steps).
    """
    import dp_accounting as dpa

    out: list[Segment] = []

    def walk(e: Any, count: int) -> None:
        if isinstance(e, dpa.NoOpDpEvent):
            return
        if isinstance(e, dpa.SelfComposedDpEvent):
            walk(e.event, count * int(e.count))
        elif isinstance(e, dpa.ComposedDpEvent):
            for sub in e.events:
                walk(sub, count)
        elif isinstance(e, dpa.GaussianDpEvent):
            out.append(_segment(e.noise_multiplier, 1.0, count))
        elif isinstance(e, dpa.PoissonSampledDpEvent) and isinstance(e.event, dpa.GaussianDpEvent):
            out.append(_segment(e.event.noise_multiplier, e.sampling_probability, count))
        else:
            raise ValueError(
                f"event must be built from Gaussian / PoissonSampled(Gaussian) events, got {type(e).__name__}"
            )

    walk(event, 1)
    if not out:
        raise ValueError("event contains no Gaussian steps")
    return out


def segments_from_opacus_history(history: Iterable[Sequence[Any]]) -> list[Segment]:
    """Opacus ``accountant.history`` (list of (noise_multiplier, sample_rate, num_steps)) -> segments.

    Consecutive entries with the same (sigma, q) are merged.
    """
    out: list[Segment] = []
    for i, entry in enumerate(history):
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise ValueError(f"history[{i}] must be (noise_multiplier, sample_rate, num_steps), got {entry!r}")
        s, q, T = _segment(*entry, prefix=f"history[{i}].")
        if out and out[-1][0] == s and out[-1][1] == q:
            out[-1] = (s, q, out[-1][2] + T)
        else:
            out.append((s, q, T))
    if not out:
        raise ValueError("history is empty: no DP-SGD steps were recorded")
    return out


def _as_event(segments_or_event: Any) -> "dp_accounting.DpEvent":
    import dp_accounting

    if isinstance(segments_or_event, dp_accounting.DpEvent):
        return segments_or_event
    return schedule_event(segments_or_event)


def epsilon_pld(segments_or_event: Any, delta: float, *, value_discretization_interval: float = 1e-4) -> float:
    """epsilon at ``delta`` from dp-accounting's PLDAccountant (add-or-remove adjacency, pessimistic)."""
    import dp_accounting

    d = check_probability("delta", delta, high_open=True)
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=value_discretization_interval)
    acc.compose(_as_event(segments_or_event))
    return float(acc.get_epsilon(d))


def rdp_curve(segments: Any, orders: Sequence[float] | None = None) -> tuple[Any, Any]:
    """(orders, composed RDP epsilons) from dp-accounting's RdpAccountant (default orders if None)."""
    import dp_accounting
    import numpy as np

    acc = dp_accounting.rdp.RdpAccountant(orders=orders)
    acc.compose(_as_event(segments))
    return np.asarray(acc._orders, dtype=float).copy(), np.asarray(acc._rdp, dtype=float).copy()


def epsilon_rdp(segments_or_event: Any, delta: float, orders: Sequence[float] | None = None) -> float:
    """epsilon at ``delta`` from dp-accounting's RdpAccountant."""
    import dp_accounting

    d = check_probability("delta", delta, high_open=True)
    acc = dp_accounting.rdp.RdpAccountant(orders=orders)
    acc.compose(_as_event(segments_or_event))
    eps = float(acc.get_epsilon(d))
    return eps if math.isfinite(eps) else math.inf
