"""Monte Carlo mutual information of the regular-simplex prior and Hayes et al. 2023 Table 2, "Guo et al. (MC)"."""

import math

import numpy as np
import pytest
from scipy import integrate

from rerokit.bounds.fano import gaussian_mutual_information_bound
from rerokit.bounds.fano_mc import fano_advantage_simplex_mc, simplex_mutual_information_mc
from rerokit.experiments.hayes_table2 import DEFAULT_SIGMAS, PAPER_TABLE2


def _binary_mi_quadrature(sigma: float, sensitivity: float) -> float:
    """n = 2: Z_2 - Z_1 = sqrt(2) Y with Y ~ N(0, 1), so I = log 2 - E[log(1 + exp(r sqrt(2) Y - r^2))],
    r = sensitivity / (sqrt(2) sigma): a one-dimensional integral (scipy quad), independent of the sampler."""
    r = sensitivity / math.sqrt(2) / sigma
    f = lambda y: np.logaddexp(0.0, r * math.sqrt(2) * y - r * r) * math.exp(-y * y / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    val, _ = integrate.quad(f, -40, 40, limit=400, epsabs=1e-13)
    return math.log(2) - val


@pytest.mark.parametrize("sigma,sens", [(0.5, math.sqrt(2)), (1.0, math.sqrt(2)), (2.0, 1.0), (0.3, 2.0)])
def test_binary_case_matches_quadrature(sigma, sens):
    b = simplex_mutual_information_mc(sigma, 2, sensitivity=sens, samples=200_000, seed=1)
    want = _binary_mi_quadrature(sigma, sens)
    assert abs(b.value - want) <= 4 * b.extras["se"] + 1e-12
    assert b.direction == "estimate" and b.interval[0] <= b.value <= b.interval[1]


@pytest.mark.parametrize("n", [2, 10, 100])
def test_mc_mutual_information_is_below_guo_closed_form(n):
    for sigma in (0.5, 1.0, 3.0):
        b = simplex_mutual_information_mc(sigma, n, samples=20_000, seed=0)
        assert b.interval[0] <= gaussian_mutual_information_bound(sigma, n, math.sqrt(2))
        assert 0.0 <= b.value <= math.log(n)


@pytest.mark.parametrize("n", [10, 100])
def test_table2_mc_row_matches_the_paper(n):
    """Hayes et al. 2023, Table 2, "Guo et al. (2022b) (MC)" (their Fig. 11: 10^5 Monte Carlo samples). Ours: 10^5
    samples, seed 0. Tolerance: the paper's rounding (0.0005) plus 3 standard errors of the difference of two
    independent 10^5-sample estimates (sqrt(2) x ours)."""
    for sigma, printed in zip(DEFAULT_SIGMAS, PAPER_TABLE2[(n, "guo_mc")]):
        b = fano_advantage_simplex_mc(sigma, n, samples=100_000, seed=0)
        assert abs(b.value - printed) <= 0.0005 + 3 * math.sqrt(2) * b.extras["se"], (n, sigma, b.value, printed)
        assert b.extras["se"] < 0.002


def test_seeded_and_recorded():
    a = fano_advantage_simplex_mc(1.0, 10, samples=5000, seed=7)
    b = fano_advantage_simplex_mc(1.0, 10, samples=5000, seed=7)
    c = fano_advantage_simplex_mc(1.0, 10, samples=5000, seed=8)
    assert a.value == b.value and a.value != c.value
    assert a.extras["seed"] == 7 and a.extras["samples"] == 5000
    # chunking does not change the stream: more samples than one chunk of n = 10 (2^21 / 10 rows)
    assert simplex_mutual_information_mc(1.0, 10, samples=300_000, seed=3).extras["samples"] == 300_000


def test_bad_inputs_named():
    with pytest.raises(ValueError, match="samples"):
        simplex_mutual_information_mc(1.0, 10, samples=1)
    with pytest.raises(ValueError, match="noise_multiplier"):
        simplex_mutual_information_mc(0.0, 10)
    with pytest.raises(ValueError, match="prior_size"):
        fano_advantage_simplex_mc(1.0, 1)
    with pytest.raises(ValueError, match="seed"):
        simplex_mutual_information_mc(1.0, 10, seed=-1)
