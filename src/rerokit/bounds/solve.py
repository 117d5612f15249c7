"""One calibration solver for every monotone risk curve in rerokit.

In the style of dp_accounting's ``calibrate_dp_mechanism`` (a monotone function, a bracket, a
tolerance, a certified side), :func:`calibrate_monotone` finds the boundary of the feasible set
``{x : f(x) <= target}`` of a monotone ``f`` and returns a parameter that was *evaluated* and
found feasible - never an interpolated guess - together with the last bracket
``(infeasible, feasible)``. Every calibrator uses it: the DP-SGD noise multiplier and step count
for a target gamma (:mod:`rerokit.bounds.calibrate`), the noise multiplier for (epsilon, delta)
(ibid. and :mod:`rerokit.bounds.gaussian`), the uninformed MSE/PSNR calibration
(:mod:`rerokit.bounds.uninformed`) and the full-batch DP-GD noise of RecoNN.

Search. From ``start`` the bracket is grown geometrically (factor ``growth``; each time it fails
the factor is squared) until one end is feasible and the other not, within ``[lower, upper]``; then the bracket is
shrunk by the Illinois variant of regula falsi on ``transform(f(x)) - transform(target)`` against
``log x`` (smooth risk curves converge in a handful of evaluations), with a bisection step
whenever an interpolation step fails to halve the bracket, until ``x_feasible / x_infeasible <=
1 + rtol`` (integers: until they are adjacent). Where no ``x`` in range is feasible, or every
``x`` is, :class:`NoFeasibleValue` / :class:`AllFeasible` (both ``ValueError``) say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from rerokit._validate import check_positive

__all__ = ["Calibrated", "NoFeasibleValue", "AllFeasible", "SearchRange", "calibrate_monotone"]


class NoFeasibleValue(ValueError):
    """No parameter in the allowed range meets the target."""


class AllFeasible(ValueError):
    """Every parameter in the allowed range meets the target (the search has no boundary)."""


@dataclass(frozen=True)
class Calibrated:
    """Result of :func:`calibrate_monotone`.

    Attributes:
      x: the calibrated parameter; ``f(x) <= target`` was evaluated (certified side).
      value: ``f(x)``.
      payload: what ``f`` returned beside the value at ``x`` (e.g. a :class:`Bound`), or None.
      bracket: ``(lo, hi)`` with one end ``x`` and the other an evaluated infeasible parameter
        (``None`` where the feasible end is a limit of the range, see ``at_limit``).
      evaluations: number of evaluations of ``f``.
      at_limit: True when ``x`` is the range limit (every value up to it is feasible).
    """

    x: float
    value: float
    payload: Any
    bracket: tuple[float | None, float | None]
    evaluations: int
    at_limit: bool = False


@dataclass(frozen=True)
class SearchRange:
    """Where :func:`calibrate_monotone` searches: the allowed range and the first parameter tried.

    The counterpart of dp-accounting's ``LowerEndpointAndGuess`` / ``ExplicitBracketInterval``:
    ``SearchRange(lower=1e-6, upper=2.0**40, start=1.0)``.

    Attributes:
      lower: the lower end of the allowed range, a finite number > 0 (the search works on log x).
      upper: the upper end, a finite number >= ``lower``.
      start: the first parameter tried, in [lower, upper] (a good guess saves evaluations).

    Raises:
      TypeError: if a field is not a real number.
      ValueError: if a field is not finite or the order 0 < lower <= start <= upper does not hold.
    """

    lower: float
    upper: float
    start: float

    def __post_init__(self) -> None:
        for name in ("lower", "upper", "start"):
            object.__setattr__(self, name, check_positive(f"SearchRange.{name}", getattr(self, name)))
        if not self.lower <= self.start <= self.upper:
            raise ValueError(f"SearchRange needs lower <= start <= upper, got lower={self.lower!r}, "
                             f"start={self.start!r}, upper={self.upper!r}")


_TRANSFORMS: dict[str, Callable[[float], float]] = {
    "identity": lambda v: v,
    "log": lambda v: math.log(v) if v > 0 else -745.0,
    "logit": lambda v: (math.log(v) - math.log1p(-v)) if 0 < v < 1 else (-745.0 if v <= 0 else 745.0),
}


MIN_RTOL = 1e-15
"""Smallest relative precision a search can reach in double precision (1 + 1e-15 > 1)."""

def calibrate_monotone(
    fn: Callable[[float], Any],
    target: float,
    *,
    feasible: str,
    search: SearchRange,
    rtol: float = 1e-4,
    integer: bool = False,
    growth: float = 2.0,
    transform: str = "log",
    max_evaluations: int = 200,
) -> Calibrated:
    """Boundary of ``{x in [lower, upper] : f(x) <= target}`` for a monotone ``f``.

    Args:
      fn: ``x -> value`` or ``x -> (value, payload)``; monotone in ``x``.
      target: the value not to exceed.
      feasible: ``"above"`` when large ``x`` are feasible (``f`` non-increasing, e.g. risk vs the
        noise multiplier): returns the smallest feasible ``x`` (to ``rtol``); ``"below"`` when
        small ``x`` are feasible (``f`` non-decreasing, e.g. risk vs steps): the largest.
      search: the :class:`SearchRange` - the allowed range ``[lower, upper]`` (0 < lower, finite;
        the search works on ``log x``) and the first parameter tried, ``start``.
      rtol: stop when feasible/infeasible ends differ by at most this factor (1 + rtol; default 1e-4).
      integer: search integers (stops when the ends are adjacent).
      growth: first factor by which the bracket is grown from ``start`` (squared each time; > 1).
      transform: ``"log"`` (default, values in (0, 1]), ``"logit"`` or ``"identity"``: the scale
        on which interpolation happens (only speed depends on it, never the certified side).
      max_evaluations: hard cap; exceeded means ``f`` is not monotone (``RuntimeError``).

    Returns:
      :class:`Calibrated` with ``f(x) <= target`` evaluated at ``x``.

    Raises:
      NoFeasibleValue: not even the most favourable end of the range meets the target.
      AllFeasible: the least favourable end already meets it (``at_limit`` results are returned
        instead when ``feasible == "below"`` and ``upper`` is feasible - a capped search).
      ValueError: ``feasible`` is not "above"/"below", rtol <= 0, growth <= 1 or ``transform`` is not
        one of the three names.
      TypeError: ``search`` is not a :class:`SearchRange`.
      RuntimeError: more than ``max_evaluations`` evaluations.
    """
    if feasible not in ("above", "below"):
        raise ValueError(f"feasible must be 'above' or 'below', got {feasible!r}")
    if not isinstance(search, SearchRange):
        raise TypeError(f"search must be a rerokit.bounds.SearchRange, got {type(search).__name__}")
    lower, upper, start = search.lower, search.upper, search.start
    if not (rtol > 0 and growth > 1):
        raise ValueError("rtol must be > 0 and growth > 1")
    if not MIN_RTOL <= rtol <= 1.0:  # 1 + rtol == 1 below: the search would never stop (issue 20)
        raise ValueError(f"rtol must be a relative precision in [{MIN_RTOL:g}, 1], got {rtol!r}")
    if transform not in _TRANSFORMS:
        raise ValueError(f"transform must be one of {', '.join(_TRANSFORMS)}, got {transform!r}")
    tf = _TRANSFORMS[transform]
    t_target = tf(target)
    up = feasible == "above"  # direction in which feasibility is reached
    evals = 0
    cache: dict[float, tuple[float, Any]] = {}

    def ev(x: float) -> tuple[bool, float, Any]:
        nonlocal evals
        if x not in cache:
            evals += 1
            if evals > max_evaluations:
                raise RuntimeError("calibration did not converge (is the function monotone?)")
            out = fn(x)
            cache[x] = (float(out[0]), out[1]) if isinstance(out, tuple) else (float(out), None)
        v, p = cache[x]
        return v <= target, v, p

    def snap(x: float) -> float:
        if integer:
            x = float(math.floor(x) if up else math.ceil(x))
        return min(upper, max(lower, x))

    x0 = snap(start)
    ok0, v0, p0 = ev(x0)
    feas, feas_v, feas_p = (x0, v0, p0) if ok0 else (None, None, None)
    infeas = None if ok0 else x0
    # grow towards the missing side
    step = growth
    while feas is None or infeas is None:
        toward_feasible = feas is None
        base = infeas if toward_feasible else feas
        go_up = up == toward_feasible
        limit = upper if go_up else lower
        if base == limit:
            if toward_feasible:
                raise NoFeasibleValue(f"no value in [{lower:g}, {upper:g}] meets the target {target:g}")
            if not up:  # every x up to `upper` is feasible: return the capped search
                return Calibrated(feas, feas_v, feas_p, (feas, None), evals, at_limit=True)
            raise AllFeasible(f"every value in [{lower:g}, {upper:g}] meets the target {target:g}")
        nxt = snap(base * step if go_up else base / step)
        if integer and nxt == base:
            nxt = snap(base + (1 if go_up else -1))
        step *= step
        ok, v, p = ev(nxt)
        if ok:
            feas, feas_v, feas_p = nxt, v, p
        else:
            infeas = nxt
    # shrink: Illinois regula falsi on (log x, transform(f) - transform(target)); feasible ends
    # have g <= 0 < g of infeasible ends, so the secant root lies strictly inside the bracket
    g_f, g_i = tf(feas_v) - t_target, tf(cache[infeas][0]) - t_target
    kept_before = None
    slow = 0  # interpolation steps in a row that failed to halve the bracket
    est_prev = None  # the previous secant estimate of the boundary
    probe = None  # a point just across from the feasible end, to close a converged bracket

    def done() -> bool:
        if integer:
            return abs(feas - infeas) <= 1
        return max(feas, infeas) / min(feas, infeas) <= 1.0 + rtol

    def toward(x: float, end: float, ratio: float) -> float:
        """``x`` moved by the factor ``ratio`` in the direction of ``end``."""
        return x * ratio if end > x else x / ratio

    while not done():
        lf, li = math.log(feas), math.log(infeas)
        x, interpolated, converged = probe, False, False
        probe = None
        if x is None and slow < 3 and math.isfinite(g_f) and math.isfinite(g_i) and g_i > g_f:
            t = g_f / (g_f - g_i)
            if 0.0 < t < 1.0:
                est = math.exp(lf + t * (li - lf))
                interpolated = True
                converged = est_prev is not None and max(est, est_prev) / min(est, est_prev) <= 1.0 + rtol
                est_prev = est
                # a converged estimate: test just on its feasible side, then just across (below)
                x = toward(est, feas, 1.0 + 0.5 * rtol) if converged else est
                if not min(feas, infeas) < x < max(feas, infeas):
                    x = est
        if x is None:
            x = math.exp(0.5 * (lf + li))
            slow = 0
        if integer:
            x = float(round(x))
            if x in (feas, infeas):  # adjacent rounding: step one integer into the bracket
                x = feas + (1.0 if feas < infeas else -1.0)
        ok, v, _ = ev(x)
        g = tf(v) - t_target
        if ok:
            feas, feas_v, feas_p, g_f, kept = x, v, cache[x][1], g, "infeasible"
        else:
            infeas, g_i, kept = x, g, "feasible"
        if kept == kept_before:  # Illinois: the end kept twice in a row has its weight halved
            if kept == "infeasible":
                g_i *= 0.5
            else:
                g_f *= 0.5
        kept_before = kept
        if interpolated:
            slow = slow + 1 if abs(math.log(feas / infeas)) > 0.5 * abs(lf - li) else 0
        if converged and ok and not done():
            probe = toward(feas, infeas, 1.0 + 0.999 * rtol) if not integer else feas + (1.0 if infeas > feas else -1.0)
    lo, hi = (infeas, feas) if up else (feas, infeas)
    return Calibrated(feas, feas_v, feas_p, (lo, hi), evals)
