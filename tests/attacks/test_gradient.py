"""Gradient-based attack (Hayes et al. 2023 Eq. 1) and its App. D prior-matching post-processing."""

import numpy as np
import pytest
import torch

from rerokit.attacks.gradient import GradientAttack, gradient_attack, gradient_objective, mse, prior_match_success
from rerokit.data import load_dataset
from rerokit.training.grads import per_sample_clipped_grads
from rerokit.training.models import FunctionalModel, make_mlp


@pytest.fixture(scope="module")
def setting():
    torch.manual_seed(0)
    ds = load_dataset("digits")
    fm = FunctionalModel(make_mlp(64, [10], 10).double())
    th0 = fm.init_flat(0).double()
    g = torch.Generator().manual_seed(1)
    thetas = th0 + 0.3 * torch.randn(6, th0.shape[0], generator=g, dtype=torch.float64)
    x = torch.as_tensor(ds.X[7], dtype=torch.float64)
    y = torch.as_tensor(ds.y[7])
    C = 0.1
    gbar = torch.stack([per_sample_clipped_grads(fm, th, x[None], y[None], C)[0] for th in thetas])
    return ds, fm, thetas, x, y, C, gbar


def test_objective_matches_per_step_loop(setting):
    """Batched double-backward objective == sum_t ||clip(grad) - gbar_t||^2 / C^2 computed step
    by step with the training engine's per-sample clipped gradients."""
    ds, fm, thetas, x, y, C, gbar = setting
    Z = torch.rand(3, *x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    got = gradient_objective(fm, thetas, gbar, Z, y, C).detach()
    for r in range(3):
        ref = sum(
            float(((per_sample_clipped_grads(fm, th, Z[r][None], y[None], C)[0] - gb) ** 2).sum())
            for th, gb in zip(thetas, gbar)
        ) / C**2
        assert float(got[r]) == pytest.approx(ref, rel=1e-10)
    assert float(gradient_objective(fm, thetas, gbar, x[None], y, C).detach()[0]) == pytest.approx(0.0, abs=1e-20)


def test_recovers_target_without_noise(setting):
    ds, fm, thetas, x, y, C, gbar = setting
    out = gradient_attack(fm, thetas, gbar, y, C, tuple(x.shape), attack=GradientAttack(iterations=150, restarts=1), seed=0)
    assert out.loss < 1e-6
    assert mse(out.z_hat, x) < 1e-4
    assert out.z_hat.min() >= 0 and out.z_hat.max() <= 1
    pool = np.delete(ds.X, 7, axis=0)
    assert prior_match_success(out.z_hat, x, pool, 128) == 1.0


def test_noise_degrades_reconstruction(setting):
    ds, fm, thetas, x, y, C, gbar = setting
    noisy = gbar + 3.0 * C * torch.randn(gbar.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    out = gradient_attack(fm, thetas, noisy, y, C, tuple(x.shape), attack=GradientAttack(iterations=40, restarts=1), seed=0)
    assert mse(out.z_hat, x) > 1e-3


def test_prior_match_exact_equals_app_d_sampling():
    """Exact hypergeometric probability == App. D's procedure (draw n-1 pool points, check
    nearest) estimated by Monte Carlo, within a 4-sigma band."""
    rng = np.random.default_rng(0)
    pool = rng.random((60, 5))
    z = rng.random(5)
    z_hat = z + 0.25 * rng.standard_normal(5)
    for n in (2, 8, 30):
        p = prior_match_success(z_hat, z, pool, n)
        draws = 20000
        wins = 0
        for _ in range(draws):
            idx = rng.choice(60, n - 1, replace=False)
            d_other = np.sum((pool[idx] - z_hat) ** 2, axis=1)
            wins += np.sum((z - z_hat) ** 2) < d_other.min()
        sd = np.sqrt(max(p * (1 - p), 1e-4) / draws)
        assert abs(wins / draws - p) < 4 * sd
    assert prior_match_success(z, z, pool, 10) == 1.0
    # z_hat on a pool point: success needs that point left out of the draw.
    assert prior_match_success(pool[0], z, pool, 61) == 0.0
    m = int(np.sum(np.sum((pool - pool[0]) ** 2, 1) <= np.sum((z - pool[0]) ** 2)))
    assert prior_match_success(pool[0], z, pool, 2) == pytest.approx(1 - m / 60)


def test_bad_input(setting):
    ds, fm, thetas, x, y, C, gbar = setting
    with pytest.raises(ValueError, match="prior_size"):
        prior_match_success(x, x, ds.X[:3], 5)
    with pytest.raises(ValueError, match="prior_size"):
        prior_match_success(x, x, ds.X[:3], 1)
    with pytest.raises(ValueError, match="restarts"):
        gradient_attack(fm, thetas, gbar, y, C, tuple(x.shape), attack=GradientAttack(restarts=0))
    with pytest.raises(TypeError, match="attack"):
        gradient_attack(fm, thetas, gbar, y, C, tuple(x.shape), attack={"restarts": 1})
    with pytest.raises(ValueError, match="clip"):
        gradient_objective(fm, thetas, gbar, x[None], y, -1.0)
    with pytest.raises(ValueError, match="thetas and gbar"):
        gradient_objective(fm, thetas, gbar[:2], x[None], y, C)
