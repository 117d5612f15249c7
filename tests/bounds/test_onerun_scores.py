"""From canary scores to guesses and a validly selected one-run bound (bounds.onerun_scores)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from rerokit.bounds.onerun import fdp_rejects, gdp_inverse_blowup
from rerokit.bounds.onerun_scores import (
    audit_scores,
    canary_directions,
    count_correct,
    default_guess_counts,
    gaussian_canary_llr,
)


def test_count_correct_takes_the_largest_margins():
    scores = np.array([[0.0, 5.0], [1.0, 0.0], [0.0, 0.1], [3.0, 0.0]])
    secrets = np.array([1, 1, 1, 0])
    # margins 5, 1, 0.1, 3 -> the two most confident are slots 0 and 3, both right
    assert count_correct(scores, secrets, 2) == 2
    # slot 1 (margin 1) guesses candidate 0, wrong
    assert count_correct(scores, secrets, 3) == 2
    assert count_correct(scores, secrets, 4) == 3


def test_membership_scores_are_centred_at_the_median():
    s = np.array([10.0, 11.0, 12.0, 20.0, 0.0])
    present = np.array([0, 1, 1, 1, 0])
    # median 11: most extreme are 20 (present: right) and 0 (absent: right)
    assert count_correct(s, present, 2) == 2


def test_llr_is_the_mixture_likelihood_ratio():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 2))
    V = canary_directions("reconstruction", 3)
    q, s = 0.3, 1.7
    got = gaussian_canary_llr(x, V, q, s)
    for a in range(3):
        p1 = (1 - q) * norm.pdf(x, scale=s).prod(1) + q * norm.pdf(x - V[a], scale=s).prod(1)
        p0 = norm.pdf(x, scale=s).prod(1)
        np.testing.assert_allclose(got[:, a], np.log(p1 / p0), rtol=1e-9, atol=1e-12)
    # q = 1: the Gaussian log-likelihood ratio itself
    np.testing.assert_allclose(gaussian_canary_llr(x, V, 1.0, s)[:, 0],
                               np.log(norm.pdf(x - V[0], scale=s).prod(1) / norm.pdf(x, scale=s).prod(1)))


def test_bonferroni_selection_reports_the_best_count_at_the_corrected_level():
    rng = np.random.default_rng(1)
    m = 2000
    b = rng.random(m) < 0.5
    s = rng.normal(size=m) + 2.0 * b
    r = audit_scores(np.stack([np.zeros(m), s], 1), b.astype(int))
    counts = default_guess_counts(m)
    assert len(r.tried) == len(counts) and r.bound.thresholds_tried == len(counts)
    assert r.bound.significance == pytest.approx(0.05 / len(counts))
    assert r.bound.mu_lower == max(t.mu_lower for t in r.tried) > 0
    assert "Bonferroni" in r.bound.selection


def test_split_selection_bounds_the_other_half():
    rng = np.random.default_rng(2)
    m = 1000
    b = rng.random(m) < 0.5
    s = rng.normal(size=m) + 2.0 * b
    r = audit_scores(np.stack([np.zeros(m), s], 1), b.astype(int), selection="split", seed=3)
    assert r.bound.canaries == 500 and r.bound.thresholds_tried == 1
    assert r.bound.selection.startswith("split")
    assert r.bound.epsilon_lower > 0


def test_the_whole_pipeline_rejects_the_true_claim_at_most_at_level():
    """Idealized white-box statistic (Gaussian LLR at q = 1, mu = 1.5), guesses by margin, the
    number of guesses chosen by Bonferroni over 8 counts: the true mu-GDP claim is rejected in at
    most ~5 % of 300 runs, while a claim of half the leakage (mu / 3) is rejected in most (the test
    has power)."""
    rng = np.random.default_rng(4)
    mu, m, runs = 1.5, 400, 300
    inv, inv_false = gdp_inverse_blowup(mu), gdp_inverse_blowup(mu / 3)
    V = canary_directions("membership", 2)
    rejected = rejected_false = 0
    for _ in range(runs):
        b = rng.random(m) < 0.5
        x = rng.normal(size=(m, 1)) / mu + b[:, None]  # residual in units of C with sigma = 1/mu
        llr = gaussian_canary_llr(x, V, 1.0, 1.0 / mu)
        scores = np.concatenate([np.zeros((m, 1)), llr], 1)
        counts = default_guess_counts(m)
        tau = 0.05 / len(counts)
        cs = [count_correct(scores, b.astype(int), g) for g in counts]
        rejected += any(fdp_rejects(inv, m, g, c, 2, tau) for g, c in zip(counts, cs))
        rejected_false += any(fdp_rejects(inv_false, m, g, c, 2, tau) for g, c in zip(counts, cs))
    assert rejected / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)
    assert rejected_false / runs > 0.5


def test_bad_scores():
    with pytest.raises(ValueError):
        count_correct(np.zeros((3, 1)), [0, 0, 0], 1)
    with pytest.raises(ValueError):
        count_correct(np.zeros((3, 2)), [0, 2, 0], 1)
    with pytest.raises(ValueError):
        count_correct(np.array([[0.0, np.nan]]), [0], 1)
    with pytest.raises(ValueError):
        audit_scores(np.zeros((3, 2)), [0, 1, 0], selection="best")
