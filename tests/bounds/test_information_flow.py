"""Finite-support (quantitative information flow) bound, Balle, Cherubin & Hayes 2022 Sec. VII-F, checked
against the exact optimum of a linear program over every eps-DP channel on a small support."""

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from rerokit.bounds.information_flow import bayes_leakage_bound, rero_finite_support
from rerokit.bounds.laplace import rero_pure_dp


def _best_channel_success(prior: np.ndarray, eps: float) -> float:
    """max over channels C: Z -> Z (outputs = the attacker's guesses, which loses no generality) of
    sum_z pi(z) C(z, z), subject to rows summing to 1 and C(z, y) <= e^eps C(z', y): a linear program."""
    n = len(prior)
    idx = lambda z, y: z * n + y  # noqa: E731
    c = np.zeros(n * n)
    for z in range(n):
        c[idx(z, z)] = -prior[z]
    a_eq = np.zeros((n, n * n))
    for z in range(n):
        a_eq[z, [idx(z, y) for y in range(n)]] = 1.0
    rows = []
    for y in range(n):
        for z in range(n):
            for w in range(n):
                if z != w:
                    r = np.zeros(n * n)
                    r[idx(z, y)], r[idx(w, y)] = 1.0, -math.exp(eps)
                    rows.append(r)
    res = linprog(c, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=a_eq, b_eq=np.ones(n), bounds=(0, 1),
                  method="highs")
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_uniform_prior_bound_is_the_lp_optimum(n, eps):
    lp = _best_channel_success(np.full(n, 1.0 / n), eps)
    b = rero_finite_support(eps, n)
    assert lp <= b.value <= lp + 1e-8  # attained (n-ary randomised response)
    assert b.value == pytest.approx(math.exp(eps) / (n - 1 + math.exp(eps)), rel=1e-12)


def test_nonuniform_priors_never_exceed_the_bound():
    rng = np.random.default_rng(0)
    for _ in range(6):
        n = int(rng.integers(2, 6))
        prior = rng.dirichlet(np.ones(n))
        eps = float(rng.uniform(0.05, 4))
        lp = _best_channel_success(prior, eps)
        b = rero_finite_support(eps, support_size=n, kappa=float(prior.max()))
        assert lp <= b.value + 1e-9


def test_tighter_than_the_pairwise_bounds_and_limits():
    # uniform prior of 10 at eps = 1: e / (9 + e) = 0.2320, below Cor. 3 and the pure-DP curve (0.2718)
    b = rero_finite_support(1.0, 10)
    assert b.value == pytest.approx(math.e / (9 + math.e), rel=1e-12)
    assert b.value < rero_pure_dp(1.0, prior=10).value and b.value < b.extras["gamma_dp"]
    # |Z| -> infinity recovers kappa e^eps (Cor. 3); |Z| = 1 gives gamma = kappa = 1
    big = rero_finite_support(2.0, support_size=10**30, kappa=0.001)
    assert big.value == pytest.approx(0.001 * math.exp(2.0), rel=1e-9)
    assert rero_finite_support(5.0, 1).value == 1.0
    assert bayes_leakage_bound(0.0, 7) == pytest.approx(1.0) and bayes_leakage_bound(50.0, 7) == pytest.approx(7.0)


def test_bad_inputs_named():
    with pytest.raises(ValueError, match="support_size"):
        rero_finite_support(1.0, kappa=0.1)
    with pytest.raises(ValueError, match="support_size"):
        rero_finite_support(1.0, support_size=5, kappa=0.1)  # kappa < 1/|Z| is impossible
    with pytest.raises(ValueError, match="support_size"):
        rero_finite_support(1.0, 10, support_size=5)
    with pytest.raises(ValueError, match="epsilon"):
        rero_finite_support(float("nan"), 10)
