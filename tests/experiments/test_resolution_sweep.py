"""The resolution sweep samples the optimal unbiased attack's law: its sampled metrics against the
closed forms (chi^2 law of the MSE, Prop. 6's NCC), at tiny scale."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rerokit.experiments.resolution_sweep import KIND, load_image, run_resolution_sweep, sweep_cell


def test_images_are_resized_into_the_unit_range():
    cam, ast = load_image("camera", 16), load_image("astronaut", 8)
    assert cam.shape == (1, 16, 16) and ast.shape == (3, 8, 8)
    assert 0 <= cam.min() and cam.max() <= 1 and cam.std() > 0.05


def test_sampled_mse_follows_the_scaled_chi2_law():
    x = load_image("camera", 8)
    X = x.reshape(-1)
    sigma, norm = 0.02, float(np.linalg.norm(X))
    rng = np.random.default_rng(3)
    cell = sweep_cell(x, sigma, 2000, rng, nmi_samples=2)
    # MSE ~ (sigma^2 ||X||^2 / N) chi^2_N: mean sigma^2 ||X||^2, standard error sqrt(2 / (N k)) relative
    assert cell["mse_law_mean"] == pytest.approx(sigma**2 * norm**2, rel=1e-12)
    se = cell["mse_law_mean"] * math.sqrt(2 / (64 * 2000))
    assert abs(cell["mse_mean"] - cell["mse_law_mean"]) < 4 * se
    scale = sigma**2 * norm**2 / 64
    assert cell["mse_law_q95"] == pytest.approx(scale * stats.chi2.ppf(0.95, 64), rel=1e-9)
    assert cell["psnr_law_median"] == pytest.approx(-10 * math.log10(scale * stats.chi2.ppf(0.5, 64)), rel=1e-9)
    # Prop. 6: the NCC's value and its bound (Var(x) <= ||X||^2 / N)
    assert cell["ncc_law"] == pytest.approx(math.sqrt(1 / (1 + sigma**2 * norm**2 / X.var())), rel=1e-12)
    assert cell["ncc_law"] <= cell["ncc_bound"] == pytest.approx(math.sqrt(1 / (1 + sigma**2 * 64)))
    assert abs(cell["ncc_mean"] - cell["ncc_law"]) < 0.02


def test_sweep_writes_labelled_rows_and_is_seeded(tmp_path):
    kw = dict(images=("astronaut",), resolutions=(4, 8), sigmas=(0.01, 0.1), samples=20, seed=5)
    a = run_resolution_sweep(tmp_path / "a", **kw)
    b = run_resolution_sweep(tmp_path / "b", **kw)
    assert [r["mse_mean"] for r in a["rows"]] == [r["mse_mean"] for r in b["rows"]]
    assert len(a["rows"]) == 4 and all(r["kind"] == KIND and "not a certified" in r["kind"] for r in a["rows"])
    assert (tmp_path / "a" / "resolution_sweep.png").stat().st_size > 0
    # higher resolution: same sigma, larger ||X||, larger MSE (the MSE is not scale-free)
    m = {(r["resolution"], r["sigma"]): r["mse_law_mean"] for r in a["rows"]}
    assert m[(8, 0.1)] > m[(4, 0.1)]
    with pytest.raises(ValueError, match="images"):
        run_resolution_sweep(tmp_path / "c", images=("lena",))
