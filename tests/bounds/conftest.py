"""An independent reference for the Neyman-Pearson power of DP-SGD (numpy/scipy only, no rerokit
code), shared by the tests as the ``bromwich`` fixture and by ``benchmarks/pld_soundness.py``.

A schedule of segments (sigma_i, q_i, T_i), Poisson sampling, remove adjacency: the log-likelihood
ratio is S = sum_i sum_{t <= T_i} f_i(x_t), f(x) = log(1 - q + q e^{(2x - 1)/(2 sigma^2)}), a sum of
independent terms under Q = N(0, sigma^2) per step, and P (the mechanism with the target) has
dP/dQ = e^S. For any threshold l, by the inversion formula of the Laplace transform (Bromwich
integral; e.g. Daniels 1954, Sec. 2), with K(z) = sum_i T_i log M_i(z), M(z) = E_Q[e^{z f(x)}]:

    Q(S > l)  = (1/pi) int_0^inf Re[ e^{K(t + iu) - (t+iu) l} / (t + iu) ] du,          t > 0,
    P(S > l)  = (1/pi) int_0^inf Re[ e^{K(t + 1 + iu) - (t+iu) l} / (t + iu) ] du,      t > 0,
    P(S <= l) = -(1/pi) int_0^inf Re[ e^{K(t + 1 + iu) - (t+iu) l} / (t + iu) ] du,     t in (-1, 0)

(the last from 1{S > l} - 1 on a contour left of the pole). S has a density, so the test "S > l"
is the most powerful at its own level a = Q(S > l): gamma(a) = P(S > l) exactly, and 1 - gamma(a) =
P(S <= l) in relative precision. t is the saddle point of each integrand. M is computed by splitting
x at x0 = 3 sigma: the bulk by its power series in z (moments of f, smooth Gaussian integrals, so
M - 1 keeps its relative precision however small q is), the rest by Gauss-Legendre panels.
Measured accuracy at sigma 1, q 1e-4, T 1e6: doubling every quadrature (x panels 400 -> 800, u
panels 40 -> 80) moved log Q(S > l) and log P(S > l) by 2.2e-5 and 2.1e-5; tests compare at 2e-4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable, Sequence

import numpy as np
import pytest
from numpy.polynomial.legendre import leggauss

REF_TOL = 2e-4  # in log (module docstring)


def _gl(a: float, b: float, panels: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    g, w = leggauss(n)
    e = np.linspace(a, b, panels + 1)
    x = np.concatenate([0.5 * (r - l) * g + 0.5 * (r + l) for l, r in zip(e[:-1], e[1:])])
    ww = np.concatenate([0.5 * (r - l) * w for l, r in zip(e[:-1], e[1:])])
    return x, ww


def log_moment_fn(sigma: float, q: float, x0: float = 3.0, nterms: int = 60) -> Callable[[np.ndarray], np.ndarray]:
    """z -> log M(z), M(z) = E_{x ~ N(0, sigma^2)}[e^{z f(x)}] (module docstring), q < 1."""
    from scipy.special import ndtr

    x0 *= sigma
    lphi = lambda x: -0.5 * (x / sigma) ** 2 - math.log(sigma * math.sqrt(2 * math.pi))  # noqa: E731
    f = lambda x: np.logaddexp(math.log1p(-q), math.log(q) + (2 * x - 1) / (2 * sigma * sigma))  # noqa: E731
    xb, wb = _gl(-40 * sigma, x0, 200, 40)
    fb, pb = f(xb), np.exp(lphi(xb)) * wb
    mom = np.array([np.sum(pb * fb**n) for n in range(nterms)])
    m0_minus_1 = -float(ndtr(-x0 / sigma))
    xj, wj = _gl(x0, 60.0 * sigma, 400, 40)
    fj, lpj = f(xj), lphi(xj) + np.log(wj)

    with np.errstate(divide="ignore"):  # weights that underflowed at -40 sigma: log 0 = -inf, e^-inf = 0
        lpb = np.log(pb)
    f_max = float(np.max(np.abs(fb)))

    def log_m(z):
        z = np.atleast_1d(np.asarray(z, complex))
        out = np.empty(z.shape, complex)
        for i in range(0, z.size, 32):
            zz = z[i : i + 32]
            if float(np.max(np.abs(zz))) * f_max <= 1.0:  # M - 1 small: its series keeps relative precision
                bulk = np.full(zz.shape, m0_minus_1, complex)
                zn = np.ones(zz.shape, complex)
                for n in range(1, nterms):
                    zn = zn * zz / n
                    bulk += zn * mom[n]
                jump = np.sum(np.exp(lpj[None, :] + zz[:, None] * fj[None, :]), axis=1)
                out[i : i + 32] = np.log1p(bulk + jump)
            else:  # direct quadrature, log-sum-exp'd (no overflow at large Re z)
                a = np.concatenate([lpb[None, :] + zz[:, None] * fb[None, :], lpj[None, :] + zz[:, None] * fj[None, :]], axis=1)
                m = np.max(a.real, axis=1, keepdims=True)
                out[i : i + 32] = m[:, 0] + np.log(np.sum(np.exp(a - m), axis=1))
        return out

    return log_m


@dataclass(frozen=True)
class NPPoint:
    """One point of the exact trade-off curve: the test S > l at its own level (all in log)."""

    threshold: float  # l
    log_level: float  # log Q(S > l) = log kappa
    log_power: float  # log P(S > l) = log gamma(kappa)
    log_miss: float  # log P(S <= l) = log (1 - gamma(kappa))


class Schedule:
    """K(z) = sum_i T_i log M_i(z) of a list of (sigma, q, T) segments, q < 1."""

    def __init__(self, segments: Sequence[tuple[float, float, int]]):
        if any(not 0 < q < 1 for _, q, _ in segments):
            raise ValueError("the reference covers 0 < q < 1")
        self.parts = [(log_moment_fn(s, q), T) for s, q, T in segments]
        # the quadrature stops at x = 60 sigma; e^{z f(x)} phi(x) peaks at x = Re z: keep it inside
        self.t_max = 40.0 * min(s for s, _, _ in segments) - 1.0

    def K(self, z) -> np.ndarray:
        return sum(T * lm(z) for lm, T in self.parts)

    def slope(self, t: float) -> float:
        return float((self.K(t + 1e-5) - self.K(t - 1e-5)).real[0]) / 2e-5

    def _solve(self, target: Callable[[float], float], lo: float, hi: float) -> float:
        """Bisection for the root of an increasing function on [lo, hi]; ValueError if there is none."""
        if not (target(lo) <= 0 <= target(hi)):
            raise ValueError("the saddle point is outside the reference's range")
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if target(mid) < 0 else (lo, mid)
        return 0.5 * (lo + hi)

    def _integral(self, shift: float, t: float, l: float) -> float:
        """log |(1/pi) int_0^inf Re[e^{K(z + shift) - z l} / z] du|, z = t + iu, on Gauss-Legendre
        panels of about two oscillations of e^{-iul} each; computed again on twice the panels, and
        ValueError where the two differ by more than 2e-5 in log (not converged)."""
        u_max = 1.0
        while float((self.K(t + shift + 1j * u_max) - self.K(t + shift)).real[0]) > -80.0:
            u_max *= 1.3
        panels = max(40, math.ceil(u_max * abs(l) / (4 * math.pi)))
        if panels > 200:  # the reference's cost grows with the panels: leave such settings out
            raise ValueError("the integrand oscillates too much for the reference")
        base = float(self.K(t + shift).real[0]) - t * l
        vals = []
        for m in (panels, 2 * panels):
            us, wu = _gl(0.0, u_max, m, 50)
            z = t + 1j * us
            v = np.exp(self.K(z + shift) - z * l - base) / z
            vals.append(base + math.log(abs(float(np.sum(wu * v.real))) / math.pi))
        if not abs(vals[0] - vals[1]) <= 2e-5:
            raise ValueError(f"the reference did not converge ({vals[0]:.6g} vs {vals[1]:.6g} on twice the panels)")
        return vals[1]

    def point(self, l: float) -> NPPoint:
        """Level, power and miss probability of the test S > l, each at its own saddle point."""
        t_q = self._solve(lambda t: self.slope(t) - l, 1e-6, self.t_max)  # K'(t) = l, t > 0
        t_p = t_q - 1.0  # the same saddle point for P's integrand (shift 1)
        lq = self._integral(0.0, t_q, l)
        if t_p > 0:  # the threshold is in P's upper tail: P(S <= l) is ~1
            lp = self._integral(1.0, t_p, l)
            return NPPoint(l, lq, lp, math.log(-math.expm1(lp)) if lp < 0 else -math.inf)
        t_m = min(t_p, -1e-3)  # P's lower tail (or its bulk): contour left of the pole
        lm = self._integral(1.0, t_m, l)
        return NPPoint(l, lq, math.log1p(-math.exp(lm)), lm)

    def at_level(self, log_kappa: float) -> NPPoint:
        """The test at level ~kappa: l from the Chernoff exponent K(t) - t K'(t) = log kappa (the
        exact level, read off the returned point, differs by the saddle-point prefactor)."""
        t = self._solve(lambda t: log_kappa - (float(self.K(t).real[0]) - t * self.slope(t)), 1e-6, self.t_max)
        return self.point(self.slope(t))


@pytest.fixture
def bromwich() -> SimpleNamespace:
    """The module's reference: ``bromwich.Schedule(segments).point(l)`` / ``.at_level(log_kappa)``."""
    return SimpleNamespace(Schedule=Schedule, NPPoint=NPPoint, REF_TOL=REF_TOL, log_moment_fn=log_moment_fn)
