"""reconstruction_risk's parameter objects (RiskOptions, Sampling): validated fields, and the calls the
README documents give the numbers it prints."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

import rerokit
from rerokit.bounds.schedule import Sampling, Schedule

SETTINGS = dict(noise_multiplier=1.0, sample_rate=0.01, steps=1000)


@pytest.mark.parametrize("kw,field,exc", [
    (dict(fprs=(0.01, 1.5)), r"RiskOptions.fprs\[1\]", ValueError),
    (dict(fprs=0.01), "RiskOptions.fprs", TypeError),
    (dict(fprs="0.01"), "RiskOptions.fprs", TypeError),
    (dict(prior_membership=1.0), "RiskOptions.prior_membership", ValueError),
    (dict(prior_membership=0.0), "RiskOptions.prior_membership", ValueError),
    (dict(adjacency="replace"), "RiskOptions.adjacency", ValueError),
    (dict(eta=-1.0), "RiskOptions.eta", ValueError),
    (dict(value_discretization_interval=0), "RiskOptions.value_discretization_interval", ValueError),
])
def test_risk_options_validate_naming_the_field(kw, field, exc):
    with pytest.raises(exc, match=field):
        rerokit.RiskOptions(**kw)


@pytest.mark.parametrize("make,field,exc", [
    (lambda: Sampling("poissson"), "Sampling.sampler", ValueError),
    (lambda: Sampling(3), "Sampling.sampler", TypeError),
    (lambda: Sampling(examples_per_user=0), "Sampling.examples_per_user", ValueError),
    (lambda: Sampling.of(1.0), "sampler", TypeError),
])
def test_sampling_validates_naming_the_field(make, field, exc):
    with pytest.raises(exc, match=field):
        make()


def test_wrong_option_types_are_refused():
    with pytest.raises(TypeError, match="options"):
        rerokit.reconstruction_risk(**SETTINGS, prior=10, options={"fprs": (0.01,)})
    with pytest.raises(TypeError, match="options"):
        rerokit.reconstruction_risks(**SETTINGS, priors=[10], options=(0.01,))
    with pytest.raises(TypeError, match="unexpected keyword"):  # the old keyword is gone, not ignored
        rerokit.reconstruction_risk(**SETTINGS, prior=10, fprs=(0.01,))


def test_readme_calls_give_the_readme_numbers():
    risk = rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.01, steps=1000, prior=10)
    assert risk.gamma == pytest.approx(0.19421, abs=5e-6)
    assert risk.gamma_interval[0] == pytest.approx(0.194198, abs=2e-6)
    assert risk.gamma_interval[1] == pytest.approx(0.194207, abs=2e-6)
    assert risk.membership.tpr_at_fpr[0.01] == pytest.approx(0.02914, abs=1e-5)
    assert risk.membership.tpr_at_fpr(0.05) == pytest.approx(0.111, abs=1e-3)
    assert risk.epsilon == pytest.approx(1.828, abs=1e-3)
    # an accountant (anything with .history) and its history; a DpEvent with kappa=
    acc = SimpleNamespace(history=[(1.0, 0.01, 1000)])
    assert rerokit.reconstruction_risk(acc, prior=10).gamma == risk.gamma
    assert rerokit.reconstruction_risk(acc.history, prior=10).gamma == risk.gamma
    ev = Schedule.from_settings(1.0, 0.01, 1000).to_event()
    by_event = rerokit.reconstruction_risk(ev, kappa=1e-3)
    assert by_event.gamma == rerokit.reconstruction_risk(**SETTINGS, kappa=1e-3).gamma and by_event.kappa == 1e-3
    assert rerokit.calibrate_noise_multiplier(0.2, 0.01, 1000, prior=10).noise_multiplier == pytest.approx(
        0.9696, abs=1e-4)
    tpr = rerokit.dpsgd_tradeoff(noise_multiplier=1.0, sample_rate=0.01, steps=1000).tpr_at_fpr([1e-3, 1e-2])
    assert tpr.upper[1] == pytest.approx(0.02914, abs=1e-5)


def test_options_give_the_numbers_of_the_keywords_they_replaced():
    base = rerokit.reconstruction_risk(**SETTINGS, prior=10)
    same = rerokit.reconstruction_risk(**SETTINGS, prior=10, options=rerokit.RiskOptions())
    assert same.to_dict() == base.to_dict()
    o = rerokit.reconstruction_risk(**SETTINGS, prior=10, options=rerokit.RiskOptions(
        fprs=(0.05,), prior_membership=0.2, adjacency="add_remove", value_discretization_interval=1e-3))
    assert o.gamma_interval[0] - 1e-9 <= base.gamma <= o.gamma + 1e-9  # gamma: always the remove pair
    assert list(o.membership.tpr_at_fpr) == [0.05] and o.membership.prior_membership == 0.2
    assert o.membership.adjacency == "add_remove"
    many = rerokit.reconstruction_risks(**SETTINGS, priors=[10, 100], options=rerokit.RiskOptions(fprs=(0.05,)))
    assert many[0].gamma == base.gamma and list(many[1].membership.tpr_at_fpr) == [0.05]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rerokit.RiskOptions().adjacency = "add_remove"


def test_sampler_name_and_sampling_object_agree_and_none_keeps_the_mechanisms():
    a = rerokit.reconstruction_risk(**SETTINGS, prior=10, sampler="shuffle")
    b = rerokit.reconstruction_risk(**SETTINGS, prior=10, sampler=Sampling("shuffle"))
    assert a.to_dict() == b.to_dict() and a.schedule.sampler == "shuffle"
    # Sampling(examples_per_user=k) keeps the mechanism's sampler (a RiskAccountant-like object knows it)
    acc = SimpleNamespace(history=[(1.0, 0.1, 30)], sampler="shuffle", examples_per_user=1, sampler_source="detected")
    g = rerokit.reconstruction_risk(acc, prior=10, sampler=Sampling(examples_per_user=2))
    assert g.schedule.sampler == "shuffle" and g.schedule.examples_per_user == 2
    assert g.schedule.sampler_source == "detected"
    plain = rerokit.reconstruction_risk(**SETTINGS, prior=10, sampler=Sampling(examples_per_user=1))
    assert plain.gamma == rerokit.reconstruction_risk(**SETTINGS, prior=10).gamma
    assert plain.schedule.sampler_source == "assumed"


def test_the_parameter_objects_are_exported_beside_their_functions():
    import rerokit.bounds
    import rerokit.report

    for name in ("Sampling", "RiskOptions", "Numerics", "MonteCarlo", "Comparisons"):
        assert name in rerokit.__all__ and getattr(rerokit, name).__dataclass_params__.frozen
    for name in ("Sampling", "Numerics", "MonteCarlo", "Comparisons", "SearchRange", "DpsgdDetails"):
        assert name in rerokit.bounds.__all__ and getattr(rerokit.bounds, name).__dataclass_params__.frozen
    for name in ("DataDescription", "ReportSettings"):
        assert name in rerokit.report.__all__ and getattr(rerokit.report, name).__dataclass_params__.frozen


def test_eta_of_a_continuous_prior_travels_in_the_options():
    from rerokit.bounds.priors import UniformBallPrior, resolve_baseline

    prior = UniformBallPrior(4)
    with pytest.raises(ValueError, match="eta"):  # a continuous error needs its threshold
        rerokit.reconstruction_risk(**SETTINGS, prior=prior)
    r = rerokit.reconstruction_risk(**SETTINGS, prior=prior, options=rerokit.RiskOptions(eta=0.5))
    assert r.log_kappa == resolve_baseline(prior, eta=0.5).log_kappa
    rs = rerokit.reconstruction_risks(**SETTINGS, priors=[prior], options=rerokit.RiskOptions(eta=0.5))
    assert rs[0].gamma == r.gamma


def test_a_bare_sampler_name_keeps_the_mechanisms_unit_of_privacy():
    acc = SimpleNamespace(history=[(1.0, 0.1, 30)], sampler="poisson", examples_per_user=3, sampler_source="declared")
    assert rerokit.reconstruction_risk(acc, prior=10, sampler="shuffle").schedule.examples_per_user == 3
    assert rerokit.reconstruction_risk(acc, prior=10, sampler=Sampling("shuffle")).schedule.examples_per_user == 1
    assert rerokit.reconstruction_risk(acc, prior=10).schedule.examples_per_user == 3
