"""Expected PSNR, the sample-NCC law and NMI of the uninformed analytic attack, checked by simulating the attack
(X_hat = X + s Z, "From Mean to Extreme" Eq. 20) and, for NMI, by known cases and scikit-image."""

import math

import numpy as np
import pytest
from scipy import stats

from rerokit.bounds.uninformed import ncc_value
from rerokit.bounds.uninformed_metrics import expected_psnr, ncc_distribution, normalized_mutual_information
from rerokit.bounds.uninformed_metrics import psnr_jensen_gap, psnr_of_expected_mse


def _attack(x: np.ndarray, sigma: float, releases: int, draws: int, seed: int) -> np.ndarray:
    """Draws of the averaged reconstruction of ``releases`` matched releases, each X + sigma ||X|| Z."""
    rng = np.random.default_rng(seed)
    s = sigma * np.linalg.norm(x)
    return x + s * rng.standard_normal((draws, releases, x.size)).mean(axis=1)


@pytest.mark.parametrize("dim,sigma,releases", [(1, 0.3, 1), (4, 0.1, 1), (64, 0.05, 3)])
def test_expected_psnr_matches_simulation_and_exceeds_the_printed_expression(dim, sigma, releases):
    rng = np.random.default_rng(dim)
    x = rng.uniform(0.2, 1.0, dim)
    data_range = 1.0
    xh = _attack(x, sigma, releases, 40_000, seed=1)
    psnr = 10 * np.log10(data_range**2 / np.mean((xh - x) ** 2, axis=1))
    se = psnr.std() / math.sqrt(psnr.size)
    e = expected_psnr(sigma, float(np.linalg.norm(x)), dim, data_range, releases)
    assert abs(e - psnr.mean()) <= 4 * se
    printed = psnr_of_expected_mse(sigma, float(np.linalg.norm(x)), data_range, releases)
    assert e - printed == pytest.approx(psnr_jensen_gap(dim), abs=1e-12)
    assert printed < psnr.mean() - 4 * se  # the earlier version's "upper bound" is below the attack's mean


def test_psnr_jensen_gap_values():
    assert psnr_jensen_gap(1) == pytest.approx(10 / math.log(10) * (math.log(0.5) + 1.9635100260214235), rel=1e-12)
    assert psnr_jensen_gap(10_000) == pytest.approx(10 / math.log(10) / 10_000, rel=1e-3)
    assert expected_psnr(0.1, 2.0, 8, 1.0) > expected_psnr(0.1, 3.0, 8, 1.0)  # decreasing in ||X||


@pytest.mark.parametrize("dim,sigma", [(3, 0.3), (16, 0.05), (64, 0.02)])
def test_ncc_law_matches_simulated_sample_ncc(dim, sigma):
    rng = np.random.default_rng(dim)
    x = rng.uniform(0.0, 1.0, dim)
    xh = _attack(x, sigma, 1, 20_000, seed=2)
    xc = x - x.mean()
    yc = xh - xh.mean(axis=1, keepdims=True)
    ncc = (yc @ xc) / (np.linalg.norm(xc) * np.linalg.norm(yc, axis=1))  # Pearson correlation per draw
    law = ncc_distribution(sigma, float(np.linalg.norm(x)), float(x.var()), dim)
    assert stats.kstest(ncc, law.cdf).pvalue > 1e-3
    assert law.mean() == pytest.approx(ncc.mean(), abs=4 * ncc.std() / math.sqrt(ncc.size) + 1e-9)
    c = float(np.median(ncc))
    assert law.sf(c) == pytest.approx(np.mean(ncc >= c), abs=0.02)
    assert law.cdf(c) + law.sf(c) == pytest.approx(1.0)
    draws = law.sample(20_000, seed=5)
    assert stats.ks_2samp(draws, ncc).pvalue > 1e-3


def test_ncc_law_two_coordinates_and_large_dimension():
    law = ncc_distribution(0.5, 1.0, 0.2, 2)
    p = stats.norm.cdf(law.noncentrality)
    assert law.sf(1.0) == pytest.approx(p) and law.cdf(0.0) == pytest.approx(1 - p)
    assert law.mean() == pytest.approx(2 * p - 1)
    # large N: the sample NCC concentrates at 004 Prop. 6's value sqrt(1 / (1 + s^2 / Var(x)))
    n, sigma, norm = 20_000, 0.004, 80.0
    var = norm**2 / n * 0.6
    big = ncc_distribution(sigma, norm, var, n)
    assert big.mean() == pytest.approx(ncc_value(sigma, norm, var), abs=2e-3)


def test_nmi_known_cases_and_scikit_image():
    rng = np.random.default_rng(0)
    a = rng.uniform(size=(32, 32))
    assert normalized_mutual_information(a, a) == pytest.approx(2.0)
    x = np.repeat(np.arange(4.0), 1000)  # uniform on 4 values; y = x mod 2: (ln 4 + ln 2) / ln 4 = 1.5
    assert normalized_mutual_information(x, x % 2, bins=4) == pytest.approx(1.5, abs=1e-12)
    ind = normalized_mutual_information(rng.uniform(size=200_000), rng.uniform(size=200_000), bins=10)
    assert 1.0 <= ind < 1.001
    assert normalized_mutual_information(np.zeros(10), rng.uniform(size=10)) == pytest.approx(1.0)
    skm = pytest.importorskip("skimage.metrics")
    b = a + 0.1 * rng.standard_normal(a.shape)
    for bins in (10, 100):
        assert normalized_mutual_information(a, b, bins=bins) == pytest.approx(
            skm.normalized_mutual_information(a, b, bins=bins), rel=1e-12)
    # more noise, less information: NMI falls towards 1 (the earlier version's Fig. 4 trend)
    vals = [normalized_mutual_information(a, a + s * rng.standard_normal(a.shape), bins=16) for s in (0.01, 0.1, 1, 10)]
    assert vals == sorted(vals, reverse=True)


def test_bad_inputs_named():
    with pytest.raises(ValueError, match="var_x"):
        ncc_distribution(0.1, 1.0, 0.5, 4)  # > ||X||^2 / N
    with pytest.raises(ValueError, match="dim"):
        ncc_distribution(0.1, 1.0, 0.1, 1)
    with pytest.raises(ValueError, match="data_range"):
        expected_psnr(0.1, 1.0, 4, 0.0)
    with pytest.raises(ValueError, match="same shape"):
        normalized_mutual_information(np.zeros(4), np.zeros(5))
    with pytest.raises(ValueError, match="finite"):
        normalized_mutual_information(np.array([0.0, np.nan]), np.zeros(2))
    with pytest.raises(ValueError, match="c must"):
        ncc_distribution(0.1, 1.0, 0.1, 4).cdf(float("nan"))
