"""An independent reference for the tests: importance-sampled Monte Carlo of the Neyman-Pearson
test "L >= l" of the REMOVE pair, for a schedule of one step (sigma_a, q_a) and T_b steps
(sigma_b, q_b), each step's output simulated exactly (no grid, no PLD, no rerokit code).

P (with the example): each step's output x ~ (1 - q) N(0, sigma^2) + q N(1, sigma^2); Q (without):
x ~ N(0, sigma^2); the step's loss L(x) = log(1 - q + q e^{(2x - 1) / (2 sigma^2)}), and the
schedule's L is the sum. By the Neyman-Pearson lemma the test L >= l is most powerful at its own
level Q(L >= l), with power P(L >= l); Q(L >= l) = E_P[e^{-L} 1{L >= l}]. The single step's output
is drawn from N(m, sigma_a^2) instead, m its output whose loss is l (the large deviation that
reaches the threshold), and weighted by the density ratio; the T_b steps are drawn from P.
Returns the logs of both estimates and the relative standard error of the power *at the estimated
level*: the tradeoff curve beta(alpha) has slope e^l at alpha = Q(L >= l) (Neyman-Pearson), so
beta(Q_hat) - P_hat = e^l (Q_hat - Q) - (P_hat - P) to first order (beta is concave: the second
order is below (se of Q_hat)^2 relative), the mean of w 1{L >= l} (e^{l - L} - 1), whose per-draw
values are small near the threshold: far smaller than either estimate's own error.

Where the T_b steps themselves carry the far tail (sigma_b <= sigma_a, or several sampled steps of
the bulk at extreme levels) the proposal never samples those paths and the estimates fall far
below the truth, with a small standard error: one step of sigma 1.738, q 6.1e-4 beside 200 of
sigma 1.55, q 1.1e-3 at l 1.495 gave e^-119.26, the single step's own power, while the 200 steps
alone have a certified power of e^-117.62 (a sub-schedule's power is a lower end). Use it only
for one step of small sigma beside a bulk of small losses (benchmarks/pld_soundness.py --one-jump).
"""

from __future__ import annotations

import math

import numpy as np


def _estimates(draw, l: float, n: int, chunk: int) -> tuple[float, float, float]:
    """(log P_hat, log Q_hat, relative standard error) of the test L >= l from n draws of
    ``draw(k)`` -> (log weights P / proposal, losses), k per chunk (module docstring)."""
    s_p = s_q = s_p2 = s_q2 = s_d2 = 0.0
    done = 0
    while done < n:
        k = min(chunk, n - done)
        log_w, loss = draw(k)
        hit = loss >= l
        wp = np.where(hit, np.exp(log_w), 0.0)
        wq = np.where(hit, np.exp(log_w - loss), 0.0)
        s_p, s_q = s_p + float(wp.sum()), s_q + float(wq.sum())
        s_p2, s_q2 = s_p2 + float((wp * wp).sum()), s_q2 + float((wq * wq).sum())
        d = math.exp(l) * wq - wp
        s_d2 += float((d * d).sum())
        done += k
    p, q = s_p / n, s_q / n
    d_mean = math.exp(l) * q - p
    se_d = math.sqrt(max(s_d2 / n - d_mean * d_mean, 0.0) / n) / p
    se_q = math.sqrt(max(s_q2 / n - q * q, 0.0) / n) / q
    return math.log(p), math.log(q), se_d + se_q * se_q


def mc_one_plus_bulk(sigma_a: float, q_a: float, sigma_b: float, q_b: float, t_b: int, l: float, n: int,
                     seed: int, chunk: int = 2000) -> tuple[float, float, float]:
    """(log P_hat, log Q_hat, relative standard error of P_hat against beta(Q_hat)) of the test
    L >= l, from n draws (seeded); P_hat estimates P(L >= l), Q_hat Q(L >= l)."""
    rng = np.random.default_rng(seed)
    va, vb = sigma_a * sigma_a, sigma_b * sigma_b
    m = va * math.log((math.expm1(l) + q_a) / q_a) + 0.5  # L_a(m) = l

    def draw(k: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.normal(m, sigma_a, k)
        log_p = np.logaddexp(math.log1p(-q_a) - x * x / (2.0 * va), math.log(q_a) - (x - 1.0) ** 2 / (2.0 * va))
        log_w = log_p + (x - m) ** 2 / (2.0 * va)  # P's density over the proposal's (same normaliser)
        loss = np.log1p(q_a * np.expm1((2.0 * x - 1.0) / (2.0 * va)))
        xb = rng.normal(0.0, sigma_b, (k, t_b)) + (rng.random((k, t_b)) < q_b)
        return log_w, loss + np.log1p(q_b * np.expm1((2.0 * xb - 1.0) / (2.0 * vb))).sum(axis=1)

    return _estimates(draw, l, n, chunk)


def mc_rare_steps(sigma: float, q: float, t: int, l: float, n: int, seed: int,
                  chunk: int = 1000) -> tuple[float, float, float]:
    """:func:`mc_rare_schedule` for T identical steps (sigma, q)."""
    return mc_rare_schedule([(sigma, q, t)], l, n, seed, chunk)


def mc_rare_schedule(segments: list, l: float, n: int, seed: int, chunk: int = 1000) -> tuple[float, float, float]:
    """(log P_hat, log Q_hat, relative standard error of P_hat against beta(Q_hat)) of the test
    L >= l for the schedule of (sigma, q, T) segments, from n draws (seeded), as :func:`mc_one_plus_bulk`.

    Where the q T are small the far tail is one sampled step's large output, at any of the steps: the
    proposal picks the step u uniformly among all N, draws x_u ~ N(m_u, sigma_u^2) (m_u the output
    whose loss is l) and the others from P, so its density is g(x) = P(x) (1/N) sum_t r_t(x_t) with
    r_t = N(m_t, sigma_t^2) / P_t (a mixture over u), and each draw weighs P(x) / g(x) =
    1 / ((1/N) sum_t r_t(x_t)): bounded wherever some step is near its m_t, unlike tilting one fixed step."""
    rng = np.random.default_rng(seed)
    sig = np.concatenate([np.full(T, s_) for s_, _, T in segments])
    qs = np.concatenate([np.full(T, q_) for _, q_, T in segments])
    t = sig.size
    v = sig * sig
    m = v * np.log((math.expm1(l) + qs) / qs) + 0.5

    def draw(k: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.normal(0.0, 1.0, (k, t)) * sig + (rng.random((k, t)) < qs)
        u = rng.integers(0, t, k)
        x[np.arange(k), u] = rng.normal(m[u], sig[u])
        log_p = np.logaddexp(np.log1p(-qs) - x * x / (2.0 * v), np.log(qs) - (x - 1.0) ** 2 / (2.0 * v))
        log_r = -(x - m) ** 2 / (2.0 * v) - log_p
        top = log_r.max(axis=1)
        log_w = -(top + np.log(np.exp(log_r - top[:, None]).sum(axis=1)) - math.log(t))
        return log_w, np.log1p(qs * np.expm1((2.0 * x - 1.0) / (2.0 * v))).sum(axis=1)

    return _estimates(draw, l, n, chunk)
