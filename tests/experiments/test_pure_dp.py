"""`pure-dp`: every certified pure-DP bound lies above an attack on a Laplace release; the attack's exact
success against numerical integration and simulation."""

import csv
import math

import numpy as np
import pytest
from scipy import integrate, stats

from rerokit.experiments.pure_dp import nearest_candidate_success, pure_dp_rows, run_pure_dp


@pytest.mark.parametrize("eps,n", [(0.5, 2), (1.0, 3), (4.0, 10), (8.0, 100)])
def test_nearest_candidate_success_against_integration(eps, n):
    """(1/n) sum_i P(c_i + Lap(1/eps) falls in candidate i's cell), each by quad over the Laplace density."""
    c = np.linspace(0.0, 1.0, n)
    edges = np.concatenate([[-np.inf], (c[1:] + c[:-1]) / 2, [np.inf]])
    total = 0.0
    for i in range(n):
        lo, hi = edges[i] - c[i], edges[i + 1] - c[i]
        total += stats.laplace.cdf(hi, scale=1 / eps) - stats.laplace.cdf(lo, scale=1 / eps)
    assert nearest_candidate_success(eps, n) == pytest.approx(total / n, rel=1e-12)
    # and the first cell by quadrature of the density (independent of the cdf)
    val, _ = integrate.quad(lambda y: stats.laplace.pdf(y, scale=1 / eps), -np.inf, edges[1])
    assert val == pytest.approx(stats.laplace.cdf(edges[1], scale=1 / eps), rel=1e-7)


def test_every_bound_is_above_the_attack_and_simulation_matches(tmp_path):
    rows = pure_dp_rows([0.5, 2.0, 8.0], [2, 10, 100], trials=40_000, seed=0)
    for r in rows:
        for key in ("gamma_dp", "gamma_pure_dp_curve", "gamma_laplace", "gamma_finite_support"):
            assert r[key] >= r["attack_exact"] - 1e-15, (key, r)
        assert r["gamma_laplace"] <= r["gamma_pure_dp_curve"] + 1e-15 <= r["gamma_dp"] + 2e-15
        se = math.sqrt(r["attack_exact"] * (1 - r["attack_exact"]) / r["trials"])
        assert abs(r["attack_success"] - r["attack_exact"]) <= 4 * se
    # two candidates: the Bayes-optimal test between Lap(0) and Lap(Delta) succeeds with 1 - e^{-eps/2} / 2
    two = next(r for r in rows if r["prior_size"] == 2 and r["epsilon"] == 2.0)
    assert two["attack_exact"] == pytest.approx(1 - math.exp(-1.0) / 2)
    res = run_pure_dp(tmp_path, epsilons=[1.0], prior_sizes=[10], trials=1000, seed=2)
    out = list(csv.DictReader(open(res["csv"])))
    assert len(out) == 1 and out[0]["seed"] == "2" and (tmp_path / "pure_dp.png").stat().st_size > 0
