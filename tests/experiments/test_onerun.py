"""One-run audit on rerokit's engine: validity on seeded runs, noise bugs caught, tightness, resume."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rerokit.bounds.onerun_scores import simplex
from rerokit.experiments.onerun import config_from_args, run_one_run_audit

SMALL = dict(hidden=(20,), steps=10, n_known=200)  # 64-20-10 MLP: 1,510 parameters


def _cfg(epsilon=None, sigma=None, train=None, **audit):
    return config_from_args(epsilon=epsilon, noise_multiplier=sigma, delta=1e-5, train={**SMALL, **(train or {})},
                            audit={"canaries": 1000, **audit})


def test_simplex_geometry():
    for k in (2, 3, 5, 10):
        v = simplex(k)
        assert v.shape == (k, k - 1)
        np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-12)
        d = np.linalg.norm(v[:, None] - v[None], axis=-1)[~np.eye(k, dtype=bool)]
        np.testing.assert_allclose(d, math.sqrt(2 * k / (k - 1)), atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_whitebox_lower_bounds_below_certified(seed):
    r = run_one_run_audit(_cfg(epsilon=4.0), seed=seed)
    assert 0 < r["epsilon_lower"] <= r["certified_epsilon"]
    assert 0 < r["mu_lower"] <= r["certified_mu"]
    assert r["claim_rejected"] is False
    assert r["correct"] <= r["correct_upper"]
    assert r["settings"]["seed"] == seed and r["seed"] == seed


def test_epsilon_lower_rises_with_epsilon():
    lo = run_one_run_audit(_cfg(epsilon=1.0), seed=3)["epsilon_lower"]
    hi = run_one_run_audit(_cfg(epsilon=8.0), seed=3)["epsilon_lower"]
    assert hi > lo


def test_halving_the_real_noise_rejects_the_claim():
    cfg = _cfg(epsilon=2.0)
    bug = _cfg(epsilon=2.0, actual_noise_multiplier=cfg.train.noise_multiplier / 2)
    assert run_one_run_audit(cfg, seed=4)["claim_rejected"] is False
    assert run_one_run_audit(bug, seed=4)["claim_rejected"] is True


def test_reconstruction_antipodal_matches_the_rero_bound():
    """k = 2 antipodal gradient canaries at q = 1: the optimal guess succeeds with Phi(sqrt(T)/sigma),
    exactly the ReRo bound at kappa = 1/2 (Hayes et al. 2023 Thm 2): the bound is met within the
    accuracy's sampling error (3 binomial standard errors; never significantly above it)."""
    r = run_one_run_audit(_cfg(sigma=2.0, game="reconstruction", options=2), seed=5)
    g, acc, m = r["rero_gamma"], r["accuracy_all"], r["canaries"]
    assert g == pytest.approx(0.5 * math.erfc(-math.sqrt(10) / 2 / math.sqrt(2)), abs=1e-4)  # Phi(sqrt(T)/sigma)
    assert abs(acc - g) <= 3 * math.sqrt(g * (1 - g) / m)
    assert r["accuracy_interval"][0] <= g
    assert r["epsilon_lower"] <= r["certified_epsilon"] and r["mu_lower"] <= r["certified_mu"]


def test_reconstruction_k4_subsampled_runs_and_is_valid():
    r = run_one_run_audit(_cfg(epsilon=4.0, game="reconstruction", options=4, canaries=400,
                               train={"sample_rate": 0.5}), seed=6)
    assert r["epsilon_lower"] <= r["certified_epsilon"]
    assert r["accuracy_all"] <= r["accuracy_interval"][1]
    assert r["claim_rejected"] is False


def test_blackbox_runs_and_is_valid():
    r = run_one_run_audit(_cfg(epsilon=4.0, threat="black-box", canaries=300), seed=7)
    assert 0 <= r["epsilon_lower"] <= r["certified_epsilon"]
    assert r["claim_rejected"] is False


def test_result_file_and_resume(tmp_path):
    out = tmp_path / "one.json"
    cfg = _cfg(epsilon=4.0, canaries=200)
    r = run_one_run_audit(cfg, seed=8, out=str(out))
    on_disk = json.loads(out.read_text())
    assert on_disk["kind"] == "one-run" and on_disk["epsilon_lower"] == r["epsilon_lower"]
    again = run_one_run_audit(cfg, seed=8, out=str(out), resume=True)
    assert again == on_disk
    with pytest.raises(ValueError, match="other settings"):
        run_one_run_audit(cfg, seed=9, out=str(out), resume=True)


def test_too_many_canaries_for_the_model():
    with pytest.raises(ValueError, match="parameters"):
        run_one_run_audit(_cfg(epsilon=4.0, canaries=1600), seed=0)
    with pytest.raises(ValueError, match="options must be 2"):
        _cfg(epsilon=4.0, options=3)


def test_whitebox_input_canaries_few_slots_see_the_canaries():
    """Input-space canaries scored by the log-likelihood statistic from every iterate: with few slots
    (little interference between canaries) and little noise, most guesses are right; the bounds stay
    below the certified ones."""
    r = run_one_run_audit(_cfg(epsilon=64.0, canary="input", canaries=20, train={"steps": 20}), seed=10)
    assert r["accuracy_all"] > 0.6
    assert r["epsilon_lower"] <= r["certified_epsilon"] and r["claim_rejected"] is False
    rr = run_one_run_audit(_cfg(epsilon=4.0, canary="input", canaries=30, game="reconstruction", options=3), seed=11)
    assert rr["settings"]["canary"] == "input" and rr["epsilon_lower"] <= rr["certified_epsilon"]
