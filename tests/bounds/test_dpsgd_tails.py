"""Tails of the certified DP-SGD bracket against independent references in mpmath (never rerokit's
engine): gamma near 1 (the upper-only grid refinement) and tiny q at tiny kappa (the max test below, the
coarse-grid tilted PLD above).

References: explicit tests whose level and power are exact in mpmath give lower bounds on the true
gamma (the upper end must not fall below them), and the binomial mixture of Gaussian shifts
sum_k Bin(k; T, q) Phi(Phi^-1(kappa) + sqrt(k)/sigma) (Dong, Roth & Su 2022) is an upper bound on
it (the lower end must not rise above it)."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.options import Numerics

mp.mp.dps = 50


def _phi_bar(x):
    return mp.erfc(x / mp.sqrt(2)) / 2


def _z_of_level(log_level):
    """z with Phi(-z) = e^log_level (mpmath root finding, 50 digits)."""
    target = mp.mpf(log_level)
    return mp.findroot(lambda z: mp.log(_phi_bar(z)) - target, mp.sqrt(-2 * target))


def _linear_test_power(sigma, q, T, log_kappa):
    """Power of 'reject iff sum_t x_t > c' at level kappa: under Q the sum is N(0, T sigma^2), under
    P it is that plus K ~ Bin(T, q), exactly."""
    c = _z_of_level(log_kappa) * sigma * mp.sqrt(T)
    s = mp.mpf(0)
    lq, l1q = mp.log(q), mp.log(1 - mp.mpf(q))
    for k in range(T + 1):
        lb = mp.loggamma(T + 1) - mp.loggamma(k + 1) - mp.loggamma(T - k + 1) + k * lq + (T - k) * l1q
        if lb < -200:
            if k > T * q:
                break
            continue
        s += mp.exp(lb) * _phi_bar((c - k) / (sigma * mp.sqrt(T)))
    return s


def _max_test_power(sigma, q, T, log_kappa):
    """Power of 'reject iff max_t x_t > sigma z' at level kappa, exactly (independent coordinates)."""
    kappa = mp.exp(log_kappa)
    a = -mp.expm1(mp.log1p(-kappa) / T)  # Phi(-z) = 1 - (1 - kappa)^(1/T)
    z = _z_of_level(mp.log(a))
    b = (1 - q) * _phi_bar(z) + q * _phi_bar(z - 1 / mp.mpf(sigma))
    return -mp.expm1(T * mp.log1p(-b))


def _mixture_upper(sigma, q, T, log_kappa):
    z = -_z_of_level(log_kappa)  # Phi(z) = kappa
    s = mp.mpf(0)
    lq, l1q = mp.log(q), mp.log(1 - mp.mpf(q))
    for k in range(T + 1):
        lb = mp.loggamma(T + 1) - mp.loggamma(k + 1) - mp.loggamma(T - k + 1) + k * lq + (T - k) * l1q
        s += mp.exp(lb) * (1 - _phi_bar(z + mp.sqrt(k) / sigma))
    return s


def test_gamma_near_one_refined_in_both_modes() -> None:
    # sigma 1, q 0.3, T 1000, kappa 1e-9: the 1 - gamma bracket was 1.2e-7 (3.1e-9 on the finer grid);
    # the refinement reads the upper end only, so bracket=False (what calibration compares) gets it too
    lk = math.log(1e-9)
    b = rero_dpsgd(1.0, 0.3, 1000, log_kappa=lk, comparisons=False)
    nb = rero_dpsgd(1.0, 0.3, 1000, log_kappa=lk, comparisons=False, numerics=Numerics(bracket=False))
    assert b.value - b.interval[0] <= 5e-9
    assert abs(b.value - nb.value) <= 1e-10
    ref_low = _linear_test_power(1.0, 0.3, 1000, lk)  # a valid test: gamma >= its power
    assert mp.mpf(b.value) >= ref_low and mp.mpf(nb.value) >= ref_low
    assert mp.mpf(b.interval[0]) <= _mixture_upper(1.0, 0.3, 1000, lk)


@pytest.mark.parametrize("lk10", [-20, -30])
def test_tiny_q_max_test_lower_end(lk10: int) -> None:
    # sigma 1, q 1e-4, T 1000: about 0.1 sampled steps per run. Before, the bracket at kappa 1e-30
    # was [e^-68.21 (the PLD statistic), e^-65.24 (RDP)], 95 % wide; the max test gives e^-66.57.
    from rerokit.bounds.pld import log_max_test_power

    lk = lk10 * math.log(10)
    exact = _max_test_power(1.0, 1e-4, 1000, lk)
    got = float(log_max_test_power([(1.0, 1e-4, 1000)], [lk])[0])
    assert got <= mp.log(exact)  # never above the test's exact power
    assert mp.log(exact) - got <= 1e-8
    if lk10 == -30:  # one rero_dpsgd call (about 10 s on a loaded 2-core machine)
        b = rero_dpsgd(1.0, 1e-4, 1000, log_kappa=lk, comparisons=False)
        assert b.interval[0] >= math.exp(got) * (1 - 1e-12)
        assert mp.mpf(b.interval[0]) <= _mixture_upper(1.0, 1e-4, 1000, lk)
        assert mp.mpf(b.value) >= exact  # the upper end is above a valid test's power
        # the upper end: the tilted PLD of steps truncated just below kappa, on the finest grid they
        # fit (was the RDP bound, e^-65.24, 3.8x the max test's power); the truth lies between the
        # exact max-test power and the upper end, now within 1 % (measured 2.4e-4)
        assert (b.value - b.interval[0]) / b.value <= 0.01
        assert mp.mpf(b.value) <= exact * (1 + mp.mpf("0.01"))


@pytest.mark.parametrize("sigma,q,T,lk", [(1.0, 1e-4, 10**6, -30.0), (0.5, 0.01, 50, -5.0), (4.0, 0.3, 7, -700.0),
                                          (2.0, 1.0, 3, -40.0), (1.0, 1e-3, 10, -0.7)])
def test_max_test_level_and_power_certified(sigma: float, q: float, T: int, lk: float) -> None:
    from rerokit.bounds.pld import log_max_test_power, max_test_threshold

    z = max_test_threshold(T, lk)
    level = -mp.expm1(T * mp.log1p(-_phi_bar(mp.mpf(z))))
    assert mp.log(level) <= lk
    b = (1 - q) * _phi_bar(mp.mpf(z)) + q * _phi_bar(mp.mpf(z) - 1 / mp.mpf(sigma))
    power = -mp.expm1(T * mp.log1p(-b))
    got = float(log_max_test_power([(sigma, q, T)], [lk])[0])
    assert got <= mp.log(power)
    assert float(log_max_test_power([(sigma, q, T)], [-1e-12])[0]) == -math.inf  # kappa > 1/2: unused
    assert mp.log(power) - got <= 1e-8 * (1 + abs(got))


def test_max_test_two_segments_certified() -> None:
    # a two-segment schedule: level 1 - Phi(z)^(T1 + T2), power 1 - prod_i (1 - b_i)^(T_i)
    from rerokit.bounds.pld import log_max_test_power, max_test_threshold

    segs = [(0.8, 1e-3, 300), (2.0, 0.05, 700)]
    lk = math.log(1e-25)
    z = mp.mpf(max_test_threshold(1000, lk))
    assert mp.log(-mp.expm1(1000 * mp.log1p(-_phi_bar(z)))) <= lk
    s = mp.mpf(0)
    for sigma, q, T in segs:
        s += T * mp.log1p(-((1 - q) * _phi_bar(z) + q * _phi_bar(z - 1 / mp.mpf(sigma))))
    exact = mp.log(-mp.expm1(s))
    got = float(log_max_test_power(segs, [lk])[0])
    # at least the common threshold's power; at most the better of it and the loss-matched test's
    # (pld.maxtest: a common per-step loss), whose exact level is at most kappa
    assert exact - got <= 1e-8
    from rerokit.bounds.pld import maxtest

    zs = maxtest._matched_thresholds(segs, 1000, lk)
    s_q = s_m = mp.mpf(0)
    for sigma, q, T in segs:
        zi = mp.mpf(zs[(sigma, q)])
        s_q += T * mp.log1p(-_phi_bar(zi))
        s_m += T * mp.log1p(-((1 - q) * _phi_bar(zi) + q * _phi_bar(zi - 1 / mp.mpf(sigma))))
    assert mp.log(-mp.expm1(s_q)) <= lk and got <= max(exact, mp.log(-mp.expm1(s_m)))
    b = rero_dpsgd(segments=segs, log_kappa=lk, comparisons=False)
    assert b.value >= math.exp(got) and b.interval[0] >= math.exp(got) * (1 - 1e-12)


def _sym_profile_upper(sigma, q, T, log_alpha, kmax=40):
    """An upper bound on the add-or-remove trade-off curve's power at level e^log_alpha: both
    directions' privacy profiles are <= D(eps) = sum_k Bin(k; T, q) delta_GDP(sqrt(k)/sigma, eps)
    (joint convexity of the hockey-stick divergence over the binomial mixture of Gaussian shifts;
    GDP is symmetric), and TPR_sym(alpha) <= e^eps alpha + D(eps) at every eps (Dong, Roth & Su
    2022, Prop. 2.12 / F.2); minimised over a grid of eps. k > kmax: their mass, delta <= 1."""
    lq, l1q = mp.log(q), mp.log(1 - mp.mpf(q))
    w = [mp.exp(mp.loggamma(T + 1) - mp.loggamma(k + 1) - mp.loggamma(T - k + 1) + k * lq + (T - k) * l1q)
         for k in range(kmax + 1)]
    rest = max(mp.mpf(0), 1 - mp.fsum(w))

    def d_gdp(mu, eps):
        return _phi_bar(eps / mu - mu / 2) - mp.exp(eps) * _phi_bar(eps / mu + mu / 2)

    best = mp.mpf(1)
    for i in range(0, 301):
        eps = mp.mpf(i) / 10
        v = mp.exp(eps + log_alpha) + rest + mp.fsum(w[k] * d_gdp(mp.sqrt(k) / sigma, eps) for k in range(1, kmax + 1))
        best = min(best, v)
    return best


def test_tradeoff_lower_end_gets_the_max_test_in_both_adjacencies() -> None:
    # The max test sits in SchedulePLD.power_lower, so the trade-off curve's lower end gets it in
    # both adjacencies (before: only rero_dpsgd / the remove curve; the add_remove lower end at
    # FPR 1e-30 was the trivial e^-69.08, now e^-66.57).
    from rerokit.bounds.dpsgd import dpsgd_pld
    from rerokit.bounds.pld import log_max_test_power
    from rerokit.bounds.tradeoff import TradeoffCurve

    segs = [(1.0, 1e-4, 1000)]
    pld = dpsgd_pld(segs, add_direction=True)
    for lk in (-30 * math.log(10), -8 * math.log(10)):
        mt = float(log_max_test_power(segs, [lk])[0])
        ref = mp.log(_mixture_upper(1.0, 1e-4, 1000, lk))
        ref_sym = mp.log(_sym_profile_upper(1.0, 1e-4, 1000, lk))
        for adj, up_ref in (("remove", ref), ("add_remove", ref_sym)):
            b = TradeoffCurve.from_pld(segs, pld, adj).tpr_at_fpr(log_fpr=lk)
            assert math.log(b.lower) >= mt - 1e-12, adj
            assert math.log(b.lower) <= up_ref, adj
            assert b.lower <= b.upper
        assert ref <= ref_sym + 1e-9  # the remove curve lies below the symmetrised one's bound
