"""One-run canary audits inside real Opacus PrivacyEngine runs (rerokit.opacus_audit)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from rerokit.opacus import GradientCanaryAudit, InputCanaries  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore:Full backward hook")]


def _data(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 16, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    return X, y


def _private(sigma, *, batch, dataset, seed=0, **kw):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 24), nn.ELU(), nn.Linear(24, 4))  # 508 parameters
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=batch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = PrivacyEngine(accountant="rdp").make_private(module=model, optimizer=opt, data_loader=loader,
                                                           noise_multiplier=sigma, max_grad_norm=1.0, **kw)
    return out


def _train(model, opt, loader, steps):
    t = 0
    while t < steps:
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
            t += 1
            if t >= steps:
                return


def test_full_batch_honest_run_is_consistent_and_below_the_certified_epsilon():
    X, y = _data()
    model, opt, loader = _private(1.0, batch=64, dataset=TensorDataset(X, y), poisson_sampling=False)
    audit = GradientCanaryAudit(opt, canaries=400, sample_rate=1.0, seed=1)
    _train(model, opt, loader, 10)
    r = audit.result()
    assert audit.steps == 10
    b = r.bound
    assert b.claim is not None and not b.claim.rejected
    assert 0 < b.epsilon_lower <= b.claim.epsilon
    assert b.mu_lower <= b.claim.mu  # sqrt(10) / 1


def test_lowering_the_real_noise_is_caught():
    X, y = _data()
    model, opt, loader = _private(2.0, batch=64, dataset=TensorDataset(X, y), poisson_sampling=False)
    audit = GradientCanaryAudit(opt, canaries=400, sample_rate=1.0, seed=2)
    opt.noise_multiplier = 0.5  # the bug: the run adds a quarter of the claimed noise
    _train(model, opt, loader, 10)
    assert audit.result().bound.claim.rejected


def test_poisson_reconstruction_runs_and_is_valid():
    X, y = _data()
    model, opt, loader = _private(1.0, batch=16, dataset=TensorDataset(X, y), poisson_sampling=True)
    q = 1 / len(loader)
    audit = GradientCanaryAudit(opt, canaries=150, sample_rate=q, seed=3, game="reconstruction", options=3)
    _train(model, opt, loader, 12)
    b = audit.result().bound
    assert b.options == 3 and b.adjacency == "replace_one" and not b.claim.rejected
    assert audit.scores.shape == (150, 3)


def test_residual_is_canary_plus_noise():
    """With known records subtracted the statistic sees only canary + Gaussian noise: with almost
    no noise, every present canary scores its exact log-likelihood ratio (T (1/2) / sigma^2)."""
    X, y = _data()
    model, opt, loader = _private(1e-3, batch=64, dataset=TensorDataset(X, y), poisson_sampling=False)
    audit = GradientCanaryAudit(opt, canaries=100, sample_rate=1.0, seed=4)
    _train(model, opt, loader, 3)
    s = audit.scores[:, 1] * 1e-6  # sigma^2 = 1e-6
    present = audit.secrets == 1
    np.testing.assert_allclose(s[present], 3 * 0.5, atol=0.01)  # noise sd sqrt(3) 1e-3
    np.testing.assert_allclose(s[~present], -3 * 0.5, atol=0.01)


def test_ghost_clipping_and_too_many_canaries_are_refused():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        out = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=DataLoader(TensorDataset(X, y), batch_size=8),
                                           noise_multiplier=1.0, max_grad_norm=1.0, grad_sample_mode="ghost",
                                           criterion=nn.CrossEntropyLoss())
    with pytest.raises(TypeError, match="ghost"):
        GradientCanaryAudit(out[1], canaries=10, sample_rate=0.1)
    _, opt2, _ = _private(1.0, batch=8, dataset=TensorDataset(X, y))
    with pytest.raises(ValueError, match="parameters"):
        GradientCanaryAudit(opt2, canaries=600, sample_rate=0.1)
    with pytest.raises(TypeError, match="DPOptimizer"):
        GradientCanaryAudit(torch.optim.SGD(model.parameters(), lr=0.1), canaries=1, sample_rate=0.1)


def test_input_canaries_in_the_data_loader():
    X, y = _data(96)
    canaries = InputCanaries(X[64:], y[64:], num_classes=4, seed=5)
    ds = canaries.with_canaries(TensorDataset(X[:64], y[:64]))
    assert len(ds) == 64 + int((canaries.secrets == 1).sum())
    model, opt, loader = _private(1.0, batch=16, dataset=ds)
    _train(model, opt, loader, 8)
    r = canaries.result(model, sample_rate=1 / len(loader), steps=8, noise_multiplier=1.0)
    assert r.bound.canaries == 32 and 0 <= r.bound.epsilon_lower <= r.bound.claim.epsilon
