"""gamma near 1: the rounding that the lower-tail tilt (rerokit.bounds.pld.lowertail) carries, against
independent references - exact cell masses and exact compositions in mpmath, exact tilted masses in
mpmath, and the second-order Lugannani-Rice value of test_lowertail - never the engine against
itself."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.pld import LOG_TAU, dpsgd_step_pld
from rerokit.bounds.pld import step as step_mod
from rerokit.bounds.pld.lowertail import conserve_at_bottom
from rerokit.bounds.pld.tilt import tilt_pmf

sys.path.insert(0, str(Path(__file__).parent))
from test_lowertail import _lr_point  # noqa: E402 - the saddle-point reference


def _exact_stat_p(sigma: float, q: float, h: float, log_tau: float) -> list:
    """Exact (mpmath, 40 digits) P-masses of the statistic's cells at the step's computed points."""
    lo, hi = step_mod.loss_range(sigma, q, "remove", log_tau)
    l = np.arange(math.floor(lo / h), math.ceil(hi / h) + 1) * h
    *_, x = step_mod._tails_at(l, sigma, q, "remove")  # noqa: SLF001 - the cells' computed points
    s = mp.mpf(sigma)
    comps = [(1 - mp.mpf(q), mp.mpf(0)), (mp.mpf(q), mp.mpf(1))]
    le = [mp.fsum(w * mp.erfc((m - mp.mpf(float(v))) / s / mp.sqrt(2)) / 2 for w, m in comps) for v in x]
    return [le[0]] + [le[j + 1] - le[j] for j in range(len(le) - 1)] + [1 - le[-1]]


def _prefixes(masses: list) -> list:
    out, acc = [], mp.mpf(0)
    for v in masses:
        out.append(acc)  # mass of the positions < m
        acc += v
    return out + [acc]


def _convolve(a: list, b: list) -> list:
    out = [mp.mpf(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


@pytest.mark.parametrize("sigma,q,h", [(1.0, 0.3, 0.05), (0.8, 0.05, 0.02)])
def test_statistic_conserved_at_bottom_dominates_every_prefix_after_composition(sigma, q, h):
    """The stored statistic's P-masses fall short of 1 by their safe rounding (a few u); with the
    missing mass added to the lowest bucket (conserve_at_bottom) every prefix sum P(S < m) of the
    step, and of its 3-fold composition, is >= the exact one (exact cell masses and convolutions in
    mpmath): the upper end of 1 - gamma then needs no mass-defect term."""
    mp.mp.dps = 40
    log_tau = LOG_TAU - math.log(1000)
    st = dpsgd_step_pld(sigma, q, h, "remove", log_tau)
    exact = _exact_stat_p(sigma, q, h, log_tau)
    stored = [mp.mpf(float(v)) for v in conserve_at_bottom(st.stat_p)]
    assert len(stored) == len(exact)
    assert mp.fsum(stored) >= 1 and mp.fsum([mp.mpf(float(v)) for v in st.stat_p]) < 1  # a defect was there
    for k, (g, e) in enumerate(zip(_prefixes(stored), _prefixes(exact))):
        assert g >= e, k
    g3, e3 = stored, exact
    for _ in range(2):
        g3, e3 = _convolve(g3, stored), _convolve(e3, exact)
    for k, (g, e) in enumerate(zip(_prefixes(g3), _prefixes(e3))):
        assert g >= e, k


def test_conserve_at_bottom_leaves_complete_masses_alone():
    pmf = np.array([0.25, 0.5, 0.25])
    assert conserve_at_bottom(pmf) is pmf or np.array_equal(conserve_at_bottom(pmf), pmf)
    over = np.array([0.5, 0.5, 1e-16])
    assert np.array_equal(conserve_at_bottom(over), over)


@pytest.mark.parametrize("t", [-0.3, 0.7])
def test_tilt_pmf_errors_bound_the_exact_tilted_masses(t):
    """tilt_pmf's relative bound (entries with |log p| <= cap) and absolute bound (the rest, here
    masses near the underflow threshold) hold against exp(log p + t l - log M) in mpmath (log M the
    computed one, as the untilting uses it)."""
    mp.mp.dps = 40
    rng = np.random.default_rng(3)
    pmf = rng.uniform(0.1, 1.0, 400)
    pmf[:5] = [1e-300, 3e-250, 0.0, 1e-200, 5e-310]
    pmf[-3:] = [1e-290, 0.0, 2e-305]
    pmf /= pmf.sum()
    off, h, cap = -150, 0.05, 80.0
    out, lm, rel, err = tilt_pmf(off, pmf, h, t, cap)
    abs_sum = mp.mpf(0)
    for j, p in enumerate(pmf):
        if p == 0.0:
            assert out[j] == 0.0
            continue
        ex = mp.exp(mp.log(mp.mpf(float(p))) + mp.mpf(t) * (off + j) * mp.mpf(h) - mp.mpf(lm))
        d = abs(mp.mpf(float(out[j])) - ex)
        if abs(math.log(p)) <= cap:
            assert d <= rel * ex
        else:
            abs_sum += d
    assert 0 < err and abs_sum <= err
    # all entries relative (cap = inf, tilt._tilted's use): the largest entrywise bound
    _, _, rel_all, err_all = tilt_pmf(off, pmf, h, t)
    assert err_all == 0.0 and rel_all > 20 * rel


def test_long_schedule_upper_end_of_beta_has_no_defect_term():
    """sigma 1, q 0.01, T 1e6 at the level of the tilt -0.279916 (kappa ~ 1e-20): 1 - gamma =
    1.354840e-4 (Lugannani-Rice, second order) inside the bracket, and the statistic's end
    (the upper end of 1 - gamma) within 3e-10 of it: 7.3e-10 with the statistic's mass defect
    (T x ~6e-16) carried, 1.2e-10 measured without (the rest of the bracket, ~1.4e-9, is the dominating
    PLD's proven step rounding, see lowertail's docstring)."""
    sigma, q, T = 1.0, 0.01, 1_000_000
    alpha, beta = _lr_point(sigma, q, T, -0.279916021294475)
    b = rero_dpsgd(sigma, q, T, log_kappa=float(mp.log(alpha)), comparisons=False)
    slack = 1e-12  # the saddle point's own error (test_lowertail's docstring)
    lo_beta, up_beta = 1.0 - b.value, 1.0 - b.interval[0]
    assert lo_beta <= beta + slack and beta - slack <= up_beta
    assert up_beta - float(beta) <= 3e-10
