"""Schedules of many distinct steps (a noise scheduler: sigma and q change every step) go through
the batched step, window and mass-defect code (rerokit.bounds.pld.batch): the same step masses as
the per-step code, a bracket overlapping the per-step one within its width, and brackets that
contain independent references (the Gaussian-DP closed form at q = 1; dp-accounting's PLD
composition at a fine discretisation)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from scipy.stats import norm

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.pld import schedule_pld
from rerokit.bounds.pld import batch
from rerokit.bounds.pld.normal import ndtr_pair
from rerokit.bounds.pld.step import dpsgd_step_pld

_builder = sys.modules["rerokit.bounds.pld.builder"]
_compose = sys.modules["rerokit.bounds.pld.compose"]
_step = sys.modules["rerokit.bounds.pld.step"]


def _history(n, seed=0, s=(0.8, 2.0), q=(0.005, 0.02)):
    rng = np.random.default_rng(seed)
    return [(float(rng.uniform(*s)), float(rng.uniform(*q)), 1) for _ in range(n)]


def _per_step(monkeypatch):
    """Force the per-step code paths (as before the batched functions)."""
    monkeypatch.setattr(_builder, "BATCH_MIN", 10**9)
    monkeypatch.setattr(_compose, "BATCH_MIN", 10**9)


def assert_batched_equal_per_step(monkeypatch, segs, h, direction, lt):
    """batch.step_plds_batched(segs, ...) equals dpsgd_step_pld step by step, bit for bit: the
    per-step code with the same normal CDF (scipy's, which the batch uses at these sizes). Also
    used by test_batch_rows."""
    got = batch.step_plds_batched(segs, h, direction, lt)
    monkeypatch.setattr(_step, "ndtr_pair", lambda t: ndtr_pair(t, libm=False))
    for (s, q, _), st in zip(segs, got):
        ref = dpsgd_step_pld(s, q, h, direction, lt)
        assert ref.j_lo == st.j_lo and ref.inf_mass == st.inf_mass
        assert ref.loss_shift == st.loss_shift and ref.stat_rev_err == st.stat_rev_err
        for name in ("split", "stat_p", "stat_q"):  # the safely rounded masses (step's proven rounding)
            assert np.array_equal(getattr(ref, name), getattr(st, name)), (s, q, name)


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_batched_steps_equal_the_per_step_discretisation(monkeypatch, direction):
    assert_batched_equal_per_step(monkeypatch, _history(40, seed=1), 3e-4, direction, math.log(1e-17 / 40))


def test_batched_steps_small_arrays_use_libm_like_the_per_step_code():
    segs = _history(20, seed=2, s=(3.0, 6.0), q=(0.2, 0.5))
    h, lt = 2e-2, math.log(1e-17 / 20)
    got = batch.step_plds_batched(segs, h, "remove", lt)
    assert sum(st.split.size for st in got) * 4 <= 50_000  # the element-wise libm path
    for (s, q, _), st in zip(segs, got):
        ref = dpsgd_step_pld(s, q, h, "remove", lt)
        assert np.array_equal(ref.split, st.split) and np.array_equal(ref.stat_q, st.stat_q)


def test_mass_defect_batched_bounds_the_exact_defect():
    rng = np.random.default_rng(3)
    parts = []
    for n in (5, 100, 3000, 17, 64, 65):
        p = rng.random(n)
        p /= p.sum()
        parts.append((p, float(rng.random()) * 1e-12, int(rng.integers(1, 5))))
    exact = sum(T * abs(math.fsum(p.tolist() + [inf, -1.0])) for p, inf, T in parts)
    got = batch.mass_defect_batched(parts)
    assert exact <= got <= exact * 1.001 + 1e-18


def test_distinct_history_bracket_matches_the_per_step_bracket(monkeypatch):
    segs = _history(60, seed=4)
    lks = np.log([1e-1, 1e-2, 1e-4])
    pld = schedule_pld(segs)
    new = pld.power(lks)
    _per_step(monkeypatch)  # (on the same grid: the default for many distinct steps is coarser)
    old = schedule_pld(segs, pld.h).power(lks)
    width = np.maximum(old.upper - old.lower, new.upper - new.lower)
    assert np.all(np.abs(new.upper - old.upper) <= 0.01 * width + 1e-15)
    assert np.all(np.abs(new.lower - old.lower) <= 0.01 * width + 1e-15)
    assert np.all(new.lower <= old.upper) and np.all(old.lower <= new.upper)


def test_distinct_full_batch_history_contains_the_gdp_closed_form():
    rng = np.random.default_rng(5)
    sig = rng.uniform(3.0, 8.0, 50)
    mu = math.sqrt(float(np.sum(1.0 / sig**2)))
    for kappa in (0.01, 1e-4):
        r = rero_dpsgd(segments=[(float(s), 1.0, 1) for s in sig], kappa=kappa, comparisons=False)
        truth = float(norm.cdf(norm.ppf(kappa) + mu))
        lo, up = r.interval
        assert lo <= truth <= up
        assert up - lo < 1e-3 * truth


def test_distinct_history_contains_dp_accounting_composition():
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    segs = _history(20, seed=6, s=(0.9, 1.5), q=(0.02, 0.05))
    kappa = 0.01
    r = rero_dpsgd(segments=segs, kappa=kappa, comparisons=False)
    lo, up = r.interval
    # dp-accounting's pessimistic (connect-the-dots) PLD of the same schedule at a fine grid: its
    # hockey-stick divergence delta(eps) gives gamma <= delta(eps) + e^eps kappa for every eps, an
    # upper bound the certified lower end may not exceed
    pess = None
    for s, q, _ in segs:
        a = pld_lib.from_gaussian_mechanism(s, sampling_prob=q, value_discretization_interval=1e-3,
                                            pessimistic_estimate=True, use_connect_dots=True)
        pess = a if pess is None else pess.compose(a)
    eps = np.linspace(0.0, 4.0, 161)
    g_up = min(1.0, min(pess.get_delta_for_epsilon(float(e)) + math.exp(e) * kappa for e in eps))
    assert lo <= g_up * (1 + 1e-6) and g_up < 1.2 * up  # and the reference is not vacuous
    assert up >= lo


# ----------------------------------------------------------------------------- regimes (issue 17)


def test_narrow_bracket_is_not_recomposed_in_extended_precision():
    """sigma 5, q 1e-3, T 1e4, kappa 1e-3: the double-precision bracket is ~2e-4 relative, far below
    every width target, so no extended-precision recomposition (it cost 7x the whole call)."""
    from rerokit.bounds.dpsgd import dpsgd_pld, exact_power_many

    segs = [(5.0, 1e-3, 10_000)]
    pld = dpsgd_pld(segs)
    r = exact_power_many(pld, segs, np.array([math.log(1e-3)]))
    assert "extended" not in pld._built
    assert (r.value[0] - r.lower[0]) / r.value[0] < 1e-3


def test_many_distinct_steps_get_a_coarser_default_grid_and_a_narrow_bracket():
    """At least BATCH_MIN distinct steps: 20 grid points per step's loss sd instead of 40 (the cost
    is per distinct step and point; the width grows as 1 / points^2); the bracket stays far within
    the 2 % target and overlaps the 40-point one."""
    segs = _history(40, seed=7)
    pld = schedule_pld(segs)
    assert pld.h == pytest.approx(_step.default_grid_step(segs, 1, _builder._DISTINCT_STEP_POINTS), rel=1e-12)
    assert pld.h > _step.default_grid_step(segs, 1) * 1.5
    few = segs[: batch.BATCH_MIN - 1]
    assert schedule_pld(few).h == pytest.approx(_step.default_grid_step(few, 1), rel=1e-12)
    lks = np.log([1e-2, 1e-6])
    coarse = pld.power(lks)
    fine = schedule_pld(segs, _step.default_grid_step(segs, 1)).power(lks)
    assert np.all(coarse.upper - coarse.lower <= 2e-3 * coarse.upper)
    assert np.all(coarse.lower <= fine.upper) and np.all(fine.lower <= coarse.upper)
