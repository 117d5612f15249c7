"""The parameter objects of the DP-SGD bound and of the calibration solver: every field is validated
when the object is built (the message names the field), and the objects give the numbers of the
keywords they replaced."""

from __future__ import annotations

import dataclasses
import math

import pytest

from rerokit.bounds import Comparisons, MonteCarlo, Numerics, Schedule, SearchRange
from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.solve import calibrate_monotone
from rerokit.bounds.tradeoff import dpsgd_tradeoff


@pytest.mark.parametrize("make,field,exc", [
    (lambda: Numerics(value_discretization_interval=0.0), "Numerics.value_discretization_interval", ValueError),
    (lambda: Numerics(value_discretization_interval=math.nan), "Numerics.value_discretization_interval", ValueError),
    (lambda: Numerics(value_discretization_interval="1e-3"), "Numerics.value_discretization_interval", TypeError),
    (lambda: Numerics(bracket=1), "Numerics.bracket", TypeError),
    (lambda: MonteCarlo(samples=0), "MonteCarlo.samples", ValueError),
    (lambda: MonteCarlo(samples=10**10), "MonteCarlo.samples", ValueError),
    (lambda: MonteCarlo(samples=1.5), "MonteCarlo.samples", TypeError),
    (lambda: MonteCarlo(seed=-1), "MonteCarlo.seed", ValueError),
    (lambda: MonteCarlo(chunk_elements=0), "MonteCarlo.chunk_elements", ValueError),
    (lambda: Comparisons(delta=0.0), "Comparisons.delta", ValueError),
    (lambda: Comparisons(delta=1.0), "Comparisons.delta", ValueError),
    (lambda: Comparisons(membership="yes"), "Comparisons.membership", TypeError),
    (lambda: Comparisons(rdp_and_epsilon=None), "Comparisons.rdp_and_epsilon", TypeError),
    (lambda: SearchRange(0.0, 1.0, 0.5), "SearchRange.lower", ValueError),
    (lambda: SearchRange(1.0, math.inf, 2.0), "SearchRange.upper", ValueError),
    (lambda: SearchRange(1.0, 2.0, "1"), "SearchRange.start", TypeError),
    (lambda: SearchRange(1.0, 2.0, 3.0), "SearchRange needs lower <= start <= upper", ValueError),
])
def test_fields_are_validated_naming_the_field(make, field, exc):
    with pytest.raises(exc, match=field):
        make()


def test_objects_are_frozen_and_hold_their_defaults():
    n, m, c, s = Numerics(), MonteCarlo(), Comparisons(), SearchRange(1, 10, 2)
    assert (n.value_discretization_interval, n.bracket) == (None, True)
    assert (m.samples, m.seed, m.chunk_elements) == (1_000_000, None, 1 << 21)
    assert (c.rdp_and_epsilon, c.delta, c.membership) == (True, 1e-5, False)
    assert (s.lower, s.upper, s.start) == (1.0, 10.0, 2.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.bracket = False


def test_rero_dpsgd_rejects_wrong_option_types_naming_them():
    with pytest.raises(TypeError, match="numerics"):
        rero_dpsgd(1.0, 0.1, 10, 0.1, numerics={"bracket": False})
    with pytest.raises(TypeError, match="comparisons"):
        rero_dpsgd(1.0, 0.1, 10, 0.1, comparisons="yes")
    with pytest.raises(ValueError, match="method"):
        rero_dpsgd(1.0, 0.1, 10, 0.1, method="monte-carlo")
    with pytest.raises(TypeError, match="search"):
        calibrate_monotone(lambda x: 1 / x, 0.5, feasible="above", search=(1e-3, 1e3, 1.0))


def test_comparisons_true_false_and_objects_give_the_same_numbers():
    a = rero_dpsgd(1.0, 0.01, 1000, 0.1)
    b = rero_dpsgd(1.0, 0.01, 1000, 0.1, comparisons=Comparisons())
    assert a == b and a.value == pytest.approx(0.19421, abs=1e-5)  # the README's gamma
    assert a.extras["epsilon"] == pytest.approx(1.828, abs=1e-3) and a.extras["delta"] == 1e-5
    off = rero_dpsgd(1.0, 0.01, 1000, 0.1, comparisons=False)
    assert off == rero_dpsgd(1.0, 0.01, 1000, 0.1, comparisons=Comparisons(rdp_and_epsilon=False))
    assert off.value == a.value and "epsilon" not in off.extras
    d6 = rero_dpsgd(1.0, 0.01, 1000, 0.1, comparisons=Comparisons(delta=1e-6, membership=True))
    assert d6.extras["delta"] == 1e-6 and d6.extras["epsilon"] > a.extras["epsilon"]
    assert d6.extras["membership"] == dpsgd_tradeoff(1.0, 0.01, 1000).membership_summary()


def test_numerics_and_monte_carlo_objects():
    fast = rero_dpsgd(1.0, 0.05, 200, 0.05, comparisons=False, numerics=Numerics(bracket=False))
    full = rero_dpsgd(1.0, 0.05, 200, 0.05, comparisons=False)
    assert fast.value == full.value and fast.interval[0] <= full.interval[0]
    coarse = rero_dpsgd(1.0, 0.05, 200, 0.05, comparisons=False, numerics=Numerics(value_discretization_interval=1e-2))
    assert coarse.extras["value_discretization_interval"] == 1e-2 and coarse.value >= full.interval[0]
    mc = rero_dpsgd(2.0, 0.5, 3, 0.1, method=MonteCarlo(samples=5000, seed=7), comparisons=False)
    assert mc.method == "mc" and mc.extras["seed"] == 7 and mc.extras["mc_samples"] == 5000
    assert mc == rero_dpsgd(2.0, 0.5, 3, 0.1, method=MonteCarlo(samples=5000, seed=7), comparisons=False)
    assert rero_dpsgd(2.0, 0.5, 3, 0.1, method="mc", comparisons=False).extras["mc_samples"] == 1_000_000


@pytest.mark.parametrize("q", [0.05, 1.0])
def test_a_poisson_schedule_with_a_group_is_the_engines_group(q):
    k = 3
    b = rero_dpsgd(segments=Schedule.from_settings(2.0, q, 50, examples_per_user=k), kappa=0.01)
    c = dpsgd_tradeoff(segments=[(2.0, q, 50)], group_size=k).reconstruction_success(kappa=0.01)
    assert b.value == c.value and b.inputs["group_size"] == k
    assert b.value > rero_dpsgd(2.0, q, 50, 0.01).value  # a group is more exposed than one example
    if q < 1:  # shuffled batches are certified by bounds.certify (no amplification), not by the engine
        with pytest.raises(ValueError, match="sampler is 'shuffle'"):
            rero_dpsgd(segments=Schedule.from_settings(2.0, q, 50, sampler="shuffle"), kappa=0.01)
    with pytest.raises(ValueError, match="examples_per_user"):
        rero_dpsgd(segments=Schedule.from_settings(2.0, q, 50, examples_per_user=k), kappa=0.01, method="mc")


def test_search_range_drives_the_solver():
    r = calibrate_monotone(lambda s: 1 / (1 + s * s), 0.2, feasible="above", search=SearchRange(1e-6, 1e6, 1.5))
    assert 1 / (1 + r.x * r.x) <= 0.2 and r.x == pytest.approx(2.0, rel=1e-4)


# ----------------------------------------------------------------------------- typed view of the extras


def test_dpsgd_details_read_the_extras_of_every_method():
    from rerokit.bounds import DpsgdDetails
    from rerokit.bounds.types import Bound

    b = rero_dpsgd(1.0, 0.01, 1000, 0.1, comparisons=Comparisons(membership=True))
    x = DpsgdDetails.of(b)
    assert x.method == "exact" and x.lower == b.extras["lower"] and x.floored is False
    assert x.value_discretization_interval == b.extras["value_discretization_interval"] > 0
    assert x.comparisons.epsilon == b.extras["epsilon"] and x.comparisons.delta == 1e-5
    assert x.comparisons.rdp_gamma >= b.value and x.membership == b.extras["membership"]
    assert x.log_gamma == pytest.approx(math.log(b.value), abs=1e-12) and x.monte_carlo is None
    off = DpsgdDetails.of(rero_dpsgd(1.0, 0.01, 1000, 0.1, comparisons=False))
    assert off.comparisons is None and off.membership is None
    mc = DpsgdDetails.of(rero_dpsgd(2.0, 0.5, 3, 0.1, method=MonteCarlo(samples=5000, seed=7), comparisons=False))
    assert (mc.monte_carlo.seed, mc.monte_carlo.samples) == (7, 5000) and mc.monte_carlo.standard_error > 0
    cf = DpsgdDetails.of(rero_dpsgd(2.0, 1.0, 4, 0.1, method="closed-form"))
    assert cf.mu_gdp == pytest.approx(1.0) and cf.comparisons is not None
    env = DpsgdDetails.of(rero_dpsgd(1e-5, 0.01, 100, 0.1))  # sigma below the exact range: the envelope
    assert env.method == "envelope" and env.note and env.comparisons is None
    with pytest.raises(TypeError, match="Bound"):
        DpsgdDetails.of({"epsilon": 1.0})
    with pytest.raises(KeyError, match="delta"):
        DpsgdDetails.of(Bound(0.5, 0.0, "exact", extras={"epsilon": 1.0}))
