"""Certify a schedule for the run it describes: its sampler and its unit of privacy.

The privacy-loss engine (:mod:`rerokit.bounds.dpsgd`, :mod:`rerokit.bounds.tradeoff`) composes
Poisson-subsampled Gaussian steps. A run that formed its batches otherwise, or that protects a
user with several examples, is certified by handing the engine the schedule that
:meth:`rerokit.bounds.schedule.Schedule.certification` derives (the proof sketches are in
:mod:`rerokit.bounds.schedule`): shuffled / full batches become full-batch Gaussian releases
(no amplification), a group of k examples under Poisson sampling the engine's ``group_size=k``
(Binomial(k, q) mixture per step). Where the engine on this build cannot compose a group, the
certified no-amplification envelope (every step holds all k examples, mu = k sqrt(T)/sigma) is
used instead, and said so.

Also here: :func:`certified_epsilon`, epsilon at delta that stays finite below the PLD's floor
(the smaller of the RDP conversion and the Gaussian-DP envelope, both certified).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable

from rerokit.bounds.schedule import Certification, Schedule

__all__ = ["engine_certification", "certified_tradeoff", "certified_rero", "certified_epsilon", "rdp_epsilon",
           "PoissonAssumption", "POISSON_ASSUMPTION_NOTE"]

POISSON_ASSUMPTION_NOTE = (
    "assumes Poisson sampling (amplification by subsampling), which this run did not use ({sampler}): not "
    "certified for this run, shown for comparison only"
)


@dataclass(frozen=True)
class PoissonAssumption:
    """The number a Poisson accountant would print for a run that did not sample that way.

    Attributes:
      gamma: the Poisson-accounted gamma (None when no prior was given).
      epsilon: the Poisson-accounted epsilon at ``delta``.
      delta: its delta.
      note: why it is not certified for this run.
    """

    gamma: float | None
    epsilon: float
    delta: float
    note: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, ``kind`` "assumption"."""
        return {"gamma": self.gamma, "epsilon": self.epsilon, "delta": self.delta, "kind": "assumption",
                "note": self.note}


def _supports_group(fn: Callable[..., Any]) -> bool:
    try:
        return "group_size" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False


def engine_certification(schedule: Schedule, fn: Callable[..., Any] | None = None) -> Certification:
    """The :class:`~rerokit.bounds.schedule.Certification` this build's engine can compose.

    Args:
      schedule: the run.
      fn: the engine function that will be called (its signature decides whether ``group_size`` is
        supported); default :func:`rerokit.bounds.tradeoff.dpsgd_tradeoff`.

    Returns:
      ``schedule.certification()``, or its certified group envelope when a group of k > 1 examples
      under Poisson sampling needs ``group_size`` and the engine does not take it.
    """
    c = schedule.certification()
    if c.group_size > 1:
        if fn is None:
            from rerokit.bounds.tradeoff import dpsgd_tradeoff as fn
        if not _supports_group(fn):
            return schedule.group_envelope()
    return c


def _group_kw(c: Certification) -> dict[str, Any]:
    return {"group_size": c.group_size} if c.group_size > 1 else {}


def _method(schedule: Schedule, c: Certification, method: str) -> str:
    """"exact" becomes "closed-form" where the certified view is a set of full-batch Gaussian releases
    of a shuffled or group run (example-level Poisson and full-batch runs keep their numbers): the
    exact Gaussian-DP values, rounded up, instead of the PLD's slightly larger bracket ends."""
    # example-level Poisson and full-batch runs keep the numbers they always had (full batch is Poisson at q = 1)
    plain = schedule.sampler in ("poisson", "full_batch") and schedule.examples_per_user == 1
    if method == "exact" and not plain and not c.amplified and c.group_size == 1 and c.schedule.full_batch:
        return "closed-form"
    return method


def certified_tradeoff(schedule: Schedule, *, adjacency: str = "remove", method: str = "exact",
                       value_discretization_interval: float | None = None) -> tuple[Any, Certification]:
    """The certified trade-off curve of the run (its sampler and unit of privacy included).

    Args:
      schedule: the run.
      adjacency, method, value_discretization_interval: as
        :func:`rerokit.bounds.tradeoff.dpsgd_tradeoff`.

    Returns:
      ``(curve, certification)``: the :class:`~rerokit.bounds.tradeoff.TradeoffCurve` and what it
      certifies (the closed-form Gaussian-DP curve where the certified view is full-batch releases
      of a non-Poisson or group run).
    """
    from rerokit.bounds.tradeoff import dpsgd_tradeoff

    c = engine_certification(schedule, dpsgd_tradeoff)
    curve = dpsgd_tradeoff(segments=c.schedule, adjacency=adjacency, method=_method(schedule, c, method),
                           value_discretization_interval=value_discretization_interval, **_group_kw(c))
    return curve, c


def certified_rero(schedule: Schedule, **kwargs: Any) -> tuple[Any, Certification]:
    """:func:`rerokit.bounds.dpsgd.rero_dpsgd` of the run (its sampler and unit of privacy included).

    Args:
      schedule: the run.
      **kwargs: the other arguments of ``rero_dpsgd`` (``log_kappa``, ``method``, ``comparisons``,
        ``numerics``, ...).

    Returns:
      ``(bound, certification)``; ``bound.extras["epsilon"]`` is :func:`certified_epsilon`'s (finite
      below the PLD's floor).
    """
    from rerokit.bounds.dpsgd import rero_dpsgd
    from rerokit.bounds.dpsgd_details import DpsgdDetails

    c = engine_certification(schedule)
    kwargs["method"] = _method(schedule, c, kwargs.get("method", "exact"))
    # a group under Poisson sampling: the engine composes the Binomial(k, q) mixture of the schedule's unit
    segments = c.schedule if c.group_size == 1 else Schedule(c.schedule.segments, examples_per_user=c.group_size)
    b = rero_dpsgd(segments=segments, **kwargs)
    cmp = DpsgdDetails.of(b).comparisons
    if cmp is not None:  # finite below the PLD's floor; exact where every release holds the target
        b.extras["epsilon"] = certified_epsilon(schedule, cmp.delta, pld_epsilon=cmp.epsilon)
    return b, c


def rdp_epsilon(schedule: Schedule, delta: float) -> float:
    """Certified epsilon at ``delta`` from the schedule's RDP curve (finite for every delta > 0).

    eps = min over integer orders alpha of rdp(alpha) + log((alpha - 1)/alpha) - (log delta +
    log alpha)/(alpha - 1) (Canonne, Kamath & Steinke 2020, Prop. 12; Balle et al. 2020, Thm 21),
    on the exact integer-order RDP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang
    2019; the remove direction, which dominates the add direction at integer orders, their Thm 5),
    composed over the certified engine schedule. Only for group size 1 (else inf).

    Args:
      schedule: the run.
      delta: delta in (0, 1); may be far below the PLD's floor (e.g. 1e-320).

    Returns:
      epsilon >= 0, rounded up; inf when it cannot be certified this way.
    """
    import numpy as np

    from rerokit.bounds.dpsgd import rdp_curve_subsampled_gaussian

    c = engine_certification(schedule)
    if c.group_size > 1:
        return math.inf
    orders = np.array(list(range(2, 65)) + [2 ** i for i in range(7, 17)] + [96, 192, 384, 768, 1536, 3072],
                      dtype=float)
    _, rdp = rdp_curve_subsampled_gaussian(c.schedule.segments, orders)
    with np.errstate(over="ignore", invalid="ignore"):
        eps = rdp + np.log((orders - 1.0) / orders) - (math.log(delta) + np.log(orders)) / (orders - 1.0)
    eps = eps[np.isfinite(eps)]
    if eps.size == 0:
        return math.inf
    e = float(max(0.0, eps.min()))
    return e * (1.0 + 1e-12) + 1e-12  # the float round-off of the conversion, on the safe side


def certified_epsilon(schedule: Schedule, delta: float, *, pld_epsilon: float | None = None,
                      value_discretization_interval: float | None = None) -> float:
    """Certified epsilon at ``delta`` of the run; finite below the PLD's floor.

    The PLD accountant's epsilon (``pld_epsilon`` if already computed, else
    :func:`rerokit.bounds.dpsgd.epsilon_dpsgd` of the certified engine schedule) is used where it is
    finite; where it is infinite (delta at or below the mass the pessimistic PLD leaves at infinity,
    about 1e-13) the smaller of :func:`rdp_epsilon` and the exact epsilon of the Gaussian-DP
    envelope mu = sqrt(sum_i T_i / sigma_i^2) of the engine schedule (exact for q = 1; an upper
    bound otherwise, subsampling never increases epsilon) - both certified.

    Where every release holds the target (full batch, or the unamplified view of shuffled batches)
    the exact Gaussian-DP epsilon is used when it is below the PLD's (pessimistic) one.

    Args:
      schedule: the run.
      delta: delta in (0, 1).
      pld_epsilon: the PLD's epsilon at ``delta``, when the caller has it.
      value_discretization_interval: PLD grid step (default automatic).

    Returns:
      epsilon >= 0 (inf only when the run has infinite mu).
    """
    from rerokit._validate import check_probability

    delta = check_probability("delta", delta, high_open=True)
    if pld_epsilon is None:
        from rerokit.bounds.dpsgd import epsilon_dpsgd

        c = engine_certification(schedule, epsilon_dpsgd)
        pld_epsilon = epsilon_dpsgd(segments=c.schedule, delta=delta,
                                    value_discretization_interval=value_discretization_interval, **_group_kw(c))
    from rerokit.bounds.gaussian import gaussian_epsilon

    cert = engine_certification(schedule)
    if cert.schedule.full_batch and cert.group_size == 1 and math.isfinite(pld_epsilon):
        # every release holds the target: the run is exactly mu-GDP and this epsilon is exact
        mu = cert.schedule.mu_full_batch
        return float(min(pld_epsilon, gaussian_epsilon(delta, mu))) if math.isfinite(mu) else float(pld_epsilon)
    if math.isfinite(pld_epsilon):
        return float(pld_epsilon)

    env = schedule.group_envelope() if schedule.examples_per_user > 1 else engine_certification(schedule)
    mu = env.schedule.mu_full_batch
    gdp = gaussian_epsilon(delta, mu) if math.isfinite(mu) else math.inf
    return float(min(gdp, rdp_epsilon(schedule, delta)))


def poisson_assumption(schedule: Schedule, gamma: float | None, epsilon: float, delta: float) -> PoissonAssumption:
    """Wrap the Poisson-accounted numbers of a non-Poisson run with the note that they are not certified."""
    return PoissonAssumption(gamma, epsilon, delta, POISSON_ASSUMPTION_NOTE.format(sampler=schedule.sampler))
