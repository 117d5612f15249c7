"""Guo et al. 2022b Fano bound (Hayes et al. 2023, App. H, Eq. 4-5)."""

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import xlogy

from rerokit.bounds.fano import (
    fano_advantage_from_mi,
    fano_advantage_rdp,
    fano_advantage_gaussian,
    fano_min_error,
    gaussian_mutual_information_bound,
)

SIGMAS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
# Hayes et al. 2023, App. H, Table 2, rows "Guo et al. (2022b)" (printed to 3 decimals).
TABLE2 = {
    10: (0.976, 0.593, 0.380, 0.274, 0.213, 0.174),
    100: (0.861, 0.346, 0.195, 0.131, 0.097, 0.076),
}


@pytest.mark.parametrize("n", [10, 100])
def test_reproduces_hayes_table2_guo_rows(n):
    """Sensitivity sqrt(2) (two orthogonal unit-norm gradients, clipping norm 1) reproduces the
    table to its printed precision; tolerance 0.002 as in the issue (observed: exact to 3 dp)."""
    for s, want in zip(SIGMAS, TABLE2[n]):
        b = fano_advantage_gaussian(s, n, sensitivity=math.sqrt(2))
        assert b.value == pytest.approx(want, abs=0.002)
        assert round(b.value, 3) == want


def test_root_against_grid_search():
    """t* = smallest t with f(t) <= 0, by brute force on a grid of 2e6 points."""
    grid = np.linspace(0.0, 1.0, 2_000_001)
    for n in (2, 3, 10, 1000):
        for i in (0.01, 0.3, 1.0, math.log(n) * 0.9):
            f = math.log(n) - i + xlogy(grid, grid) + xlogy(1 - grid, 1 - grid) - grid * math.log(n - 1)
            t_grid = grid[np.argmax(f <= 0)]
            lo, hi = fano_min_error(i, n)
            assert lo <= hi and hi - lo < 1e-10
            assert t_grid - 1e-6 <= lo <= t_grid + 1e-12  # grid point is the first with f <= 0


def test_certified_bracket_and_limits():
    for n in (2, 10, 100):
        for i in (1e-6, 0.2, 1.5):
            if i >= math.log(n):
                continue
            lo, hi = fano_min_error(i, n)
            f = lambda t: math.log(n) - i + xlogy(t, t) + xlogy(1 - t, 1 - t) - t * math.log(n - 1)  # noqa: E731
            assert lo == 0.0 or f(lo) > 0
            assert f(hi) <= 0
        # I >= H(pi) = log n: nothing rules out perfect reconstruction
        assert fano_advantage_from_mi(math.log(n), n).value == 1.0
        assert fano_advantage_from_mi(10.0, n).value == 1.0
        # I = 0: the release says nothing, advantage 0 and gamma = kappa = 1/n
        b = fano_advantage_from_mi(0.0, n)
        assert b.value == pytest.approx(0.0, abs=1e-15) and b.extras["gamma"] == pytest.approx(1 / n)


def test_monotone_in_information_noise_and_gamma_consistent():
    advs = [fano_advantage_from_mi(i, 10).value for i in np.linspace(0, 3, 61)]
    assert np.all(np.diff(advs) >= -1e-12)
    advs = [fano_advantage_gaussian(s, 50).value for s in np.linspace(0.2, 5, 40)]
    assert np.all(np.diff(advs) <= 1e-12)
    b = fano_advantage_from_mi(0.7, 10)
    assert b.value == pytest.approx((b.extras["gamma"] - 0.1) / 0.9, abs=1e-12)


def test_gaussian_mi_bound_is_below_kl_so_rdp_route_is_looser():
    """-log(p + (1-p) e^{-x}) <= (1-p) x <= x = Delta^2/(2 sigma^2), the Gaussian KL (the order-1
    RDP epsilon); so the closed-form MI bound gives an advantage <= the RDP-epsilon route."""
    for n in (2, 10, 100):
        for s in SIGMAS:
            x = 1.0 / (2 * s * s)
            assert gaussian_mutual_information_bound(s, n) <= (1 - 1 / n) * x + 1e-15
            assert fano_advantage_gaussian(s, n).value <= fano_advantage_from_mi(x, n).value + 1e-12


def test_rdp_route_uses_epsilon_as_information_and_is_looser_for_gaussian():
    """RDP of the Gaussian mechanism at order alpha is alpha Delta^2/(2 sigma^2) >= the closed-form
    MI bound, so the RDP route gives a larger (valid, looser) advantage bound."""
    for n in (10, 100):
        for s in SIGMAS:
            for alpha in (1.5, 2.0, 10.0):
                b = fano_advantage_rdp(alpha / (2 * s * s), n)
                assert b.value == fano_advantage_from_mi(alpha / (2 * s * s), n).value
                assert b.value >= fano_advantage_gaussian(s, n).value
    with pytest.raises(ValueError, match="epsilon"):
        fano_advantage_rdp(-1.0, 10)


@pytest.mark.parametrize("n", [10, 100])
def test_bound_dominates_exact_map_attack(n):
    """Prior = n orthonormal vectors e_i (pairwise distance sqrt(2)), release e_i + N(0, s^2 I).
    The MAP attack (argmax coordinate) succeeds with P = int phi(z) Phi(z + 1/s)^(n-1) dz; its
    advantage must not exceed the Fano bound with sensitivity sqrt(2)."""
    for s in SIGMAS:
        p, _ = integrate.quad(lambda z: stats.norm.pdf(z) * stats.norm.cdf(z + 1 / s) ** (n - 1), -12, 12)
        adv = (p - 1 / n) / (1 - 1 / n)
        assert adv <= fano_advantage_gaussian(s, n, sensitivity=math.sqrt(2)).value


@pytest.mark.parametrize(
    "f,args,name",
    [
        (fano_advantage_gaussian, (0.0, 10), "noise_multiplier"),
        (fano_advantage_gaussian, (float("nan"), 10), "noise_multiplier"),
        (fano_advantage_gaussian, (1.0, 1), "prior_size"),
        (fano_advantage_gaussian, (1.0, 10, -1.0), "sensitivity"),
        (fano_advantage_from_mi, (-0.1, 10), "mutual_information"),
        (fano_advantage_from_mi, (float("inf"), 10), "mutual_information"),
        (fano_advantage_from_mi, (0.1, 2.5), "prior_size"),
    ],
)
def test_rejects_bad_input(f, args, name):
    with pytest.raises((ValueError, TypeError), match=name):
        f(*args)
