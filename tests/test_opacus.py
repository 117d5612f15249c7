"""rerokit.opacus: RiskAccountant inside a real Opacus PrivacyEngine, training to a target risk."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from rerokit.bounds.dpsgd import epsilon_dpsgd, rero_dpsgd  # noqa: E402
from rerokit.opacus import RiskAccountant, make_private_with_reconstruction_risk  # noqa: E402

pytestmark = pytest.mark.torch


def _setup(n: int = 200, batch: int = 20, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 6, generator=g)
    y = (X[:, 0] > 0).long()
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, opt, DataLoader(TensorDataset(X, y), batch_size=batch)


def _train(model, opt, loader, epochs: int) -> None:
    loss = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            if len(xb):
                loss(model(xb), yb).backward()
            opt.step()


def test_risk_accountant_in_privacy_engine_matches_pld_and_opacus_prv():
    """PrivacyEngine(accountant='rerokit'): the history Opacus records is accounted by rerokit's
    certified PLD (same number as epsilon_dpsgd on it), and agrees with Opacus' own PRV
    accountant within its stated eps_error (0.01) plus our discretisation."""
    from opacus.accountants import PRVAccountant

    engine = PrivacyEngine(accountant="rerokit")
    assert isinstance(engine.accountant, RiskAccountant)
    model, opt, loader = _setup()
    model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                             noise_multiplier=1.1, max_grad_norm=1.0)
    _train(model, opt, loader, epochs=3)
    acc = engine.accountant
    assert len(acc) == 3 * len(loader) and acc.history == [(1.1, 1 / len(loader), 3 * len(loader))]
    eps = engine.get_epsilon(1e-5)
    assert eps == epsilon_dpsgd(segments=acc.history, delta=1e-5)
    prv = PRVAccountant()
    prv.history = list(acc.history)
    assert eps == pytest.approx(prv.get_epsilon(1e-5), abs=0.02, rel=0.01)
    risk = acc.get_risk(10)
    b = rero_dpsgd(1.1, 1 / len(loader), 3 * len(loader), prior=10)
    assert risk.gamma == b.value and acc.get_gamma(10) == b.value
    assert risk.epsilon == pytest.approx(eps, rel=1e-12)


def test_make_private_with_reconstruction_risk_is_tight_and_matches_calibrate_cli(cli):
    """Target gamma 0.2 at prior 10: the certified gamma of the finished run is <= 0.2 and >= 0.19,
    and sigma is the one `rerokit calibrate dpsgd` gives for the same (q, T)."""
    engine = PrivacyEngine()
    model, opt, loader = _setup()
    model, opt, loader = make_private_with_reconstruction_risk(
        engine, model, opt, loader, target_gamma=0.2, prior=10, epochs=2, max_grad_norm=1.0)
    n_batches = len(loader)
    _train(model, opt, loader, epochs=2)
    gamma = engine.accountant.get_gamma()
    assert 0.2 - 0.01 <= gamma <= 0.2
    d = cli.json("calibrate", "dpsgd", "--target-gamma", "0.2", "--sample-rate", repr(1 / n_batches),
                 "--steps", str(2 * n_batches), "--prior-size", "10")
    assert opt.noise_multiplier <= d["noise_multiplier"]
    assert opt.noise_multiplier == pytest.approx(d["noise_multiplier"], rel=1e-12)


def test_target_epsilon_takes_the_larger_sigma():
    from rerokit.bounds.calibrate import calibrate_noise_multiplier, noise_multiplier_for_epsilon

    engine = PrivacyEngine()
    model, opt, loader = _setup()
    q, T = 1 / len(loader), 2 * len(loader)
    s_gamma = calibrate_noise_multiplier(0.5, q, T, prior=10, delta=None).noise_multiplier
    s_eps = noise_multiplier_for_epsilon(0.5, 1e-5, q, T)
    assert s_eps > s_gamma  # epsilon 0.5 is the binding target here
    _, opt, _ = make_private_with_reconstruction_risk(engine, model, opt, loader, target_gamma=0.5, prior=10,
                                                      epochs=2, max_grad_norm=1.0, target_epsilon=0.5)
    assert opt.noise_multiplier == s_eps


def test_state_dict_round_trip_and_clear_errors():
    acc = RiskAccountant(prior=10)
    for _ in range(5):
        acc.step(noise_multiplier=1.0, sample_rate=0.1)
    acc.step(noise_multiplier=2.0, sample_rate=0.1)
    assert acc.history == [(1.0, 0.1, 5), (2.0, 0.1, 1)] and len(acc) == 6
    g = acc.get_gamma()
    other = RiskAccountant(prior=10)
    other.load_state_dict(acc.state_dict())
    assert other.history == acc.history and other.get_gamma() == g
    assert acc.mechanism() == "rerokit"
    with pytest.raises(ValueError, match="empty"):
        RiskAccountant(prior=10).get_gamma()
    with pytest.raises(ValueError, match="prior"):
        RiskAccountant().get_risk()
    noisy = RiskAccountant(prior=10)
    noisy.step(noise_multiplier=0.0, sample_rate=0.1)
    assert noisy.get_epsilon(1e-5) == math.inf
    with pytest.raises(ValueError, match="noise_multiplier 0"):
        noisy.get_gamma()
    with pytest.raises(ValueError, match="target_gamma"):
        make_private_with_reconstruction_risk(PrivacyEngine(), *_setup(), target_gamma=0.05, prior=10, epochs=1,
                                              max_grad_norm=1.0)


def test_reconstruction_risk_takes_the_accountant_and_its_history():
    import rerokit

    acc = RiskAccountant()
    for _ in range(50):
        acc.step(noise_multiplier=1.0, sample_rate=0.05)
    a = rerokit.reconstruction_risk(acc, prior=10)
    b = rerokit.reconstruction_risk(acc.history, prior=10)
    c = rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.05, steps=50, prior=10)
    assert a.gamma == b.gamma == c.gamma


def test_example_script_runs_briefly():
    script = Path(__file__).resolve().parents[1] / "examples" / "opacus_target_risk.py"
    out = subprocess.run([sys.executable, str(script), "--epochs", "2", "--max-steps", "3", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("noise multiplier")
    summary = json.loads(lines[-1])
    assert summary["steps"] == 3 and 0 <= summary["test_accuracy"] <= 1
    assert summary["risk"]["gamma"] <= 0.2 and summary["seed"] == 0


# ----------------------------------------------------------------------------- samplers (issue: sampling)

def _no_amplification_gamma(kappa: float, epochs: int, sigma: float) -> float:
    """Phi(Phi^-1(kappa) + sqrt(E)/sigma): E Gaussian releases of the target (scipy, independent of rerokit)."""
    from scipy.stats import norm

    return float(norm.cdf(norm.ppf(kappa) + math.sqrt(epochs) / sigma))


@pytest.mark.parametrize("shuffle", [True, False])
def test_shuffled_run_is_calibrated_and_certified_without_amplification(shuffle):
    """poisson_sampling=False for 3 epochs, prior 10, target 0.2: sigma is at least the no-amplification
    sigma (Phi(Phi^-1(0.1) + sqrt(3)/sigma) <= 0.2), and the reported gamma after training is at least
    the no-amplification value and at most the target."""
    from scipy.optimize import brentq

    engine = PrivacyEngine()
    model, opt, _ = _setup()
    g = torch.Generator().manual_seed(1)
    X = torch.randn(120, 6, generator=g)
    loader = DataLoader(TensorDataset(X, (X[:, 0] > 0).long()), batch_size=20, shuffle=shuffle)
    model, opt, loader = make_private_with_reconstruction_risk(
        engine, model, opt, loader, target_gamma=0.2, prior=10, epochs=3, max_grad_norm=1.0,
        poisson_sampling=False)
    sigma_min = brentq(lambda s: _no_amplification_gamma(0.1, 3, s) - 0.2, 0.1, 100.0)
    assert opt.noise_multiplier >= sigma_min * (1 - 1e-12)
    assert _no_amplification_gamma(0.1, 3, opt.noise_multiplier) <= 0.2
    assert opt.noise_multiplier <= sigma_min * 1.001  # and not needlessly large
    _train(model, opt, loader, epochs=3)
    acc = engine.accountant
    assert acc.sampler == "shuffle" and acc.sampler_source == "detected"
    risk = acc.get_risk()
    assert _no_amplification_gamma(0.1, 3, opt.noise_multiplier) <= risk.gamma <= 0.2
    assert risk.poisson_assumption is not None and risk.poisson_assumption.gamma < risk.gamma
    assert risk.to_dict()["poisson_assumption"]["kind"] == "assumption"
    # epsilon of the run: 3 Gaussian releases, exact GDP mu = sqrt(3)/sigma (never the Poisson one)
    from rerokit.bounds.gaussian import gaussian_epsilon

    eps = acc.get_epsilon(1e-5)
    assert eps >= gaussian_epsilon(1e-5, math.sqrt(3) / opt.noise_multiplier) * (1 - 1e-9)
    assert eps > risk.poisson_assumption.epsilon
    # the sampler survives a state-dict round trip
    acc2 = RiskAccountant(prior=10)
    acc2.load_state_dict(acc.state_dict())
    assert acc2.get_gamma() == risk.gamma


def test_poisson_run_unchanged_by_the_sampler_machinery():
    """Default poisson_sampling=True: sampler detected Poisson, sigma = the Poisson calibration."""
    from rerokit.bounds.calibrate import calibrate_noise_multiplier

    engine = PrivacyEngine()
    model, opt, loader = _setup()
    n = len(loader)
    _, opt, loader = make_private_with_reconstruction_risk(engine, model, opt, loader, target_gamma=0.2, prior=10,
                                                           epochs=2, max_grad_norm=1.0)
    assert engine.accountant.sampler == "poisson" and engine.accountant.sampler_source == "detected"
    assert opt.noise_multiplier == calibrate_noise_multiplier(0.2, 1 / n, 2 * n, prior=10, delta=None).noise_multiplier


def test_detect_sampler_reads_the_loader():
    from torch.utils.data import RandomSampler, WeightedRandomSampler

    from rerokit.opacus import detect_sampler

    ds = TensorDataset(torch.zeros(10, 2))
    assert detect_sampler(DataLoader(ds, batch_size=2, shuffle=True), False).sampler == "shuffle"
    assert detect_sampler(DataLoader(ds, batch_size=10), False).sampler == "full_batch"
    assert detect_sampler(DataLoader(ds, batch_size=2), True).sampler == "poisson"
    w = detect_sampler(DataLoader(ds, batch_size=2, sampler=WeightedRandomSampler([1.0] * 10, 10)), False)
    assert (w.sampler, w.source) == ("shuffle", "assumed") and "assumes" in w.note
    r = detect_sampler(DataLoader(ds, batch_size=2, sampler=RandomSampler(ds, replacement=True)), False)
    assert r.source == "assumed"
    with pytest.raises(ValueError, match="sampler"):
        RiskAccountant(prior=10, sampler="uniform")
    acc = RiskAccountant(prior=10)
    acc.history = [(1.0, 0.2, 10)]
    g_poisson = acc.get_gamma()
    assert acc.detect_sampler(DataLoader(ds, batch_size=2, shuffle=True), False).sampler == "shuffle"
    assert acc.get_gamma() > g_poisson  # two epochs, two unamplified releases


# ----------------------------------------------------------------------------- parameter objects


def test_epsilon_target_object_equals_the_float_and_sets_its_delta():
    from rerokit.bounds.calibrate import noise_multiplier_for_epsilon
    from rerokit.opacus import EpsilonTarget

    with pytest.raises(ValueError, match="target_epsilon"):
        EpsilonTarget(0.0)
    with pytest.raises(ValueError, match="target_delta"):
        EpsilonTarget(1.0, delta=1.0)
    sig = []
    for target in (0.5, EpsilonTarget(0.5), EpsilonTarget(0.5, delta=1e-7)):
        model, opt, loader = _setup()
        _, opt, _ = make_private_with_reconstruction_risk(PrivacyEngine(), model, opt, loader, target_gamma=0.5,
                                                          prior=10, epochs=2, max_grad_norm=1.0,
                                                          target_epsilon=target)
        sig.append(opt.noise_multiplier)
    assert sig[0] == sig[1] == noise_multiplier_for_epsilon(0.5, 1e-5, 1 / len(loader), 2 * len(loader))
    assert sig[2] > sig[1]  # a smaller delta needs more noise


@pytest.mark.parametrize("name", ["kappa", "log_kappa", "target_delta", "examples_per_user"])
def test_replaced_keywords_say_what_replaced_them(name):
    value = {"kappa": 0.1, "log_kappa": -2.3, "target_delta": 1e-6, "examples_per_user": 2}[name]
    with pytest.raises(TypeError, match=f"{name}= is now"):
        make_private_with_reconstruction_risk(PrivacyEngine(), *_setup(), target_gamma=0.2, prior=10, epochs=1,
                                              max_grad_norm=1.0, **{name: value})


def test_sampling_object_gives_the_unit_of_privacy_and_a_contradiction_is_refused():
    from rerokit.bounds.calibrate import calibrate_noise_multiplier
    from rerokit.bounds.priors import BaselinePrior
    from rerokit.bounds.schedule import Sampling

    engine = PrivacyEngine()
    model, opt, loader = _setup()
    n = len(loader)
    _, opt, _ = make_private_with_reconstruction_risk(engine, model, opt, loader, target_gamma=0.3, prior=10,
                                                      epochs=2, max_grad_norm=1.0,
                                                      sampler=Sampling(examples_per_user=2))
    want = calibrate_noise_multiplier(0.3, 1 / n, 2 * n, prior=10, delta=None,
                                      sampler=Sampling("poisson", examples_per_user=2)).noise_multiplier
    assert opt.noise_multiplier == want
    assert engine.accountant.examples_per_user == 2 and engine.accountant.sampler == "poisson"
    with pytest.raises(ValueError, match="contradicts the training loader"):
        make_private_with_reconstruction_risk(PrivacyEngine(), *_setup(), target_gamma=0.3, prior=10, epochs=2,
                                              max_grad_norm=1.0, sampler="shuffle")  # Opacus' Poisson loader
    # a bare baseline through the prior (what kappa= was)
    model, opt, loader = _setup()
    _, opt, _ = make_private_with_reconstruction_risk(PrivacyEngine(), model, opt, loader, target_gamma=0.3,
                                                      prior=BaselinePrior(kappa=0.1), epochs=2, max_grad_norm=1.0)
    assert opt.noise_multiplier == calibrate_noise_multiplier(0.3, 1 / n, 2 * n, kappa=0.1, delta=None).noise_multiplier
    one_example = calibrate_noise_multiplier(0.3, 1 / n, 2 * n, prior=10, delta=None).noise_multiplier
    # kappa = 0.1 given as a prior of 10 or as a baseline: the same sigma up to the solver's last steps
    # (log 0.1 and -log 10 differ in the last bit; measured 2e-12 relative)
    assert opt.noise_multiplier == pytest.approx(one_example, rel=1e-9) and one_example < want  # k = 1 < k = 2
