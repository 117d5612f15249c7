"""Running log-sum-exp with a proven bound on its rounding, for the engine's tail sums in log space.

``np.logaddexp.accumulate`` forms s_j = logaddexp(s_{j-1}, a_j). numpy evaluates
logaddexp(x, y) for x >= y as x + log1p(exp(-(x - y))) (npy_math's ``npy_logaddexp``). With
u = 2^-53, the subtraction rounded (relative u; the derivative of log1p(e^-d) in d is at most
0.279 in size), libm's exp and log1p within 2 ulps each (the package's assumption on libm, measured in
tests/bounds/pld/test_logsum.py) and the final addition rounded (u |s_j|), one step errs by at most

    eps_j <= u (|s_j| + 0.28 + 1 + 2 log 2) <= u (|s_j| + 3)

to first order; logaddexp is 1-Lipschitz in each argument, so the errors add up along the sum
(Higham 2002, Sec. 3.1 for this propagation argument), and |s_hat_j - s_j| <= sum_{i <= j} eps_i;
with the derivative's actual size, e^{s_{j-1} - s_j}, the tighter e^{-s_j} sum_{i <= j} eps_i e^{s_i}
(used where it is below 1e-3, so that its first-order form holds with the slack carried).
The bound carries 2 u (|s_j| + 3) per step, twice the first-order value, which covers the
second-order terms and evaluating |s_j| at the computed value. A step whose new term is -inf (or
whose sum so far is -inf) is exact.

Faster, where every finite term lies in [-700, 690] (the engine's PLDs, a = log p - l, almost
always): the sums in linear space, t_j = exp(a_j) by numpy's vectorised exp (assumed within 4 ulps,
twice the libm assumption, as numpy may dispatch to SIMD code; measured <= 0.7 ulp in the tests:
relative 8u, the results normal), summed in long double (recursive summation of non-negative terms
errs by at most gamma_j = j u_ld / (1 - j u_ld) relative; Higham 2002, Sec. 4.2), rounded to double
(u; no overflow below 1e8 terms: e^690 1e8 < 1.8e308) and logged by numpy's log (4 ulps of the
result assumed: 8u |s_j|). So |s_hat_j - s_j| <= -log(1 - theta_j) + 8u |s_j| with
theta_j = (1 + 8u)(1 + gamma_j)(1 + u) - 1, carried as 1.01 (9u + j u_ld + 8u |s_hat_j|): far
tighter than the running log-sum's cumulative bound, and several times faster (one exp and one log
per term, no accumulate of logaddexp). Up to the second finite term a sum is that one term, exact.

``summation="double"`` (the far-tail tilt's suffix sums, :mod:`rerokit.bounds.pld.tilt`, whose
terms grow geometrically from the top): the exps summed recursively in double, about 3x faster than
the long double sum. Each addition's rounding is at most u times its computed result, so the
partial sum c_j errs by at most u/(1-u) sum_{i <= j} c_i (Higham 2002, Sec. 4.2, the bound before
(4.4)), carried as the relative r_j = u (1 + 1e-7) C_j / c_j with C_j the computed running sum of
the c_i (within gamma_j < 1.2e-8 relative below 1e8 terms; the factor covers it, 1/(1-u) and
the division): r_j <= j u always, and far less where the terms grow (about u / (1 - e^{-g}) for a
growth rate g per term). The bound is then 1.01 (9u + r_j + 8u |s_hat_j|).

Blocked, where the terms span more than that range but every block of :data:`_BLOCK` consecutive
terms spans at most 700 (the far-tail tilt's sums over millions of points, whose terms change by a
few nats per block): block b's terms shifted by its largest one m_b, summed in linear space as
above (so the local log-sums l_j = log sum_{block, i <= j} e^{a_i - m_b} carry that bound, with
one more rounding u |m_b + l_j| for adding m_b), and joined to the log-sum S_b of the blocks
before it by s_j = logaddexp(S_b, m_b + l_j). S_b is the running log-sum of the block totals
(this function on nb entries, with its bound) whose inputs err by at most the largest local bound
so far; logaddexp is 1-Lipschitz in the max norm of its arguments, so the input errors add as
err(S_b) + err(l_j) at most, and its own evaluation costs 2 u (|s_j| + 3) as for one running step.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["prefix_logsumexp", "suffix_logsumexp", "total_logsumexp"]

_U = float(np.finfo(float).eps) / 2.0  # unit round-off of double
_U_LD = float(np.finfo(np.longdouble).eps) / 2.0  # unit round-off of numpy's long double
_LINEAR_RANGE = (-700.0, 690.0)  # finite terms in this range: the linear-space sums (module docstring)
_LINEAR_MAX_TERMS = 10**8
_BLOCK = 4096  # terms per block of the blocked linear sums (module docstring)


def _prefix_linear(a: np.ndarray, summation: str = "extended") -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`prefix_logsumexp` in linear space (module docstring), or None where a finite term lies
    outside :data:`_LINEAR_RANGE` (or there are too many terms)."""
    if a.size > _LINEAR_MAX_TERMS:
        return None
    fin = np.isfinite(a)
    first = np.flatnonzero(fin)[:2]
    if not first.size:
        return None
    # no NaN or +inf (the callers' contract), so the largest term is the largest finite one
    if float(np.min(a, where=fin, initial=np.inf)) < _LINEAR_RANGE[0] or float(np.max(a)) > _LINEAR_RANGE[1]:
        return None
    t = np.exp(a)  # -inf -> 0 exactly
    if summation == "double":
        c = np.cumsum(t)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.log(c)
            rel = np.cumsum(c)
            rel /= c
            rel *= _U * (1.0 + 1e-7)  # NaN (0/0) before the first finite term: zeroed below
            err = np.abs(s)
            err *= 8.0 * _U
            err += rel
            err += 9.0 * _U
            err *= 1.01
    else:
        with np.errstate(divide="ignore"):
            s = np.log(np.cumsum(t.astype(np.longdouble)).astype(float))
        # s is -inf exactly before the first finite term, which lies in the exact part zeroed below
        with np.errstate(invalid="ignore"):
            err = np.abs(s)
            err *= 8.0 * _U
            err += np.arange(1, a.size + 1, dtype=float) * _U_LD + 9.0 * _U
            err *= 1.01
    # up to the second finite term the sum is one term: exact (as in the running log-sum)
    stop = int(first[1]) if first.size > 1 else a.size
    s[: stop] = np.where(np.arange(stop) < first[0], -np.inf, a[first[0]])
    err[: stop] = 0.0
    return s, err


def _prefix_blocked(a: np.ndarray, summation: str) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`prefix_logsumexp` by blocks of :data:`_BLOCK` terms, each summed in linear space
    relative to its largest term (module docstring), or None where a block's finite terms span more
    than 700 (or there are too many terms). The bound is one number per block (its largest)."""
    n = a.size
    if n > _LINEAR_MAX_TERMS or n < 2 * _BLOCK:
        return None
    nb = -(-n // _BLOCK)
    pad = np.full(nb * _BLOCK, -np.inf)
    pad[:n] = a
    blocks = pad.reshape(nb, _BLOCK)
    m = np.max(blocks, axis=1)
    m = np.where(np.isfinite(m), m, 0.0)  # blocks without a finite term (no +inf or NaN: the contract)
    z = blocks - m[:, None]  # -inf stays -inf; rounded by at most u |z| <= 700 u
    if float(np.min(np.where(z == -np.inf, 0.0, z))) < _LINEAR_RANGE[0]:
        return None
    t = np.exp(z)  # in [e^-700, 1] (8u relative) or exactly 0
    with np.errstate(divide="ignore"):
        if summation == "double":  # recursive: partial sum j errs by <= u/(1-u) sum_{i<=j} c_i <= j u c_j
            local = np.log(np.cumsum(t, axis=1))
            rel = _BLOCK * _U * (1.0 + 1e-7)
        else:  # long double: gamma_j <= j u_ld (1 + 1e-9), then rounded to double
            local = np.log(np.cumsum(t.astype(np.longdouble), axis=1).astype(float))
            rel = _BLOCK * _U_LD * (1.0 + 1e-9) + _U
    val = local  # the local log-sums l_j in [-700, log _BLOCK] (or -inf), then m_b + l_j
    val += m[:, None]
    # per block: exp (8u), the shift (700 u), the sum (rel), log (8u |l_j| <= 8u 701), adding m_b
    err_l = 1.01 * (9.0 * _U + 701.0 * _U + rel + 8.0 * 701.0 * _U + _U * (np.abs(m) + 701.0))
    # the blocks before each block: the running log-sum of the block totals, its inputs' errors
    # bounded by the largest local bound so far (1-Lipschitz in the max norm)
    ends = val[:, -1].copy()
    tot, tot_err = prefix_logsumexp(ends, summation)
    tot_err = tot_err + np.maximum.accumulate(err_l)
    before = np.concatenate(([-np.inf], tot[:-1]))
    before_err = np.concatenate(([0.0], tot_err[:-1]))
    s = np.logaddexp(before[:, None], val, out=val)
    # |s_j| within the block: s is non-decreasing, from >= min(S_b, m_b - 701) up to the block's end
    fin_before = np.isfinite(before)
    mag = np.maximum(np.abs(m) + 701.0, np.where(fin_before, np.abs(before), 0.0))
    mag = np.maximum(mag, np.where(np.isfinite(tot), np.abs(tot), 0.0) * (1.0 + 1e-12))
    e_block = 1.01 * (before_err + err_l + 2.0 * _U * (mag + 3.0))
    s = s.reshape(-1)[:n]
    err = np.where(np.isfinite(s), np.repeat(e_block, _BLOCK)[:n], 0.0)
    # a sum that is one term so far is that term exactly (logaddexp(-inf, x) = x): no error
    fin = np.isfinite(a)
    if fin.any():
        f = int(np.argmax(fin))
        s[f], err[f] = a[f], 0.0
    return s, err


def prefix_logsumexp(a: np.ndarray, summation: str = "extended") -> tuple[np.ndarray, np.ndarray]:
    """s[i] = log sum_{j <= i} e^{a_j}, with a proven error bound: in linear space where the terms
    allow, else by ``np.logaddexp.accumulate`` (module docstring).

    Args:
      a: 1-D float array (-inf allowed; no NaN, no +inf).
      summation: the linear-space sums in "extended" (long double, default) or "double" (module
        docstring; faster, a larger bound unless the terms grow).

    Returns:
      (s, err): the computed running sums and err[i] >= |s[i] - exact| (absolute, in log).
    """
    if summation not in ("extended", "double"):
        raise ValueError(f"summation must be 'extended' or 'double', got {summation!r}")
    a = np.asarray(a, dtype=float)
    if a.size >= 2:
        lin = _prefix_linear(a, summation)
        if lin is None:
            lin = _prefix_blocked(a, summation)
        if lin is not None:
            return lin
    s = np.logaddexp.accumulate(a)
    if s.size < 2:
        return s, np.zeros(s.size)
    # step j >= 1 is inexact only where both its inputs are finite
    live = np.isfinite(a[1:]) & np.isfinite(s[:-1])
    step = np.where(live, 2.0 * _U * (np.abs(s[1:]) + 3.0), 0.0)
    # the cumulative sum of these non-negative bounds errs by < n u relative: 1.01 covers n < 1e13
    err = np.concatenate(([0.0], np.cumsum(step) * 1.01))
    # Tighter, where it holds: the derivative of logaddexp(x, a_j) in x is e^{x - s_j}, so an error
    # of the old sum reaches s_j weighted by e^{s_{j-1} - s_j} (times e^{delta_{j-1}} between the
    # computed and the exact sum): delta_j <= e^{-s_j} sum_{i <= j} eps_i e^{s_i} to first order,
    # i.e. the errors count in proportion to the mass they are made at (a tail sum of e^-5e8 adds
    # nothing to the total). Used only where every such bound is below 1e-3 (then the factor 1.02
    # covers e^{delta} and the evaluation at the computed sums); else the plain cumulative bound.
    fin = np.isfinite(s[1:])
    if fin.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(fin & (step > 0), np.log(np.where(step > 0, step, 1.0)) + np.where(fin, s[1:], 0.0), -np.inf)
            acc = np.logaddexp.accumulate(w)
            tight = np.where(fin, np.exp(np.minimum(acc - np.where(fin, s[1:], 0.0), 700.0)), 0.0) * 1.02
        tight = np.concatenate(([0.0], np.where(np.isnan(tight), err[1:], tight)))
        if float(np.max(tight)) <= 1e-3:
            err = np.minimum(err, tight)
    return s, err


def suffix_logsumexp(a: np.ndarray, summation: str = "extended") -> tuple[np.ndarray, np.ndarray]:
    """s[i] = log sum_{j >= i} e^{a_j}, with s[n] = -inf (length n + 1), and its error bound.

    Args:
      a: 1-D float array (-inf allowed; no NaN, no +inf).
      summation: as for :func:`prefix_logsumexp`.

    Returns:
      (s, err): the computed suffix sums (s[n] = -inf) and err[i] >= |s[i] - exact| (err[n] = 0).
    """
    s, err = prefix_logsumexp(np.asarray(a, dtype=float)[::-1], summation)
    return np.concatenate((s[::-1], [-np.inf])), np.concatenate((err[::-1], [0.0]))


def total_logsumexp(a: np.ndarray) -> tuple[float, float]:
    """log sum_j e^{a_j} and a proven bound on its error: :func:`suffix_logsumexp`'s first entry
    without the running sums (the total alone, e.g. one test's power).

    In linear space where the terms allow (module docstring): numpy's sum of the exps in long
    double is pairwise, not recursive, but every term of any summation tree of n non-negative
    terms passes through at most n - 1 roundings, so the recursive bound gamma_n (n u_ld) holds
    (Higham 2002, Sec. 4.2), and the bound is the running one's at the last term. Else the same
    sum shifted by the largest term M: s = M + log sum_j e^{a_j - M} over the terms with
    a_j - M >= -700 (the others, fewer than n of at most e^{M - 700} each against a sum >= e^M,
    change it by < n e^-700 relative, counted), with one more rounding of each difference a_j - M
    (at most u |a_j - M| <= 700 u in the exponent) and of the final addition (u |s|).

    Args:
      a: 1-D float array (-inf allowed; no NaN, no +inf).

    Returns:
      (s, err): the computed log-sum (-inf for no finite term) and err >= |s - exact|.
    """
    a = np.asarray(a, dtype=float)
    fin = np.isfinite(a)
    n_fin = int(np.count_nonzero(fin))
    if n_fin <= 1:  # one term (or none): exact
        return (float(a[fin][0]) if n_fin else -np.inf), 0.0
    if (a.size <= _LINEAR_MAX_TERMS and float(np.min(a, where=fin, initial=np.inf)) >= _LINEAR_RANGE[0]
            and float(np.max(a)) <= _LINEAR_RANGE[1]):
        s = float(np.log(float(np.sum(np.exp(a), dtype=np.longdouble))))
        return s, 1.01 * (8.0 * _U * abs(s) + a.size * _U_LD + 9.0 * _U)
    top = float(np.max(a))
    z = a - top
    z[z < _LINEAR_RANGE[0]] = -np.inf  # dropped, counted below (no slow subnormal exps)
    lsum = float(np.log(float(np.sum(np.exp(z), dtype=np.longdouble))))
    s = top + lsum
    err = 1.01 * (8.0 * _U * abs(lsum) + a.size * _U_LD + 9.0 * _U + 700.0 * _U + a.size * math.exp(-700.0))
    return s, err + 1.01 * _U * abs(s)
