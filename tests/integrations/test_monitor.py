"""rerokit.integrations._monitor: the callbacks' risk numbers and stopping rule, without any framework.

Every number is checked against an independent computation: the metrics against
``rerokit.reconstruction_risk`` of the same schedule, the gamma budget against
``rerokit.calibrate_steps`` (its own bisection on gamma alone) and against direct evaluation at
the budget and one step more.
"""

from __future__ import annotations

import math

import pytest

import rerokit
from rerokit.integrations._monitor import METRIC_PREFIX, RiskLimits, RiskMonitor

SIGMA, Q = 1.0, 0.05


class FakeAccountant:
    """The part of an Opacus accountant the monitor reads: ``history`` of (sigma, q, steps)."""

    def __init__(self, history=None):
        self.history = list(history or [])

    def step(self, sigma: float, q: float) -> None:
        if self.history and self.history[-1][:2] == (sigma, q):
            s, r, n = self.history[-1]
            self.history[-1] = (s, r, n + 1)
        else:
            self.history.append((sigma, q, 1))


def test_metrics_equal_reconstruction_risk_of_the_same_schedule():
    m = RiskMonitor(noise_multiplier=SIGMA, sample_rate=Q, prior=10, delta=1e-5)
    got = m.metrics(30)
    r = rerokit.reconstruction_risk(noise_multiplier=SIGMA, sample_rate=Q, steps=30, prior=10,
                                    options=rerokit.RiskOptions(fprs=(0.01,)))
    assert got["steps"] == 30
    assert got["gamma"] == pytest.approx(r.gamma, rel=1e-12)
    assert got["tpr_at_fpr_1pct"] == pytest.approx(r.membership.tpr_at_fpr[0.01], rel=1e-12)
    assert got["epsilon"] == pytest.approx(r.epsilon, rel=1e-12)
    assert set(m.log_metrics(30)) == {METRIC_PREFIX + k for k in ("steps", "gamma", "tpr_at_fpr_1pct", "epsilon")}


def test_before_the_first_step_the_risk_is_the_baseline():
    m = RiskMonitor(noise_multiplier=SIGMA, sample_rate=Q, prior=10)
    assert m.metrics(0) == {"steps": 0.0, "gamma": 0.1, "tpr_at_fpr_1pct": 0.01, "epsilon": 0.0, "kappa": 0.1}


def test_gamma_budget_matches_calibrate_steps_and_the_final_run_stays_below_the_limit():
    target = 0.16
    m = RiskMonitor(noise_multiplier=SIGMA, sample_rate=Q, prior=10, limits=RiskLimits(max_gamma=target))
    T = next(t for t in range(0, 10_000) if m.should_stop(t))
    assert m.stopped_early and m.stop_reason == "max_gamma"
    assert T == rerokit.calibrate_steps(target, SIGMA, Q, prior=10).steps
    assert m.metrics(T)["gamma"] <= target < m.metrics(T + 1)["gamma"]


def test_the_first_limit_reached_stops_and_is_named():
    # epsilon 1.5 is reached before gamma 0.3 at these settings
    m = RiskMonitor(noise_multiplier=SIGMA, sample_rate=Q, prior=10, limits=RiskLimits(max_gamma=0.3, max_epsilon=1.5))
    T = next(t for t in range(0, 10_000) if m.should_stop(t))
    assert m.stop_reason == "max_epsilon"
    assert m.metrics(T)["epsilon"] <= 1.5 < m.metrics(T + 1)["epsilon"]
    assert m.metrics(T)["gamma"] <= 0.3


def test_max_tpr_limit():
    m = RiskMonitor(noise_multiplier=SIGMA, sample_rate=Q, prior=10, limits=RiskLimits(max_tpr=0.02))
    T = next(t for t in range(0, 10_000) if m.should_stop(t))
    assert m.stop_reason == "max_tpr"
    assert m.metrics(T)["tpr_at_fpr_1pct"] <= 0.02 < m.metrics(T + 1)["tpr_at_fpr_1pct"]


def test_a_limit_below_one_step_stops_before_training():
    m = RiskMonitor(noise_multiplier=0.5, sample_rate=1.0, prior=10, limits=RiskLimits(max_gamma=0.11))
    assert m.should_stop(0) and m.stopped_early


def test_a_limit_beyond_the_planned_steps_never_stops():
    m = RiskMonitor(noise_multiplier=SIGMA, sample_rate=Q, prior=10, limits=RiskLimits(max_gamma=0.9))
    assert not any(m.should_stop(t, max_steps=50) for t in range(50))
    assert not m.stopped_early


def test_accountant_history_is_read_and_a_new_setting_resolves_the_budget():
    acc = FakeAccountant()
    m = RiskMonitor(acc, prior=10, limits=RiskLimits(max_gamma=0.2))
    assert not m.should_stop(0)  # nothing known before the first step
    for _ in range(5):
        acc.step(SIGMA, Q)
    assert m.steps(123) == 5  # the accountant's count, not the trainer's
    direct = rerokit.reconstruction_risk([(SIGMA, Q, 5)], prior=10).gamma
    assert m.metrics(123)["gamma"] == pytest.approx(direct, rel=1e-12)
    assert not m.should_stop(5)
    acc.step(0.7, Q)  # the noise multiplier changes: the budget is solved again for the new setting
    while not m.should_stop(0):
        acc.step(0.7, Q)
    hist = list(acc.history)
    g_now = rerokit.reconstruction_risk(hist, prior=10).gamma
    g_next = rerokit.reconstruction_risk(hist[:-1] + [(0.7, Q, hist[-1][2] + 1)], prior=10).gamma
    assert g_now <= 0.2 < g_next


def test_noise_free_steps_have_no_finite_bound():
    m = RiskMonitor(FakeAccountant([(0.0, Q, 3)]), prior=10)
    assert m.metrics(0)["gamma"] == 1.0 and math.isinf(m.metrics(0)["epsilon"])


@pytest.mark.parametrize("kwargs, match", [
    ({}, "give the run"),
    ({"noise_multiplier": 1.0}, "both noise_multiplier"),
    ({"noise_multiplier": -1.0, "sample_rate": 0.1}, "noise_multiplier"),
    ({"noise_multiplier": 1.0, "sample_rate": 1.5}, "sample_rate"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "sampler": "random"}, "sampler"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "limits": None, "delta": 2.0}, "delta"),
    ({"run": FakeAccountant(), "noise_multiplier": 1.0, "sample_rate": 0.1}, "once"),
])
def test_bad_settings_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RiskMonitor(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"max_gamma": 1.5}, "max_gamma"), ({"max_tpr": 0.0}, "max_tpr"), ({"max_epsilon": -1}, "max_epsilon")])
def test_bad_limits_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RiskLimits(**kwargs)


def test_run_of_the_wrong_kind_is_a_type_error():
    with pytest.raises(TypeError, match="run must be"):
        RiskMonitor(object())


def test_the_declared_sampler_is_the_one_certified():
    for sampler in ("shuffle", "full_batch"):
        m = RiskMonitor(noise_multiplier=SIGMA, sample_rate=Q, sampler=sampler, prior=10)
        r = rerokit.reconstruction_risk(noise_multiplier=SIGMA, sample_rate=Q, steps=60, prior=10,
                                        options=rerokit.RiskOptions(fprs=(0.01,)),
                                        sampler=sampler)
        assert m.metrics(60)["gamma"] == pytest.approx(r.gamma, rel=1e-12)
        assert m.metrics(60)["epsilon"] == pytest.approx(r.epsilon, rel=1e-12)
    poisson = RiskMonitor(noise_multiplier=SIGMA, sample_rate=Q, prior=10).metrics(60)["gamma"]
    assert RiskMonitor(noise_multiplier=SIGMA, sample_rate=Q, sampler="shuffle", prior=10).metrics(60)["gamma"] != poisson
