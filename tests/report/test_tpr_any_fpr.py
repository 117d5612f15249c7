"""``ReconstructionRisk.membership.tpr_at_fpr`` answers any FPR from the same certified curve."""

from __future__ import annotations

import numpy as np
import pytest

import rerokit


@pytest.fixture(scope="module")
def risk():
    return rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.01, steps=1000, prior=10)


def test_any_fpr_equals_a_fresh_tradeoff_curve(risk):
    # independent: a second PLD build through the public dpsgd_tradeoff
    c = rerokit.dpsgd_tradeoff(noise_multiplier=1.0, sample_rate=0.01, steps=1000)
    xs = np.array([0.0, 1e-4, 0.02, 0.05, 0.37, 1.0])
    want = c.tpr_at_fpr(xs)
    t = risk.membership.tpr_at_fpr
    assert t(xs).tolist() == want.upper.tolist()
    for i, x in enumerate(xs):
        assert t[float(x)] == t(float(x)) == want.upper[i]
        assert t.interval(float(x)) == (want.lower[i], want.upper[i])


def test_the_precomputed_points_stay_a_dict(risk):
    t = risk.membership.tpr_at_fpr
    assert sorted(t) == [0.001, 0.01, 0.1] and t[0.01] == risk.membership.tpr_intervals[0.01][1]
    assert [p["fpr"] for p in risk.membership.to_dict()["tpr_at_fpr"]] == [0.001, 0.01, 0.1]
    assert 0.05 not in t  # membership tests only the stored points; lookups compute the rest


def test_tpr_at_gamma_s_fpr_is_gamma(risk):
    assert risk.membership.tpr_at_fpr(risk.kappa) == pytest.approx(risk.gamma, rel=1e-12)


@pytest.mark.parametrize("bad", [1.5, -0.1])
def test_out_of_range_fpr_is_a_value_error(risk, bad):
    with pytest.raises(ValueError, match="fpr"):
        risk.membership.tpr_at_fpr(bad)
    with pytest.raises(KeyError):
        risk.membership.tpr_at_fpr["0.05"]
