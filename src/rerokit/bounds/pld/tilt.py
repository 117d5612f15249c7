"""Tails by exponential tilting: the certified power at tiny levels with relative precision.

At a tiny level alpha the Neyman-Pearson threshold l* of the composed PLD sits far in its upper
tail, where the masses are far below the FFT's absolute round-off. Tilting each step's pmf by
e^{t l} (normalised by its moment function M_i(t)) before the FFT and untilting after,

    p(l) = e^{C - t l} p_t(l),   C = sum_i T_i log M_i(t),

turns the absolute error bounds of the tilted composition (:mod:`rerokit.bounds.pld.compose`)
into errors relative to e^{C - t l}, i.e. relative to the masses near l* when the tilted
distribution is centred there (the saddle point: t solves Psi(t) - (t+1) Psi'(t) = log alpha,
Psi = C as a function of t, which makes Q(L > Psi'(t)) ~ alpha; Daniels 1954, "Saddlepoint
approximations in statistics" - used here only to *choose* t; every t gives a certified bound).
The tilt actually used is pulled a little below it (:func:`pulled_tilt`, :data:`_PULL`), where the
heavy right tails of small-q steps otherwise make the tilted window long.

Upper end: f(s) = s alpha + p_inf + sum_{l_i > log s} p_i (1 - s e^{-l_i}) >= the power for every
s > 0 (Neyman-Pearson duality), evaluated at s = e^{l_k} for every grid point of the tilted window
with the untilted masses; the masses above l_k may be off by at most e^{C - t l_k} (R + 3 tau)
(round-off, wrap-around and the mass above the window, all tilted masses), where R bounds the
tilted round-off errors weighted by their untilting factors e^{-t (l_j - l_k)} <= 1
(:func:`rerokit.bounds.pld.compose.weighted_roundoff`: the l1 round-off, or by Cauchy-Schwarz its
2-norm times (1 - e^{-2 t h})^(-1/2), far smaller for long schedules on fine grids).
Lower end: threshold tests S >= s on the bucket statistic, with its P- and Q-distributions tilted
by t and t + 1, level bounded above and power below by the untilted sums and the same error terms;
and the test that randomizes between the first threshold within the level and the one below it,
at the largest weight whose level bound stays within alpha (:func:`randomized_lower`): the grid's
granularity then no longer costs a whole label's mass (e^{(t+1) h} in the level), and the lower
ends at q 1e-3, kappa 1e-9 moved from 1e-3 below the upper ones to 1e-5.
Everything is in logs, so levels like 1e-473 are handled without underflow.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from rerokit.bounds.pld.compose import (MAX_FFT, Composed, WindowTooWide, chernoff_lower, chernoff_window, compose, fft_size,
                                       moment_support, weighted_roundoff)
from rerokit.bounds.pld.logsum import suffix_logsumexp, total_logsumexp
from rerokit.bounds.pld.normal import logsumexp_rows

__all__ = ["tilted_power", "tilted_upper", "tilted_lower", "TiltedSide", "saddle_tilt", "pulled_tilt", "upper_with_pull", "pulled_upper", "tilted_upper_share", "tail_forecast", "saddle_gap", "bisect_saddle", "log_moments", "tilt_pmf", "tilted_hockey_sticks", "mean_tilt", "mean_ladder", "tilted_tails", "log_total_mass", "tilted_side_tails", "randomized_lower"]

# tail mass left outside the tilted windows (each side): relative to the tilted masses, which are of
# order one near the threshold, so far larger than the untilted compositions' 1e-17 (smaller FFTs);
# the statistic's Q side is tilted one further than its saddle point, hence its smaller value
# (1e-9 / 1e-12 were 1.04-1.10x faster over 116 far-tail cells, but where the saddle point centres
# the tilt far from the threshold the masses there are tiny and 3 tau swamps them: sigma 1.08,
# q 1.29e-4, T 285, kappa 8.4e-17, centred at 0.51 nats with the threshold near 0.13, where the tilted
# masses are ~1e-12, went from 2.4e-4 to 2.4 % wide on the one-grid tilt; reverted)
_LOG_TAU = math.log(1e-12)
_LOG_TAU_STAT = math.log(1e-15)
# ...so where the upper end's truncation term (3 tau, untilted) is more than e^_TAU_SHARE of it, the
# window is composed again with tau lowered by that excess and e^_TAU_MARGIN more (sigma 0.988, q
# 3.08e-5, T 361, kappa 1.9e-13: the saddle point's tilted mass above the threshold is ~3e-10, the
# Chernoff bound there ~1e9 times the tail; the error term was 0.7-1 % of the upper end on every
# grid, 3 tau 0.3 % of it, and the grid ladder ran for 10 s to a bracket 1.4 % wide, now 6.6e-4 in 81 ms; two steps of sigma 0.8, q 1e-5,
# kappa 9.5e-16: 6.9 % -> 5.0e-3 wide, the exact power inside). Its A/B in one process: neutral (0.99-1.01x)
# on --grid and seeds 13 / 14 of benchmarks/pld_far_tail.py and on 30 small-q cells; at
# a share of 1e-5 it ran in 6 of 106 (up to 1.5x slower) for brackets at most 1.4x narrower
_TAU_SHARE = math.log(1e-3)
_TAU_MARGIN = 2.0
_TAU_RETRIES = 3
# ... and the later tilts of the same upper end (the pulled tilt's, the saddle point's, the long double
# recomposition) start e^_TAU_MARGIN below the lowest tau so far, not at the default: two steps of
# q 1e-5, sigma 0.6-0.9 (the exact power by mpmath): 4-14 compositions where there were 6-18, brackets
# 1.0-3.7x narrower; sigma 0.988, q 3.08e-5, T 361, kappa 1.9e-13: 75 -> 50 ms, 6.6e-4 -> 3.2e-4 wide,
# the only bracket of the 176 cells of benchmarks/pld_far_tail.py's --grid, seed 13, --small-q seeds
# 1 / 2 that it changes
_REUSE_LOWERED = True
_LOG_TAU_MIN = math.log(1e-250)
# the tilt is pulled below the saddle point t to the t' whose tilted density at the threshold is
# e^-_PULL of the saddle point's (Psi'(t) the threshold: D(t') = (t - t') Psi'(t) - Psi(t) + Psi(t')
# = _PULL, t' >= t / 2): heavy right tails (small q) put the tilted window's top far above the
# threshold, and a smaller tilt shrinks it (sigma 3.27, q 1.25e-4, T 17: 52k -> 19k labels at
# D = 5). The error terms grow by up to e^D relative to the masses at the threshold, so where the
# upper end's error term comes within e^_PULL_ERR of it the tilt is done again at t (any t is
# certified; this only chooses). Against no pull, in one process: 3 was 1.09x faster on --grid of
# benchmarks/pld_far_tail.py and 1.05x / 1.10x on its seeds 13 / 14 (2: 1.07x, 1.04x / 1.08x), the
# widest brackets the same to 1e-7; at 4, sigma 1.36, q 1.13e-3, T 70744, kappa 1.2e-30 fell back
# (69 -> 162 ms)
_PULL = 3.0
# (e^_PULL_ERR: 1e-4 at the tenth stop; 1e-3 since the eleventh, where an error term inflates the upper
# end by at most 0.1 %, against brackets aimed at 3e-3: 1.02-1.07x on --grid, --small-q and 30 tiny-q
# cells, 1.7-2x on the cells that fell back (sigma 1.36, q 1e-3, T 7e4, kappa 1e-30: 152 -> 85 ms,
# 2.9e-3 -> 4.5e-3 wide; sigma 1.1, q 3.56e-5, T 53, kappa 6.1e-22: 29 -> 17 ms), no widest bracket
# wider)
_PULL_ERR = math.log(1e-3)
# the far-tail tilt recomposed with long double forward transforms ("mixed", compose) where the upper
# end's error term is more than this share of it (a lattice-like tail: sigma 1.47, q 1.77e-4, T 58700,
# kappa 3.9e-30, share e^-6.1: 2.9 % wide in double on every grid, 1.1e-3 in "mixed", 91 -> 134 ms);
# 135 far-tail cells measured: the two above e^-7 were the two wider than 2 %, the next at e^-8.6
_MIXED_SHARE = math.log(1e-3)
# ... and where the pulled tilt's error share in double is above both e^_PULL_ERR and e^_MIXED_SHARE,
# first that pulled tilt in "mixed" (pulled_upper), whose window is the smaller one (sigma 0.988,
# q 3.08e-5, T 361, kappa 1.9e-13: 35k against 118k labels; share e^-4.7 in double, e^-7.4 in mixed),
# the saddle point's only where the share stays above e^_PULL_ERR: 63 -> 31 ms there, its bracket
# 3.2e-4 -> 4.1e-4 wide; on --grid, seed 13, --small-q seed 1 and 30 tiny-q cells no other bracket
# changed
_PULLED_MIXED_FIRST = True

# The window of a far-tail tilt (tilt s, natural log of the level log_alpha) starts at the tilted
# mass's e^_LOG_TAU_LEFT lower Chernoff bound, not at its tau one: the sums the ends read run upwards
# from about the tilted mass's 1e-2 quantile, and the mass below the window, wrapped around the
# circular convolution, lands r nfft labels above where it was (r >= 1), where untilting weighs it
# by e^{-s r nfft h}: its error in the untilted sums above every label is at most
# e^{-s nfft h} / (1 - e^{-s nfft h}) times the total untilted mass (_left_alias, log_total_mass).
# Taken where that is below alpha e^-_ALIAS_DEPTH. The long schedules' tilted losses have long thin left tails
# (sigma 1.36, q 1e-3, T 7e4, kappa 1e-30: the 1e-6 quantile 11.7 nats above the 1e-12 one)
_LOG_TAU_LEFT = math.log(1e-6)
_ALIAS_DEPTH = 40.0
_SHORT_WINDOW = True
_SHORT_MIN_POINTS = 32_768


def _window(parts: Sequence[tuple[int, np.ndarray, int]], h: float, s: float, log_tau: float,
            log_alpha: float) -> tuple[tuple[int, int], bool]:
    """(the window (A, B) of the composition of the tilted ``parts`` (tilt s), whether it is short):
    compose's own (tilted mass below e^log_tau outside each side), or, where that has at least
    :data:`_SHORT_MIN_POINTS` labels (below, the second window's moments cost more than the FFT
    points it saves), B the same and A at the e^:data:`_LOG_TAU_LEFT` lower bound, if that shortens
    the FFT and the wrapped-around mass below A is negligible (:data:`_ALIAS_DEPTH`). A choice of
    computation only (any window: :func:`_left_alias`)."""
    a, b = chernoff_window(parts, h, log_tau)
    if not (_SHORT_WINDOW and s > 0.0 and b - a + 1 >= _SHORT_MIN_POINTS):
        return (a, b), False
    a_left = chernoff_lower(parts, h, max(log_tau, _LOG_TAU_LEFT))
    n = b - max(a, a_left) + 1
    if not (a < a_left <= b and fft_size(n) < fft_size(b - a + 1) and s * fft_size(n) * h >= -log_alpha + _ALIAS_DEPTH):
        return (a, b), False
    return (a_left, b), True


def log_total_mass(parts: Sequence[tuple[int, np.ndarray, int]], log_masses: bool = False) -> float:
    """log of the total mass of the composition of the (untilted) ``parts``: sum_i T_i log sum_j p_ij,
    each sum exactly rounded (math.fsum) and the log rounded up."""
    out = 0.0
    for _, pmf, count in parts:
        if log_masses:
            fin = pmf[np.isfinite(pmf)]
            top = float(np.max(fin)) if fin.size else -math.inf
            tot = top + math.log(math.fsum(np.exp(fin - top).tolist())) if fin.size else -math.inf
        else:
            tot = math.log(math.fsum(np.asarray(pmf, dtype=float).tolist())) if np.any(pmf > 0) else -math.inf
        out += count * (tot + 1e-12 * (abs(tot) + 1.0))
    return out


def _left_alias(off: int, size: int, h: float, s: float, c: float, log_mass: float) -> np.ndarray:
    """Per label k of a window of ``size`` labels from ``off`` whose FFT has fft_size(size) points: a
    bound on sum_{j >= k} e^{-s (l_j - l_k)} |wrapped-around tilted mass at j| for the composed mass
    below the window (tilt s, C = c). A tilted mass m at l is the untilted mass e^{C - s l} m; the
    mass at l lands at l + r nfft h (r >= 1), so the sum at k is e^{s l_k - C} sum_r e^{-s r nfft h}
    times the untilted mass below the window, at most e^``log_mass`` (:func:`log_total_mass` of the
    untilted parts) times 2 (the tilted masses' relative error, far below 1)."""
    x = s * fft_size(size) * h
    ls = (off + np.arange(size)) * h
    with np.errstate(over="ignore"):
        return np.exp(s * ls - c - x + log_mass + math.log(2.0) - math.log(-math.expm1(-x))) * (1.0 + 1e-12)



def _composed(tp: Sequence[tuple[int, np.ndarray, int]], h: float, s: float, c: float, log_tau: float,
              log_alpha: float, precision: str, log_mass: Callable[[], float],
              max_points: int = MAX_FFT) -> tuple[Composed, float, float | np.ndarray]:
    """(the composition of the tilted parts ``tp`` (tilt s, C = c) on :func:`_window`, its weighted
    round-off, the error bound per label of :func:`tilted_upper` / :class:`TiltedSide`: that round-off,
    3 tau (the window's tails, wrap-around) and, for a short window, :func:`_left_alias`, the
    untilted parts' log total mass from ``log_mass()``, called only then). WindowTooWide where the
    window has more than ``max_points`` labels (compose's own limit: :data:`MAX_FFT`)."""
    win, short = _window(tp, h, s, log_tau, log_alpha)
    if win[1] - win[0] + 1 > max_points:
        raise WindowTooWide(f"the tilted window needs {win[1] - win[0] + 1} labels (max {max_points})")
    comp = compose(tp, h, log_tau, window=win, precision=precision)
    rounding = weighted_roundoff(comp, s * h)
    err = rounding + 3.0 * math.exp(log_tau)
    if short:
        err = err + _left_alias(comp.offset, comp.pmf.size, h, s, c, log_mass())
    return comp, rounding, err

Parts = Sequence[tuple[int, np.ndarray, int]]


def _prepared(parts: Parts, h: float, log_masses: bool = False) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(losses, log masses, count) per step: what every evaluation of the moments reuses
    (``log_masses``: the pmfs are given as log masses, -inf for 0)."""
    out = []
    for off, pmf, count in parts:
        if log_masses:
            keep = np.isfinite(pmf)
            out.append(((off + np.arange(pmf.size))[keep] * h, pmf[keep], count))
            continue
        labels, pmf = moment_support(off, pmf)
        with np.errstate(divide="ignore"):
            out.append((labels * h, np.log(pmf), count))
    return out


def _moments(prep: list[tuple[np.ndarray, np.ndarray, int]], t: float) -> tuple[float, float]:
    """:func:`log_moments` of :func:`_prepared` steps."""
    psi = dpsi = 0.0
    for l, lp, count in prep:
        a = lp + t * l
        lm = float(logsumexp_rows(a[None, :])[0])
        w = np.exp(a - lm)
        psi += count * lm
        dpsi += count * float(np.sum(w * l))
    return psi, dpsi


def _moments2(prep: list[tuple[np.ndarray, np.ndarray, int]], t: float) -> tuple[float, float, float]:
    """(Psi(t), Psi'(t), Psi''(t)) of :func:`_prepared` steps (Psi'' = sum_i T_i Var_t(L))."""
    psi = dpsi = d2psi = 0.0
    for l, lp, count in prep:
        a = lp + t * l
        m = float(np.max(a))
        w = np.exp(a - m)
        s = float(np.sum(w))
        mean = float(np.dot(w, l)) / s
        psi += count * (m + math.log(s))
        dpsi += count * mean
        d2psi += count * float(np.dot(w, (l - mean) ** 2)) / s
    return psi, dpsi, d2psi


def _gap(prep: list[tuple[np.ndarray, np.ndarray, int]], t: float) -> float:
    psi, dpsi = _moments(prep, t)
    return psi - (t + 1.0) * dpsi


def log_moments(parts: Parts, h: float, t: float) -> tuple[float, float]:
    """(Psi(t), Psi'(t)): sum_i T_i log M_i(t) and sum_i T_i E_t[L] of the tilted pmfs."""
    return _moments(_prepared(parts, h), t)


def saddle_gap(parts: Parts, h: float, t: float) -> float:
    """g(t) = Psi(t) - (t + 1) Psi'(t): the log level whose Neyman-Pearson threshold the tilt t
    centres (the saddle-point equation g(t) = log alpha; g decreases in t)."""
    return _gap(_prepared(parts, h), t)


def bisect_saddle(parts: Parts, h: float, log_alpha: float, lo: float, hi: float,
                  atol: float, rtol: float, iterations: int) -> float:
    """The midpoint of [lo, hi] after bisecting g(t) = log alpha (:func:`saddle_gap`, decreasing;
    g(lo) > log alpha >= g(hi)) until hi - lo <= atol + rtol hi or ``iterations`` halvings."""
    return _bisect(_prepared(parts, h), log_alpha, lo, hi, atol, rtol, iterations)


def _bisect(prep: list[tuple[np.ndarray, np.ndarray, int]], log_alpha: float, lo: float, hi: float,
            atol: float, rtol: float, iterations: int) -> float:
    """:func:`bisect_saddle` on :func:`_prepared` steps."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if _gap(prep, mid) > log_alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo <= atol + rtol * hi:
            break
    return 0.5 * (lo + hi)


def mean_tilt(parts: Parts, h: float, y: float, lo: float, cap: float) -> float | None:
    """The tilt t >= lo whose tilted mean Psi'(t) is ``y`` (Psi' increases in t): the bracket doubled
    from [lo, 2 lo] up to ``cap``, then Newton's method safeguarded by bisection, to 1e-10 of y or
    2^-40 of the bracket; None where Psi' stays below y up to the cap. A choice of computation only."""
    return _mean_tilt(_prepared(parts, h), y, lo, cap)


def _mean_tilt(prep: list[tuple[np.ndarray, np.ndarray, int]], y: float, lo: float, cap: float,
               halvings: int = 40) -> float | None:
    """:func:`mean_tilt` of :func:`_prepared` steps, to 2^-``halvings`` of the doubled bracket.
    Newton's steps on log Psi' (on Psi' where it or y is not positive; Psi'' the slope, from
    :func:`_moments2`) that leave the bracket are replaced by its midpoint, so it converges at least
    as a bisection would; it stops at 1e-10 of y. The one-jump bound's tilts
    (:mod:`rerokit.bounds.pld.onejump`, sigma 0.866, q 1.04e-7): 5-6 moment evaluations for the
    bracket and 5-7 after it, where the doubling and 40 halvings took about 59."""
    def newton(t: float, m: float, v: float) -> float:
        if not v > 0.0:
            return math.nan
        if m > 0.0 and y > 0.0:  # on log Psi' (Psi' grows about exponentially in t)
            return t - math.log(m / y) * m / v
        return t - (m - y) / v

    _, m, v = _moments2(prep, lo)
    if m >= y:
        return lo
    # the bracket: from [lo, 2 lo] doubling, or up to 64x at once where Newton's step points further
    a, b = lo, 2.0 * lo
    while True:
        _, m, v = _moments2(prep, b)
        if m >= y or b >= cap:
            break
        guess = newton(b, m, v)
        # (never past the cap by more than a doubling would go)
        a, b = b, min(64.0 * b, max(2.0 * b, cap), max(2.0 * b, 1.5 * guess if math.isfinite(guess) else 0.0))
    if m < y:
        return None
    tol = (b - a) * 2.0 ** -halvings
    t = 0.5 * (a + b)
    for _ in range(halvings):
        _, m, v = _moments2(prep, t)
        if abs(m - y) <= 1e-10 * abs(y):
            return t
        if m < y:
            a = t
        else:
            b = t
        nt = newton(t, m, v)
        if not a < nt < b:
            nt = 0.5 * (a + b)
        if abs(nt - t) <= tol or b - a <= tol:
            return nt
        t = nt
    return b


def mean_ladder(parts: Parts, h: float, lo: float, y_top: float, spacing: float, cap: float,
                most: int) -> list[float]:
    """Tilts lo = t_0 < t_1 < ... whose tilted means climb by ``spacing`` tilted standard deviations
    each (Psi'(t_{i+1}) = Psi'(t_i) + spacing sqrt(Psi''(t_i))) until one reaches ``y_top``, the
    tilt reaches ``cap`` or ``most`` tilts are taken: each tilted composition is precise within a
    few standard deviations of its mean, so together they cover [Psi'(lo), y_top]. A choice of
    computation only."""
    prep = _prepared(parts, h)
    out = [lo]
    while len(out) < most:
        _, m, v = _moments2(prep, out[-1])
        if m >= y_top:
            break
        # (a tilt within 2^-10 of its bracket [t_i, 2 t_i] is as good a rung as the exact one)
        t = _mean_tilt(prep, min(m + spacing * math.sqrt(max(v, 0.0)), y_top), out[-1], cap, 10)
        if t is None or not t > out[-1]:
            break
        out.append(t)
    return out


def saddle_tilt(parts: Parts, h: float, log_alpha: float, rtol: float = 1e-6, log_masses: bool = False) -> float:
    """The tilt t >= 0 with Psi(t) - (t + 1) Psi'(t) = log alpha (0 if alpha is not in the tail).

    Args:
      parts: (label offset, pmf, count) of the steps (the dominating REMOVE pmfs).
      h: grid step.
      log_alpha: natural log of the level.

      rtol: the bisection's relative tolerance (default 1e-6).
      log_masses: the pmfs are log masses (:mod:`rerokit.bounds.pld.logtail`).

    Returns:
      t (Newton's method, safeguarded by bisection, to ``rtol`` relative; capped at
      max(1e4, 1e3 / h) where the grid's top is reached).
    """
    return _saddle(_prepared(parts, h, log_masses), h, log_alpha, rtol)


def pulled_tilt(parts: Parts, h: float, t: float, pull: float, log_masses: bool = False) -> float:
    """The tilt t' in [t / 2, t] with D(t') = (t - t') Psi'(t) - (Psi(t) - Psi(t')) = ``pull``: the
    tilted density at the saddle point's threshold Psi'(t) is e^-D of its value under t (D >= 0 by
    the convexity of Psi, increasing as t' falls); t / 2 where D(t / 2) <= pull. Newton's method
    from t / 2, to 1e-3 t: D is convex and decreasing (D' = Psi'(t') - Psi'(t), D'' = Psi''), so its
    steps rise monotonically to the root without passing it (3-5 evaluations where a bisection took
    11). A choice of computation only (every t' gives certified bounds)."""
    prep = _prepared(parts, h, log_masses)
    psi, lstar = _moments(prep, t)
    x = 0.5 * t
    for _ in range(30):
        psi_x, dpsi_x = _moments(prep, x)
        excess = (t - x) * lstar - (psi - psi_x) - pull
        if excess <= 0.0:
            return x
        slope = dpsi_x - lstar
        if not slope < 0.0:
            return x
        step = -excess / slope
        x = min(x + step, t)
        if step <= 5e-4 * t:
            return x
    return x


def _saddle(prep: list[tuple[np.ndarray, np.ndarray, int]], h: float, log_alpha: float, rtol: float) -> float:
    """:func:`saddle_tilt` on :func:`_prepared` steps."""
    if _gap(prep, 0.0) <= log_alpha:
        return 0.0
    # the tilt scales like 1/(loss scale): up to 1e4 per unit of loss, or per 1e3 grid steps on fine
    # grids (small q and large sigma make every loss tiny)
    cap = max(1e4, 1e3 / h)
    # Newton's method on g(t) = Psi(t) - (t + 1) Psi'(t) - log alpha (decreasing, g(0) > 0), with
    # g'(t) = -(t + 1) Psi''(t): while no t with g(t) <= 0 is known, steps of 2-16x up from t = 1
    # (Newton's where it lies in that range); then kept inside the bracket [lo, hi] (a bisection
    # step where Newton's leaves it). 7-13 evaluations where doubling and bisection took 23-36.
    lo, hi, t = 0.0, math.inf, 1.0
    for _ in range(200):
        psi, dpsi, d2psi = _moments2(prep, t)
        g = psi - (t + 1.0) * dpsi - log_alpha
        if g > 0.0:
            lo = t
        else:
            hi = t
        slope = -(t + 1.0) * d2psi
        step = t - g / slope if slope < 0.0 else math.nan
        if hi == math.inf:
            if t >= cap:
                return lo
            nxt = min(min(max(step, 2.0 * t), 16.0 * t) if step == step else 2.0 * t, cap)
        else:
            nxt = step if lo < step < hi else 0.5 * (lo + hi)
            if abs(nxt - t) <= 0.5 * rtol * nxt or hi - lo <= rtol * hi:
                return nxt
        t = nxt
    return 0.5 * (lo + hi) if hi < math.inf else lo


def tail_forecast(parts: Parts, h: float, log_alpha: float,
                  rtol: float = 1e-3) -> tuple[float, float, float, float] | None:
    """What the tilt at a level will look like, before any composition: (t, threshold, log gamma
    estimate, spread), or None where the level is not in the upper tail (t = 0 or capped).

    t is :func:`saddle_tilt`; the threshold Psi'(t) is the tilted mean, where the Neyman-Pearson
    threshold of the level sits to first order (Daniels 1954); the estimate Psi(t) - t Psi'(t) is
    the log of the Chernoff bound P(L >= Psi'(t)) <= e^{Psi(t) - t Psi'(t)} there (about gamma:
    measured 0.5-3.4 times it); spread is sqrt(Psi''(t) / Psi''(0)), the tilted composition's
    standard deviation over the untilted one's (:func:`_moments2`), i.e. about the
    ratio of their window sizes. Used only to choose between computations, never as a bound (t to
    ``rtol`` relative, :func:`saddle_tilt`)."""
    prep = _prepared(parts, h)
    t = _saddle(prep, h, log_alpha, rtol)
    if not 0.0 < t < max(1e4, 1e3 / h) * 0.99:
        return None
    psi, dpsi, d2psi = _moments2(prep, t)
    return t, dpsi, psi - t * dpsi, math.sqrt(max(d2psi, 1e-300) / max(_moments2(prep, 0.0)[2], 1e-300))


def tilt_pmf(off: int, pmf: np.ndarray, h: float, t: float, cap: float = math.inf,
             labels: np.ndarray | None = None, log_masses: bool = False) -> tuple[np.ndarray, float, float, float]:
    """(tilted pmf, log M(t), relative error, absolute error) of one step's pmf (labels off..).

    The tilted mass at l = j h is exp(log p + t l - log M) with log M = log sum_j p_j e^{t l_j}
    (computed; the untilting uses the same value, so only the rounding of each exponent counts).
    Rounding the exponent a_j = log p_j + t l_j - log M (the log, the product, the two
    subtractions) and the exp errs by at most 4u (|log p_j| + |t l_j| + |log M| + 1) relative
    (r_j; u = 2^-52 here, twice the unit round-off, covering libm's exp/log within 2 ulps). The
    entries with |log p_j| <= ``cap`` get the largest of their r_j as ``rel``; the others (masses
    below e^-cap, typically the far tails that the safe rounding of :mod:`rerokit.bounds.pld.step`
    leaves near the underflow threshold, whose |log p| ~ 700 would otherwise set ``rel``) carry
    sum_j r_j (1 + 2 r_j) out_j as an absolute (l1) error ``abs`` of the tilted pmf instead.
    ``labels``: the entries' labels where they are not off, off + 1, ... (a sparse pmf's non-zero
    entries, :mod:`rerokit.bounds.pld.lowertail`). ``log_masses``: ``pmf`` holds the log masses
    (-inf for 0; masses below double range, :mod:`rerokit.bounds.pld.logtail`), taken as they are
    (no log to round: the r_j above still bound the rest)."""
    l = ((off + np.arange(pmf.size)) if labels is None else labels) * h
    with np.errstate(divide="ignore", under="ignore"):
        lp = np.asarray(pmf, dtype=float) if log_masses else np.log(pmf)
        a = lp + t * l
        lm = float(logsumexp_rows(a[None, :])[0])
        out = np.exp(a - lm)
    fin = np.isfinite(lp)
    r = 4.0 * _U_T * (np.abs(np.where(fin, lp, 0.0)) + np.abs(t * l) + abs(lm) + 1.0)
    keep = fin & (np.abs(np.where(fin, lp, 0.0)) <= cap)
    rel = float(np.max(r[keep])) if keep.any() else 4.0 * _U_T * (abs(lm) + 1.0)
    rest = fin & ~keep
    err = float(np.sum(r[rest] * (1.0 + 2.0 * r[rest]) * out[rest])) * (1.0 + 1e-9) if rest.any() else 0.0
    return out, lm, rel, err


_U_T = float(np.finfo(float).eps)  # tilt_pmf's u (twice the unit round-off)


def _tilted(parts: Sequence[tuple[int, np.ndarray, int]], h: float, t: float, log_masses: bool = False):
    """(tilted parts, C = sum_i T_i log M_i(t), bound on the log-relative error of untilting).

    Each tilted mass carries the relative error of :func:`tilt_pmf` (all entries relative); a
    composed mass is a product of T such factors, so its untilted value is off by at most sum_i T_i
    times that in log terms."""
    out, c, rel = [], 0.0, 0.0
    for off, pmf, count in parts:
        pt, lm, r, _ = tilt_pmf(off, pmf, h, t, log_masses=log_masses)
        out.append((off, pt, count))
        rel += count * r
        c += count * lm
    return out, c, rel + 4.0 * _U_T * (abs(c) + 1.0)


def _logsumexp4(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: float) -> np.ndarray:
    """log(e^a + e^b + e^c + e^d) elementwise, rounded up as :func:`rerokit.bounds.pld.normal.logsumexp_rows`
    rounds its rows (terms below e^-700 of the largest count as e^-700; the same operations in the
    same order), without stacking the four columns (a few times faster on long windows)."""
    m = np.maximum(np.maximum(a, b), np.maximum(c, d))
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", under="ignore", invalid="ignore"):
        tot = np.exp(np.maximum(a - m, -700.0)) + np.exp(np.maximum(b - m, -700.0))
        tot += np.exp(np.maximum(c - m, -700.0))
        tot += np.exp(np.maximum(d - m, -700.0))
        return np.log(tot) + m


_SLICE_MASS = 1e-2  # the upper end and the level's test are looked for above this quantile first
# ... and below this upper quantile first: the tilted masses above it enter the running sums as one
# bound (_top_log_mass), so the sums, the logs and the exps run on the slice only (a heavy-tailed
# window's top: sigma 1.36, q 1e-3, T 7e4, kappa 1e-30, its 1 - 1e-12 quantile 17 standard
# deviations above the mean)
_TOP_MASS = 1e-6


def _slice_indices(pmf: np.ndarray) -> tuple[int, int]:
    """(k0, k1), k0 < k1 <= size: the first index where the cumulative sum of ``pmf`` exceeds
    :data:`_SLICE_MASS` times its total, and one past the first where it exceeds 1 - :data:`_TOP_MASS`
    times it ((0, size) if the total is not positive): only where :func:`tilted_upper` and
    :func:`tilted_lower` look first, never part of a bound."""
    c = np.cumsum(pmf)
    if not (c.size and c[-1] > 0):
        return 0, pmf.size
    tot = float(c[-1])
    k0 = min(int(np.searchsorted(c, _SLICE_MASS * tot, side="right")), pmf.size - 1)
    k1 = int(np.searchsorted(c, (1.0 - _TOP_MASS) * tot, side="right")) + 1
    return k0, max(min(k1, pmf.size), k0 + 1)


def _top_log_mass(pmf: np.ndarray, k1: int, log_c: float, s: float, l_k1: float) -> float:
    """log of an upper bound on sum_{j >= k1} e^{log_c - s l_j} pmf[j], the untilted masses from index
    k1 on (s >= 0, l_j >= l_k1 = ``l_k1``): e^{-s l_j} <= e^{-s l_k1}, so the plain sum of pmf[k1:]
    times e^{log_c - s l_k1} bounds it; the sum's rounding (any summation order of m non-negative
    terms: within (m - 1) u relative; Higham 2002, Sec. 4.2) and the log's and the exponent's (a few
    u of their sizes) are added. -inf where nothing lies above k1."""
    m = pmf.size - k1
    if m <= 0:
        return -math.inf
    tot = float(np.sum(pmf[k1:])) * (1.0 + m * _U_T)
    if not tot > 0.0:
        return -math.inf
    lt = math.log(tot)
    return lt + log_c - s * l_k1 + 4.0 * _U_T * (abs(lt) + abs(log_c) + abs(s * l_k1) + 1.0)


def _suffix_with_top(a: np.ndarray, top: float, side: int) -> np.ndarray:
    """:func:`_suffix_logsumexp` of ``a`` with one more term e^``top`` after its last (-inf: none, the
    same sums): entry i is log(sum_{i <= j < n} e^{a_j} + e^top), i <= n."""
    if top == -math.inf:
        return _suffix_logsumexp(a, side)
    return _suffix_logsumexp(np.append(a, top), side)[: a.size + 1]


def _suffix_logsumexp(a: np.ndarray, side: int) -> np.ndarray:
    """s[i] = log sum_{j >= i} e^{a_j}, s[n] = -inf, moved by its proven rounding bound
    (:func:`rerokit.bounds.pld.logsum.suffix_logsumexp`) up (``side`` +1) or down (-1). Summed in
    double: the untilted masses grow geometrically from the window's top (by e^{t h} per label and
    more), so the recursive sum's bound stays near u / (1 - e^{-t h}), ~1e-13 at q 1e-3, kappa
    1e-9, against ~1e-3 brackets (long double: 3x the time)."""
    s, err = suffix_logsumexp(a, "double")
    return s + side * err


def tilted_power(parts: Sequence[tuple[int, np.ndarray, int]], stat_p: Sequence[tuple[int, np.ndarray, int]] | None,
                 stat_q: Sequence[tuple[int, np.ndarray, int]] | None, h: float, inf_mass: float,
                 log_alpha: float, t: float | None = None, precision: str = "double",
                 log_masses: bool = False, enough: float | None = None) -> tuple[float, float]:
    """Certified (log lower, log upper) of the power at level exp(log_alpha), by tilting.

    Args:
      parts: (label offset, dominating pmf, count) per step (REMOVE direction); with
        ``log_masses`` the pmfs are log masses and ``inf_mass`` is the log of the composed mass at
        +infinity (steps beyond double range, :mod:`rerokit.bounds.pld.logtail`; the statistic's
        parts stay linear).
      stat_p: (label offset, bucket P-masses, count) per step, or None (no lower end).
      stat_q: (label offset, bucket Q-masses, count) per step.
      h: grid step.
      inf_mass: the composed mass at +infinity.
      log_alpha: natural log of the level (<= 0).
      t: the tilt (default: :func:`saddle_tilt`).
      precision: the FFT arithmetic, "double" (default) or "extended"
        (:func:`rerokit.bounds.pld.compose.compose`). The round-off bound is relative to the tilted
        masses, which are of order one near the threshold, so double precision suffices unless the
        schedule is extremely long.
      enough: skip the statistic (the lower end: two of the three compositions, and their sums)
        where the log upper end is at most this, i.e. where a lower end the caller has from
        elsewhere (the max test's closed form) already makes the bracket narrow enough; a choice
        of computation that reads only the upper end (default None: never skipped).

    Returns:
      (log lower, log upper); log lower = log_alpha where no test fits or the statistic is skipped.
    """
    if t is None:
        t = saddle_tilt(parts, h, log_alpha, log_masses=log_masses)
    t_pulled = pulled_tilt(parts, h, t, _PULL, log_masses) if (_PULL > 0.0 and t > 0.0) else t
    lowered: list[float] = []  # the tail allowances the upper end's windows needed (_upper_at)
    log_up, t, precision, _ = pulled_upper(
        lambda x, prec: _upper_at(parts, h, x, inf_mass, log_alpha, prec, log_masses, lowered), t, t_pulled, precision)
    log_lo = log_alpha
    if stat_p is not None and not (enough is not None and log_up <= enough):
        sp, cp_, rel_p = _tilted(stat_p, h, t)
        sq, cq_, rel_q = _tilted(stat_q, h, t + 1.0)
        # the statistic's allowance at least as far below the upper end's default as the upper end's
        # had to go (the same tiny tilted masses at the threshold set both)
        log_tau_stat = min([_LOG_TAU_STAT] + [x - (_LOG_TAU - _LOG_TAU_STAT) for x in lowered])
        P, _, err_p = _composed(sp, h, t, cp_, log_tau_stat, log_alpha, precision, lambda: log_total_mass(stat_p))
        Q, _, err_q = _composed(sq, h, t + 1.0, cq_, log_tau_stat, log_alpha, precision,
                                lambda: log_total_mass(stat_q))
        log_lo, label = tilted_lower(TiltedSide(P.offset, P.pmf, cp_, rel_p, err_p),
                                     TiltedSide(Q.offset, Q.pmf, cq_, rel_q, err_q), h, t, log_alpha)
        if label is not None and log_lo > math.log(0.5) and log_up - log_lo > 1e-10:
            # power near 1: the untilting's relative error (~T u) dominates 1 - gamma; the same
            # test's power from the *untilted* P-statistic in extended precision has an absolute
            # error (round-off ~1e-10 at T = 1e6) instead
            log_lo = max(log_lo, _untilted_power(stat_p, h, label))
    return min(log_lo, log_up), log_up


def pulled_upper(upper: Callable[[float, str], tuple[float, float]], t: float, t_pulled: float,
                 precision: str = "double") -> tuple[float, float, str, float]:
    """(log upper end, the tilt it was computed at, the precision for the rest of the tilt, the log
    share of the error term in the upper end kept):
    ``upper(x, precision)`` (:func:`tilted_upper_share`'s pair: the upper end and its error term's
    log share) at t_pulled or t (:func:`upper_with_pull`); where that was in double and the share
    exceeds e^:data:`_MIXED_SHARE` (the round-off bound near the masses at the threshold: a
    lattice-like far tail of a few sampled steps), ``upper(x, "mixed")`` again, with long double
    forward transforms and powers, each end the better, and "mixed" from there on. Where the pulled
    tilt's own share in double is above both, the pulled tilt in "mixed" comes first
    (:data:`_PULLED_MIXED_FIRST`: the smaller window), kept where its share is at most
    e^:data:`_PULL_ERR`. A choice of computation only."""
    if _PULLED_MIXED_FIRST and precision == "double" and t_pulled < t:
        first = upper(t_pulled, precision)
        if first[1] > _PULL_ERR and first[1] > _MIXED_SHARE:
            # the pulled window is the smaller one: its round-off, which the pull raised against the
            # masses at the threshold, first in "mixed" there; the saddle point's only if still large
            got = min(first, upper(t_pulled, "mixed"))  # (each upper end certified: the smaller)
            if not got[1] > _PULL_ERR:
                return got[0], t_pulled, "mixed", got[1]
            log_up, share = min(got, upper(t, precision))
        else:
            done = {t_pulled: first}
            log_up, t, share = upper_with_pull(
                lambda x: done.pop(x) if x in done else upper(x, precision), t, t_pulled)
    else:
        log_up, t, share = upper_with_pull(lambda x: upper(x, precision), t, t_pulled)
    if precision != "double" or not share > _MIXED_SHARE:
        return log_up, t, precision, share
    log_up, share = min((log_up, share), upper(t, "mixed"))
    return log_up, t, "mixed", share


def upper_with_pull(upper: Callable[[float], tuple[float, float]], t: float,
                    t_pulled: float) -> tuple[float, float, float]:
    """(log upper end, the tilt it was computed at, its error term's log share): ``upper(t_pulled)``
    (:func:`tilted_upper_share`'s pair: the upper end and that share), unless t_pulled < t and the
    share exceeds e^:data:`_PULL_ERR`, where the pulled tilt's error terms are too near its upper
    end: then ``upper(t)``, the saddle point's. A choice of computation only."""
    log_up, share = upper(t_pulled)
    if t_pulled < t and share > _PULL_ERR:
        log_up, share = upper(t)
        return log_up, t, share
    return log_up, t_pulled, share


def _upper_at(parts: Sequence[tuple[int, np.ndarray, int]], h: float, t: float, inf_mass: float, log_alpha: float,
              precision: str, log_masses: bool, lowered: list[float] | None = None) -> tuple[float, float]:
    """(:func:`tilted_upper` of the parts composed under the tilt t, the log share of its error term
    in the minimum it takes). Where the window's tail allowance (3 tau) alone is more than
    e^:data:`_TAU_SHARE` of that minimum, the parts are composed again with tau lowered by the
    excess (and e^:data:`_TAU_MARGIN` more), down to e^:data:`_LOG_TAU_MIN`, at most
    :data:`_TAU_RETRIES` times and while the wider window fits; the smaller upper end is kept (each
    is certified). Each lowered tau composed is appended to ``lowered`` (if given), and a later call
    with the same list starts e^:data:`_TAU_MARGIN` below the lowest of them (the masses at the
    threshold, which set it, are those of the same schedule and level), or at the default where that
    window does not fit (:data:`_REUSE_LOWERED`)."""
    tp, c, rel = _tilted(parts, h, t, log_masses)
    log_mass = functools.cache(lambda: log_total_mass(parts, log_masses))  # (short windows only; once)
    log_tau, best = _LOG_TAU, (math.inf, -math.inf)
    if _REUSE_LOWERED and lowered:
        log_tau = max(_LOG_TAU_MIN, min(lowered) - _TAU_MARGIN)
    for attempt in range(1 + _TAU_RETRIES):
        try:
            comp, rounding, err = _composed(tp, h, t, c, log_tau, log_alpha, precision, log_mass)
        except WindowTooWide:
            if attempt == 0 and log_tau < _LOG_TAU:
                return _upper_at(parts, h, t, inf_mass, log_alpha, precision, log_masses)
            if attempt == 0:
                raise
            break  # (the lowered tau's window: the upper end already found stands)
        if attempt and lowered is not None:
            lowered.append(log_tau)
        trunc = 3.0 * math.exp(log_tau)
        log_up, share = tilted_upper_share(comp.offset, comp.pmf, h, t, c, err, rel, inf_mass,
                                           log_alpha, log_masses)
        best = min(best, (log_up, share))
        excess = share + math.log(trunc / (rounding + trunc)) - _TAU_SHARE
        if not excess > 0.0 or log_tau <= _LOG_TAU_MIN:
            break
        log_tau = max(_LOG_TAU_MIN, log_tau - excess - _TAU_MARGIN)
    return best


@dataclass(frozen=True)
class TiltedSide:
    """One side of the composed bucket statistic, tilted (:func:`tilted_lower`): the untilted mass
    at label ``offset + j`` (loss l = (offset + j) h) is e^{log_c - s l} pmf[j], s = t for P's side
    and t + 1 for Q's.

    Attributes:
      offset: the label of ``pmf[0]``.
      pmf: the composed tilted masses (computed).
      log_c: the log of the product of the tilting normalisers.
      rel: the relative error of every tilted mass (the tilting's exponents).
      err: a bound, for every label k, on sum_{j >= k} e^{-s (l_j - l_k)} |pmf_j - exact_j| (round-off,
        wrap-around, the tilted mass outside the window): a float, or an array of one bound per
        label of ``pmf``.
    """

    offset: int
    pmf: np.ndarray
    log_c: float
    rel: float
    err: float | np.ndarray


def tilted_lower(p_side: TiltedSide, q_side: TiltedSide, h: float, t: float,
                 log_alpha: float) -> tuple[float, int | None]:
    """(log of a certified lower bound on the power at level exp(log_alpha), the label s of the
    test S >= s that gives it, or None) from the composed bucket statistic's P-masses tilted by t
    and Q-masses tilted by t + 1 (module docstring, lower end).

    Args:
      p_side: the statistic's P-side, tilted by t (:class:`TiltedSide`).
      q_side: its Q-side, tilted by t + 1.
      h: grid step.
      t: the tilt (> 0).
      log_alpha: natural log of the level.
    """
    p_off, p_pmf, cp_, rel_p, err_p = p_side.offset, p_side.pmf, p_side.log_c, p_side.rel, p_side.err
    q_off, q_pmf, cq_, rel_q, err_q = q_side.offset, q_side.pmf, q_side.log_c, q_side.rel, q_side.err
    log_lo, label = log_alpha, None
    lo_lab = max(p_off, q_off)
    hi_lab = min(p_off + p_pmf.size, q_off + q_pmf.size) - 1
    if hi_lab < lo_lab:
        return log_lo, label

    log_err_p, log_err_q = _log_errors(err_p, p_pmf.size), _log_errors(err_q, q_pmf.size)
    big = 4.0 * float(np.finfo(float).eps) * (max(abs(lo_lab), abs(hi_lab)) * (t + 1.0) * h + abs(cp_)
                                              + abs(cq_) + 800.0)
    # the first test S >= s with level <= alpha: the levels decrease in s, so it is looked for
    # between the tilted Q-mass's lower 1e-2 and upper 1 - 1e-6 quantiles first (the Q-sums there
    # are those of the whole window, the masses above the slice bounded as one: _top_log_mass), then
    # from the window's first point if it is the slice's first, to its last if there is none
    k0, k1 = _slice_indices(q_pmf)
    start = max(lo_lab, q_off + k0)
    while True:
        end = min(hi_lab, q_off + k1 - 1)
        s = np.arange(start, end + 1)
        with np.errstate(divide="ignore"):
            lq = np.log(q_pmf[start - q_off: k1]) - (t + 1.0) * np.arange(start, q_off + k1) * h + cq_
        top = _top_log_mass(q_pmf, k1, cq_, t + 1.0, (q_off + k1) * h)
        q_ge = _suffix_with_top(lq, top, +1)[s - start]  # the level: Q-sums up
        q_err = cq_ - (t + 1.0) * s * h + _at(log_err_q, s - q_off)
        q_up = np.logaddexp(q_ge, q_err) + 1.01 * (rel_q + big) + 1e-12
        ok = np.nonzero(q_up <= log_alpha)[0]
        if ok.size and ok[0] == 0 and start > lo_lab:
            start = lo_lab
        elif not ok.size and end < hi_lab:
            k1 = q_pmf.size
        else:
            break
    p_err = cp_ - t * s * h + _at(log_err_p, s - p_off)
    def p_lower(j: int) -> float:
        """log of a proven lower bound on P(S >= s[j]): the P-sum at that one test, rounded
        down (its total alone, pld.logsum.total_logsumexp: no running sums), less its
        error terms; -inf where they swallow it."""
        k = int(s[j]) - p_off
        with np.errstate(divide="ignore"):
            lp = np.log(p_pmf[k:]) - t * (p_off + np.arange(k, p_pmf.size)) * h + cp_
        p_ge, p_ge_err = total_logsumexp(lp)
        p_ge -= p_ge_err
        if not (np.isfinite(p_ge) and p_err[j] < p_ge):
            return -math.inf
        lower = p_ge + math.log1p(-math.exp(min(0.0, float(p_err[j]) - p_ge)))
        return float(lower) - 1.01 * (rel_p + big) - 1e-12

    if ok.size:
        i = int(ok[0])
        lower = p_lower(i)
        if math.isfinite(lower):
            log_lo = max(log_alpha, lower)
        if i > 0:
            log_lo = max(log_lo, randomized_lower(float(q_up[i]), float(q_up[i - 1]), log_alpha,
                                                   lower, lambda: p_lower(i - 1)))
        label = int(s[i])
    return log_lo, label


def _log_errors(err: float | np.ndarray, n: int) -> float | np.ndarray:
    """log of the error bounds of a window of n labels: one bound for all (a float: a float) or one
    per label (an array of n: an array)."""
    if np.ndim(err) == 0:
        return math.log(float(err))
    e = np.asarray(err, dtype=float)
    if e.shape != (n,):
        raise ValueError(f"err must be a float or an array of {n} bounds, got shape {e.shape}")
    return np.log(e)


def _at(log_err: float | np.ndarray, idx: np.ndarray) -> float | np.ndarray:
    """:func:`_log_errors`'s bounds at the window indices ``idx``."""
    return log_err if np.ndim(log_err) == 0 else log_err[idx]


def tilted_upper(off: int, pmf: np.ndarray, h: float, t: float, c: float, err: float | np.ndarray,
                 rel: float, inf_mass: float, log_alpha: float, log_inf_mass: bool = False) -> float:
    """log of a certified upper bound on the power at level exp(log_alpha) from a composed tilted
    dominating pmf (module docstring, upper end): untilted masses e^{C - t l} pmf[j] at l = (off + j) h.

    Args:
      off: the label of ``pmf[0]``.
      pmf: the composed tilted masses (computed).
      h: grid step.
      t: the tilt (> 0).
      c: C = log of the product of the tilting normalisers.
      err: a bound, for every label k, on sum_{j >= k} e^{-t (l_j - l_k)} |pmf_j - exact_j| (round-off,
        wrap-around and the tilted mass outside the window, e.g. 3 tau): one float, or an array of
        one bound per label of ``pmf`` (errors that sit below a label do not count above it).
      rel: the relative error of every tilted mass (the tilting's exponents).
      inf_mass: the composed mass at +infinity (its natural log with ``log_inf_mass``: steps continued
        beyond double range, :mod:`rerokit.bounds.pld.logtail`).
      log_alpha: natural log of the level.
      log_inf_mass: whether ``inf_mass`` is given as a log.
    """
    return tilted_upper_share(off, pmf, h, t, c, err, rel, inf_mass, log_alpha, log_inf_mass)[0]


def tilted_upper_share(off: int, pmf: np.ndarray, h: float, t: float, c: float, err: float | np.ndarray,
                       rel: float, inf_mass: float, log_alpha: float, log_inf_mass: bool = False) -> tuple[float, float]:
    """(:func:`tilted_upper`, the log share of the error term in the minimum: its term at the
    minimising k less log f there; -inf where it is nothing)."""
    # f(s) = s alpha + p_inf + P(L > l_k) - s Q(L > l_k) at s = e^{l_k}: an upper end needs the
    # P-sums rounded up and the Q-sums rounded down. Every k gives an upper end; they are formed
    # for the k from the tilted mass's lower 1e-2 quantile up only (the minimum sat at its 0.3-0.55
    # quantile in every case measured), all k if the minimum is at that slice's first point:
    # f plus the error term (a multiple of s^-t) is convex in s, so an interior minimum of the
    # slice is the minimum over every k (up to the rounding of the sums). The suffix sums of a
    # top slice are the same sums, in the same order, as those of the whole window there.
    err_c = _log_errors(err, pmf.size)
    if log_inf_mass:
        log_inf = float(inf_mass)
    else:
        log_inf = math.log(inf_mass) if inf_mass > 0 else -np.inf
    # (and, as :func:`tilted_lower`, below the upper 1 - 1e-6 quantile first: the masses above it
    # enter the P-sums as one upper bound, _top_log_mass, and leave the Q-sums, which only lowers
    # them; every k still gives an upper end, and the minimum is looked for over all k up to the
    # window's top where it sits at the slice's last point)
    k0, k1 = _slice_indices(pmf)
    while True:
        ls_, term, err_term = _hockey_terms(off, pmf, h, t, c, err_c, k0, k1)
        log_f = _logsumexp4(log_alpha + ls_, term, err_term, log_inf)
        i = int(np.argmin(log_f))
        if i == 0 and k0 > 0:
            k0 = 0
        elif i == log_f.size - 1 and k1 < pmf.size:
            k1 = pmf.size
        else:
            break
    rel = _untilting_rel(off, pmf.size, h, t, c, rel)
    log_up = min(0.0, float(np.min(log_f)) + 1.01 * rel + 1e-12)
    share = float(c - t * ls_[i] + _at(err_c, k0 + i) - log_f[i]) if np.isfinite(log_f[i]) else -math.inf
    return log_up, share


def _hockey_terms(off: int, pmf: np.ndarray, h: float, t: float, c: float, err_c: float | np.ndarray, k0: int,
                  k1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the labels k0 <= k < k1 of a composed tilted dominating pmf (untilted masses e^{C - t l}
    pmf[j]): (l_k, log of P(L > l_k) - e^{l_k} Q(L > l_k) with the P-sums rounded up, the Q-sums
    down and the masses above k1 as one upper bound (:func:`_top_log_mass`), log of the error term
    e^{C - t l_k} err_k). With the mass at +infinity their sum bounds E_P[(1 - e^{l_k - L})_+]."""
    ls_, lk_, log_a = _p_tails(off, pmf, h, t, c, k0, k1)
    log_b = _suffix_logsumexp(lk_ - ls_, -1)[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.exp(np.minimum(0.0, ls_ + log_b - log_a))
        term = log_a + np.log1p(-frac)
    term = np.where(np.isfinite(log_a), term, -np.inf)
    return ls_, term, c - t * ls_ + _at(err_c, slice(k0, k1))


def _p_tails(off: int, pmf: np.ndarray, h: float, t: float, c: float, k0: int,
             k1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the labels k0 <= k < k1 of a composed tilted pmf (untilted masses e^{C - t l} pmf[j]):
    (l_k, the log untilted masses, log of their sum above l_k rounded up, the masses above k1 as
    one upper bound, :func:`_top_log_mass`)."""
    ls_, lk_ = _untilted_logs(off, pmf, h, t, c, k0, k1)
    return ls_, lk_, _suffix_with_top(lk_, _top_log_mass(pmf, k1, c, t, (off + k1) * h), +1)[1:]


def _untilted_logs(off: int, pmf: np.ndarray, h: float, t: float, c: float, k0: int,
                   k1: int) -> tuple[np.ndarray, np.ndarray]:
    """(l_k, log of the untilted mass e^{C - t l_k} pmf[k]) for the labels k0 <= k < k1 of a composed
    tilted pmf whose first label is ``off``."""
    ls_ = (off + np.arange(k0, k1)) * h
    with np.errstate(divide="ignore"):
        return ls_, np.log(pmf[k0:k1]) - t * ls_ + c


def _untilting_rel(off: int, size: int, h: float, t: float, c: float, rel: float) -> float:
    """The tilting's relative error ``rel`` plus the untilting's own rounding, u (|log p_t| + |t l| + |C|)
    per mass, over a window of ``size`` labels from ``off``."""
    l_ends = t * (np.array([off, off + size - 1]) * h)
    return rel + 4.0 * float(np.finfo(float).eps) * (float(np.max(np.abs(l_ends))) + abs(c) + 800.0)


def _tilted_composed(parts: Parts, h: float, s: float, log_tau: float, log_alpha: float, precision: str,
                     max_points: int) -> tuple[Composed, float, float, float | np.ndarray]:
    """(the composition of ``parts`` tilted by s on :func:`_window`, C, the tilting's relative error,
    :func:`_composed`'s error bound per label): what the per-label bounds below start from."""
    tp, c, rel = _tilted(parts, h, s)
    comp, _, err = _composed(tp, h, s, c, log_tau, log_alpha, precision, functools.cache(lambda: log_total_mass(parts)),
                             max_points)
    return comp, c, rel, err


def tilted_hockey_sticks(parts: Parts, h: float, t: float, inf_mass: float, log_alpha: float,
                         precision: str = "double", max_points: int = MAX_FFT) -> tuple[int, np.ndarray]:
    """(the first label, per label k of the window) log of a certified upper bound on
    F(l_k) = E_P[(1 - e^{l_k - L})_+] (the mass at +infinity included) of the composition of the
    dominating ``parts`` tilted by t > 0 (:func:`tilted_upper_share`'s terms without the level's,
    at every label of the tilted window, in relative precision near the tilted mean Psi'(t)).
    ``log_alpha``: the level the caller reads them at (the short window's choice, :func:`_window`).

    Raises:
      WindowTooWide: the tilted window has more than ``max_points`` labels (at most the FFT limit).
    """
    comp, c, rel, err = _tilted_composed(parts, h, t, _LOG_TAU, log_alpha, precision, max_points)
    n = comp.pmf.size
    _, term, err_term = _hockey_terms(comp.offset, comp.pmf, h, t, c, _log_errors(err, n), 0, n)
    log_inf = math.log(inf_mass) if inf_mass > 0 else -math.inf
    log_f = _logsumexp4(np.full(n, -np.inf), term, err_term, log_inf)
    rel = _untilting_rel(comp.offset, n, h, t, c, rel)
    return comp.offset, np.minimum(0.0, log_f + 1.01 * rel + 1e-12)


def tilted_tails(parts: Parts, h: float, t: float, inf_mass: float, log_alpha: float,
                 precision: str = "double", max_points: int = MAX_FFT) -> tuple[int, np.ndarray]:
    """(the first label, per label k of the window) log of a certified upper bound on P(L > l_k)
    (the mass at +infinity included) of the composition of ``parts`` tilted by t > 0: the untilted
    masses above l_k, e^{C - t l_j} pmf[j] summed upwards and rounded up, plus e^{C - t l_k} err_k
    (:func:`_composed`'s bound on sum_{j >= k} e^{-t (l_j - l_k)} |pmf_j - exact_j|, which holds
    the tilted mass outside the window), in relative precision near the tilted mean Psi'(t).
    ``log_alpha``: the level the caller reads them at (the short window's choice, :func:`_window`).

    Raises:
      WindowTooWide: the tilted window has more than ``max_points`` labels (at most the FFT limit).
    """
    comp, c, rel, err = _tilted_composed(parts, h, t, _LOG_TAU, log_alpha, precision, max_points)
    n = comp.pmf.size
    ls_, _, log_a = _p_tails(comp.offset, comp.pmf, h, t, c, 0, n)
    err_term = c - t * ls_ + _at(_log_errors(err, n), slice(0, n))
    log_inf = math.log(inf_mass) if inf_mass > 0 else -math.inf
    log_u = _logsumexp4(np.full(n, -np.inf), log_a, err_term, log_inf)
    return comp.offset, log_u + 1.01 * _untilting_rel(comp.offset, n, h, t, c, rel) + 1e-12


def tilted_side_tails(parts: Parts, h: float, s: float, side: int, log_alpha: float, precision: str = "double",
                      max_points: int = MAX_FFT) -> tuple[int, np.ndarray]:
    """(the first label, per label k of the window) log of a certified lower (``side`` -1) or upper
    (+1) bound on the mass at labels >= k of the composition of ``parts`` (one side of the bucket
    statistic: its P-masses tilted by s = t, or its Q-masses by s = t + 1, as :func:`tilted_power`
    composes them): the untilted masses e^{C - s l_j} pmf[j] summed from k upwards, rounded down or
    up (:func:`_suffix_logsumexp`), less or plus e^{C - s l_k} err_k (:func:`_composed`'s bound,
    which holds the tilted mass outside the window), and the untilting's relative error
    (:func:`_untilting_rel`). A lower bound is -inf where the error swallows the sum.

    Raises:
      WindowTooWide: the tilted window has more than ``max_points`` labels (at most the FFT limit).
    """
    comp, c, rel, err = _tilted_composed(parts, h, s, _LOG_TAU_STAT, log_alpha, precision, max_points)
    n = comp.pmf.size
    ls_, lk_ = _untilted_logs(comp.offset, comp.pmf, h, s, c, 0, n)
    err_term = c - s * ls_ + _at(_log_errors(err, n), slice(0, n))
    rel = 1.01 * _untilting_rel(comp.offset, n, h, s, c, rel) + 1e-12
    suf = _suffix_logsumexp(lk_, side)[:n]
    if side > 0:
        return comp.offset, np.logaddexp(suf, err_term) + rel
    with np.errstate(divide="ignore", invalid="ignore"):
        low = suf + np.log1p(-np.exp(np.minimum(0.0, err_term - suf)))
    return comp.offset, np.where(np.isfinite(suf) & (err_term < suf), low - rel, -np.inf)


def randomized_lower(q_hi: float, q_lo: float, log_alpha: float, p_hi: float, p_lo_of) -> float:
    """log of a proven lower bound on the power of the randomized test between two adjacent
    thresholds (Neyman & Pearson 1933: the most powerful tests randomize at the boundary): reject
    if S >= s, and with probability theta if S = s - 1, at the largest theta that keeps its level
    (1 - theta) Q(S >= s) + theta Q(S >= s - 1) within alpha by the upper bounds
    e^{q_hi} <= alpha < e^{q_lo} of those levels; its power (1 - theta) P(S >= s) + theta
    P(S >= s - 1) is then at least the same mixture of the lower bounds e^{p_hi} and e^{p_lo}
    (``p_lo_of()``, computed only when theta > 0). Every quantity is taken relative to alpha (logs
    down to -1e300 are fine); the level is checked with 1e-12 plus a few u of the logs to spare,
    the power rounded down by as much. -inf where no theta > 0 is certain (e.g. a tiny gap)."""
    u = float(np.finfo(float).eps)
    a_rel, b_rel = q_hi - log_alpha, q_lo - log_alpha  # <= 0 < b_rel
    if not (math.isfinite(p_hi) and b_rel > 0.0) or b_rel > 700.0:
        return -math.inf
    slack = 1e-12 + 4.0 * u * (abs(q_hi) + abs(q_lo) + abs(log_alpha))
    A, B = math.exp(a_rel), math.exp(b_rel)
    theta = min((1.0 - slack - A) / (B - A), 1.0) * (1.0 - 1e-9)
    if not theta > 0.0 or (A * (1.0 - theta) + theta * B) * (1.0 + slack) > 1.0:
        return -math.inf
    p_lo = p_lo_of()
    if not math.isfinite(p_lo):
        return -math.inf
    mix = float(np.logaddexp(math.log1p(-theta) + p_hi, math.log(theta) + p_lo))
    return mix - 1e-12 - 8.0 * u * (abs(p_hi) + abs(p_lo) + 1.0)


def _untilted_power(stat_p: Sequence[tuple[int, np.ndarray, int]], h: float, label: int) -> float:
    """log of a certified lower bound on P(S >= label) from the untilted composition of the
    statistic (extended precision): the in-window mass at labels >= label minus the proven
    round-off (mass outside the window is dropped, which only lowers it)."""
    c = compose(stat_p, h, math.log(1e-17), precision="extended")
    k = min(max(label - c.offset, 0), c.pmf.size)
    tail = c.pmf[k:].astype(np.longdouble)
    # the sum's rounding (recursive-summation bound, n u in long double) and the conversion to double
    u_ld = float(np.finfo(np.longdouble).eps)
    mass = float(np.sum(tail)) * (1.0 - (tail.size + 2) * u_ld) * (1.0 - 2.3e-16) - c.roundoff
    return math.log(mass) if mass > 0 else -math.inf
