"""Extremes found by the hostile probe (issue 20) and fixed at their root: memory of the threshold
tests between far-apart windows, dp-accounting's negative RDP round-off, the memory estimate of
the PLD accounting, the neighbouring relation of ``bound fano --rdp-epsilon``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rerokit.bounds.pld.discrete import GridPMF, ThresholdTests


def _pmf(offset: int, n: int, seed: int) -> GridPMF:
    w = np.random.default_rng(seed).random(n)
    return GridPMF(0.01, offset, w / w.sum() * (1 - 1e-12), 1e-15, 1e-16, 1e-18)


def _brute_points(t: ThresholdTests):
    """Every label from the lowest window start to the highest window end (the former evaluation)."""
    lo = min(t.p.offset, t.q.offset)
    hi = max(t.p.offset + t.p.pmf.size, t.q.offset + t.q.pmf.size)
    return t.points_at(np.arange(lo, hi + 1))


@pytest.mark.parametrize("p_off, q_off", [(300, -200), (-200, 300), (0, 5), (40, 0), (-7, -7)])
def test_threshold_points_are_the_same_set_without_the_gap(p_off, q_off):
    """The points between two far-apart windows repeat the window edges' points: the maxima the
    membership numbers take over them are unchanged (overlapping, adjacent and far windows)."""
    t = ThresholdTests(_pmf(p_off, 50, 1), _pmf(q_off, 60, 2))
    p_lo, q_hi = t.points()
    bp, bq = _brute_points(t)
    assert set(zip(p_lo.tolist(), q_hi.tolist())) == set(zip(bp.tolist(), bq.tolist()))
    for s in (1.0, math.e, 0.3):
        assert np.max(p_lo - s * q_hi) == np.max(bp - s * bq)
        assert np.max((1 - q_hi) - s * (1 - p_lo)) == np.max((1 - bq) - s * (1 - bp))


def test_threshold_points_hold_the_windows_not_the_gap():
    """sigma 1, q 0.5, T 3e6 put the windows 6e7 labels apart: 2.7 GB of label arrays. Now the size
    is that of the windows, whatever the gap."""
    t = ThresholdTests(_pmf(10**12, 100, 3), _pmf(-(10**12), 100, 4))
    p_lo, q_hi = t.points()
    assert p_lo.size == q_hi.size <= 202
    assert np.max(p_lo - q_hi) > 0.99  # the two laws are told apart with certainty


def test_pld_memory_estimate_follows_the_window_not_the_steps():
    """The estimate of ``bound dpsgd --noise-multiplier 1 --sample-rate 0.5`` grows like the
    window (sqrt of the steps) and is bounded by the engine's largest window; the issue's T = 1e7
    is answered on a machine with a few GB."""
    from rerokit._resources import _PLD_MAX_BYTES, dpsgd_accounting_bytes

    est = [dpsgd_accounting_bytes([(1.0, 0.5, t)]) for t in (10**6, 10**7, 10**8, 10**9, 10**12)]
    assert all(a <= b for a, b in zip(est, est[1:]))
    assert est[1] < 2e9
    assert est[-1] == _PLD_MAX_BYTES
    assert dpsgd_accounting_bytes([(1.0, 0.001, 10**6)]) < est[0]


@pytest.mark.parametrize("seg", [(1e6, 1e-6, 10), (1e6, 1e-6, 1), (1e150, 1e-6, 10), (1e3, 0.5, 10**6)])
def test_add_remove_order2_rdp_at_extreme_sigma_is_a_positive_number(seg):
    """dp-accounting returns a negative RDP at sigma 1e6, q 1e-6 (round-off); it raised. Order 2
    now has the closed form T log(1 + q^2 (e^{1/sigma^2} - 1)) there, never below the truth."""
    from rerokit.accounting.events import rdp_epsilon_order2

    eps, order = rdp_epsilon_order2([seg])
    sigma, q, steps = seg
    truth = steps * math.log1p(q * q * math.expm1(1 / sigma**2))
    assert order == 2.0 and eps > 0 and math.isfinite(eps)
    assert eps == pytest.approx(max(truth, steps * 1e-300), rel=1e-9)


def test_fano_rdp_epsilon_help_names_the_neighbouring_relation(capsys):
    from rerokit.cli import main

    with pytest.raises(SystemExit):
        main(["bound", "fano", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")
    assert "REPLACE-ONE neighbours" in text and "add/remove" in text


# ----------------------------------------------------------------------------- API extremes (probe, issue 20)
def _refusals():
    import rerokit
    from rerokit.bounds import fano, gaussian, onerun, onerun_scores, priors, schedule, uninformed

    big = 10**400
    return [
        (rerokit.dpsgd_tradeoff, dict(noise_multiplier=1.0, sample_rate=0.01, steps=10, group_size=10**6),
         "group_size"),
        (rerokit.dpsgd_tradeoff, dict(noise_multiplier=1.0, sample_rate=0.01, steps=10, group_size=1e308),
         "group_size"),
        (rerokit.epsilon_dpsgd, dict(noise_multiplier=1.0, sample_rate=0.01, steps=10, group_size=10**6), "group_size"),
        (rerokit.reconstruction_risk, dict(noise_multiplier=1.0, sample_rate=0.01, steps=10, kappa=0.1,
                                           sampler=rerokit.Sampling("poisson", 10**6)), "examples_per_user"),
        (rerokit.noise_multiplier_for_epsilon, dict(epsilon=1.0, delta=1e-5, sample_rate=0.01, steps=10, tol=1e-300),
         "tol"),
        (gaussian.gdp_mu, dict(epsilon=1.0, delta=1e-5, rtol=1e-300), "rtol"),
        (gaussian.gaussian_epsilon, dict(delta=1e-5, mu=1.0, rtol=big), "rtol"),
        (fano.fano_advantage_rdp, dict(epsilon=1.0, prior_size=math.inf), "prior_size"),
        (onerun.steinke_p_value, dict(canaries=big, guesses=50, correct=40, epsilon=1.0, delta=1e-5), "canaries"),
        (onerun.steinke_p_value, dict(canaries=100, guesses=50, correct=40, epsilon=1.0, delta=big), "delta"),
        (onerun_scores.simplex, dict(k=10**6), "k"),
        (priors.log10_kappa, dict(log_kappa=big), "log_kappa"),
        (schedule.epochs_touched, dict(sample_rate=0.5, steps=math.inf), "steps"),
        (schedule.epochs_touched, dict(sample_rate=-math.inf, steps=10), "sample_rate"),
        (uninformed.rows_prop1_as_printed, dict(clip=1.0, min_norm=1e-320), "min_norm"),
    ]


@pytest.mark.parametrize("i", range(15))
def test_api_extremes_are_a_value_or_type_error_naming_the_parameter(i, monkeypatch):
    """Each raised OverflowError, ZeroDivisionError or MemoryError, or ran without end, before."""
    import rerokit._resources as res

    monkeypatch.setattr(res, "memory_limit", lambda: 3 * 10**9)
    fn, kw, name = _refusals()[i]
    with pytest.raises((ValueError, TypeError), match=name.replace("(", r"\(")):
        fn(**kw)


def test_api_extremes_that_have_an_answer_get_it():
    """sigma^2 underflowing (sigma 1e-300), sigma 1e308 or q 1e-300 in the step search's start, a
    membership prior of 1e-320 (e^eps overflowed), a tiny min_norm in the noise calibration."""
    import rerokit
    from rerokit.bounds import onerun, uninformed

    r = rerokit.reconstruction_risk(noise_multiplier=1e-300, sample_rate=0.01, steps=10, kappa=0.1)
    assert r.gamma == pytest.approx(1 - 0.99**10 * 0.9)  # the noiseless bound 1 - (1 - q)^T (1 - kappa)
    m = rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.01, steps=10, kappa=0.1,
                                    options=rerokit.RiskOptions(prior_membership=1e-320)).membership
    assert m.bayes_accuracy == 1.0 and m.bayes_accuracy_interval == (1.0, 1.0)
    for sigma, q in ((1e308, 0.01), (1.0, 1e-300)):
        c = rerokit.calibrate_steps(0.5, sigma, q, 0.1, max_steps=1000)
        assert c.steps == 1000 and c.capped  # every T up to the cap meets the target
    assert onerun.gdp_inverse_blowup(10**400)(0.5) == 0.0  # mu = inf: no guarantee
    b = uninformed.calibrate_noise_mse(eta=0.1, target_gamma=0.5, dim=10, min_norm=1e-300)
    assert math.isfinite(b.value) and b.value > 1e250


def test_extreme_schedules_get_an_answer_not_an_internal_error():
    """sigma 1e308 (mu underflowed to 0: 'mu must be > 0'), T 1e308 (mu 5e307 beyond the search's
    range), q 1e-320 in the epsilon search (NaN Chernoff window): answers now; a grid step of 1e308
    is refused naming value_discretization_interval (it gave NaN windows)."""
    import rerokit
    from rerokit.bounds.gaussian import gaussian_epsilon

    assert gaussian_epsilon(1e-5, 0.0) == 0.0 and gaussian_epsilon(1e-5, 1e200) == math.inf
    r = rerokit.reconstruction_risk(noise_multiplier=1e308, sample_rate=0.01, steps=10, kappa=0.1)
    assert r.gamma == pytest.approx(0.1) and r.epsilon == 0.0
    r = rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.01, steps=1e308, kappa=0.1)
    assert r.gamma == 1.0 and r.epsilon > 1e300
    with pytest.raises(ValueError, match="value_discretization_interval"):
        rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.01, steps=10, kappa=0.1,
                                    options=rerokit.RiskOptions(value_discretization_interval=1e308))
    # q 1e-320: delta(0) <= T q, so epsilon is 0 at every noise multiplier (exactly so since the step
    # masses are rounded in the safe stochastic order; it was the q = 1 fallback, 5e8 at sigma 1e-4,
    # when the PLD's window came out NaN); the calibration then meets its documented floor
    assert rerokit.epsilon_dpsgd(1e-4, 1e-320, 10, 1e-5) == 0.0
    # ... and the refusal says why (the sampling alone is (0, delta)-DP), not "non-private"
    with pytest.raises(ValueError, match=r"needs no noise.*1-\(1-q\)\^T = 1e-319 <= delta"):
        rerokit.noise_multiplier_for_epsilon(1.0, 1e-5, 1e-320, 10)


@pytest.mark.parametrize("value", [math.nan, "1", [1.0], 1])
def test_flags_and_unused_thresholds_are_checked_not_read_by_truthiness(value):
    """Flags took nan, "1" or [1.0] as True; an eta that the prior has no use for was not looked at."""
    import rerokit

    with pytest.raises(TypeError, match="comparisons"):
        rerokit.rero_dpsgd(1.0, 0.01, 10, 0.1, comparisons=value)
    if not isinstance(value, int):
        with pytest.raises((TypeError, ValueError), match="eta"):
            rerokit.RiskOptions(eta=value)


@pytest.mark.parametrize("value", [0.1, math.nan, True, "0.1"])
def test_fprs_as_a_bare_value_is_a_type_error_naming_fprs(value):
    import rerokit

    with pytest.raises(TypeError, match="fprs"):
        rerokit.RiskOptions(fprs=value)


def test_gamma_near_one_at_the_smallest_noise_multiplier_is_finite_and_exact():
    """sigma 1e-4 (losses ~5e7) with gamma near 1: the lower-tail tilt's factors overflowed (an
    OverflowError, or numpy's overflow warning) and escaped as a traceback. Now that route says "not
    applicable" and the plain bracket answers. There a drawn step reveals the target, so gamma =
    kappa + (1 - kappa)(1 - (1-q)^T) to double precision (the e^-5e7 remainder is far below u)."""
    import warnings

    import rerokit

    truth = 0.1 + 0.9 * -math.expm1(100 * math.log1p(-0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        b = rerokit.rero_dpsgd(1e-4, 0.1, 100, 0.1, comparisons=False)
    assert b.interval[0] <= truth * (1 + 1e-15) and b.value >= truth * (1 - 1e-15)
    assert b.value - b.interval[0] <= 1e-9
