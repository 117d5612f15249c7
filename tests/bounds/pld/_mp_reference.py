"""Exact (mpmath) references, no rerokit code: for one DP-SGD step's discretisation (test_pld_engine,
test_step_split) the pair's mixture components, the cell masses between computed points, their
suffix sums and the exact connect-the-dots split (Doroshenko et al. 2022) of those cells onto grid
points widened by the loss error, the caller setting mpmath's precision; and the Neyman-Pearson
power of two steps (test_jumps, test_tilt_fastpaths)."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import mpmath as mp

Components = Sequence[tuple]  # (weight, mean) pairs of a Gaussian mixture with a common sigma


def mp_pair(sigma: float, q: float, k: int, direction: str) -> tuple[list, list, Callable]:
    """The mixture components (weight, mean) of P and Q and the loss L(x) = log dP/dQ (x) of one
    step (remove / add / replace, group size k)."""
    s, qq = mp.mpf(sigma), mp.mpf(q)
    w = [mp.binomial(k, j) * qq ** j * (1 - qq) ** (k - j) for j in range(k + 1)]
    mix = [(w[j], j) for j in range(k + 1) if w[j] > 0]

    def lr(x):
        return mp.log(mp.fsum(wj * mp.exp((2 * j * x - j * j) / (2 * s * s)) for wj, j in mix))

    if direction == "remove":
        return mix, [(1, 0)], lr
    if direction == "add":
        return [(1, 0)], mix, lambda x: -lr(x)
    return [(1 - qq, 0), (qq, 1)], [(1 - qq, 0), (qq, -1)], lambda x: lr(x) - lr(-x)


def mp_cdf(comps: Components, x: float, sigma: float) -> mp.mpf:
    """P(X <= x) for the mixture sum_c w_c N(m_c, sigma^2) at the float x (0 at -inf)."""
    if x == -math.inf:
        return mp.mpf(0)
    s = mp.mpf(sigma)
    return mp.fsum(w * mp.erfc((m - mp.mpf(float(x))) / s / mp.sqrt(2)) / 2 for w, m in comps)


def mp_cells(comps: Components, xs: Sequence[float], sigma: float, decreasing: bool = False) -> list:
    """[P(L <= l_0), P(l_j < L <= l_{j+1}) ..., P(L > l_n)] from the cells of the computed points
    x_j of the losses l_j; ``decreasing``: L decreasing in x (add), L > l <=> X < x."""
    c = [mp_cdf(comps, v, sigma) for v in xs]
    le = [1 - v for v in c] if decreasing else c  # (continuous: P(X < x) = P(X <= x))
    return [le[0]] + [le[j + 1] - le[j] for j in range(len(le) - 1)] + [1 - le[-1]]


def mp_suffixes(masses: Sequence) -> list:
    """The suffix sums sum_{i >= j} masses[i], exactly (mpmath)."""
    out, acc = [], mp.mpf(0)
    for v in reversed(masses):
        acc += v
        out.append(acc)
    return out[::-1]


def mp_exact_split(ep: Sequence, eq: Sequence, l: Sequence[float], h: float,
                   loss_point_ulps: float) -> tuple[list, list]:
    """The exact connect-the-dots split of the cells ``ep``/``eq`` (as :func:`mp_cells` returns
    them) onto the grid points l_j, each bucket's atoms widened by its loss error eta_j =
    loss_point_ulps u (1 + max(|l_j|, |l_{j+1}|)); bottom tail on the lowest atom, the top tail
    (last entry) at +infinity. Returns (split with the top tail appended, the eta_j)."""
    hh = mp.mpf(h)
    split = [mp.mpf(0)] * (len(ep) - 1)
    split[0] += ep[0]
    etas = []
    for j in range(len(ep) - 2):
        eta = mp.mpf(loss_point_ulps * 2.0 ** -53 * (1.0 + max(abs(float(l[j])), abs(float(l[j + 1])))))
        etas.append(eta)
        pb, qb = ep[j + 1], eq[j + 1]
        c = (pb - mp.exp(mp.mpf(float(l[j])) - eta) * qb) / (1 - mp.exp(-hh - 2 * eta))
        c = min(max(c, mp.mpf(0)), pb)
        split[j] += pb - c
        split[j + 1] += c
    return split + [ep[-1]], etas


def mp_two_steps(q: float, l: float, sigma: float = 1.0) -> tuple[float, float]:
    """(log Q(S > l), log P(S > l)) for two steps of noise multiplier sigma, sampling rate q
    (mpmath, 30 digits): in standard units z = x / sigma one step's loss is
    log(1 - q + q e^{m z - m^2 / 2}), m = 1 / sigma, z ~ N(0, 1) under Q and (1 - q) N(0, 1) + q N(m, 1)
    under P."""
    with mp.workdps(30):
        q_, l_, m = mp.mpf(q), mp.mpf(l), 1 / mp.mpf(sigma)

        def f(x):
            return mp.log(1 - q_ + q_ * mp.exp(m * x - m * m / 2))

        def f_inv(y):  # the x with f(x) = y; -inf below the loss's infimum log(1 - q)
            return (m * m / 2 + mp.log((mp.exp(y) - 1 + q_) / q_)) / m if y > mp.log(1 - q_) else -mp.inf

        def sf_q(a):
            return mp.mpf(1) if a == -mp.inf else mp.ncdf(-a)

        def sf_p(a):
            return mp.mpf(1) if a == -mp.inf else (1 - q_) * mp.ncdf(-a) + q_ * mp.ncdf(m - a)

        kink = f_inv(l_ - mp.log(1 - q_))  # beyond it the second step passes the test whatever it is
        pts = sorted({-mp.inf, mp.mpf(-5), mp.mpf(0), kink, kink + 3, mp.mpf(30) * max(1, m), mp.inf})
        q_tail = mp.quad(lambda x: mp.npdf(x) * sf_q(f_inv(l_ - f(x))), pts)
        p_tail = mp.quad(lambda x: ((1 - q_) * mp.npdf(x) + q_ * mp.npdf(x - m)) * sf_p(f_inv(l_ - f(x))), pts)
        return float(mp.log(q_tail)), float(mp.log(p_tail))
