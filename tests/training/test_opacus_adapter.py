"""Opacus path vs rerokit's engine: same clipped sums at the same parameters and batch, same
trajectory without noise, gbar semantics, noise scale, accountant history."""

import math

import pytest
import torch
from scipy import stats

from rerokit.training import FunctionalModel, make_mlp, per_sample_clipped_grads, train_dpsgd
from rerokit.training.opacus_adapter import record_opacus_transcript
from rerokit.training.settings import DPSGDSettings


def _data(n, d=6, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, d, generator=g), torch.randint(0, classes, (n,), generator=g)


def test_opacus_clipped_sums_equal_ours_on_opacus_batches():
    """sigma = 0, q = 0.5: at every recorded theta_t and Opacus' own Poisson batch, the
    privatized sum equals sum_{i in B_t} clip_C(g_i) from per_sample_clipped_grads (1e-5)."""
    n, C, q = 20, 0.3, 0.5
    module = make_mlp(6, [5], 3)
    X, y = _data(n)
    tr = record_opacus_transcript(module, X, y, 4, DPSGDSettings(noise_multiplier=0.0, clip=C, steps=12, lr=0.5, sample_rate=q), seed=1)
    fm = FunctionalModel(module)
    sizes = tr.batch_masks.sum(1)
    assert 0 < int(sizes.min()) and int(sizes.max()) < n  # real Poisson batches were exercised
    for t in range(12):
        G = per_sample_clipped_grads(fm, tr.thetas[t], X, y, C)
        w = tr.batch_masks[t].float()
        assert torch.allclose(tr.noisy_sums[t], w @ G, atol=1e-5, rtol=0)
        # gbar = 1[target in B_t] clip_C(g_target) when there is no noise
        assert torch.allclose(tr.gbar[t], w[4] * G[4], atol=1e-5, rtol=0)
        if t + 1 < 12:
            assert torch.allclose(tr.thetas[t + 1], tr.thetas[t] - 0.5 * (w @ G) / (q * n), atol=1e-5, rtol=0)
    assert tr.settings["accountant_history"] == [(0.0, q, 12)]


def test_opacus_and_engine_same_trajectory_without_noise():
    """Full batch (q = 1), sigma = 0: both trainers are deterministic and must agree."""
    n, C = 16, 0.2
    module = make_mlp(6, [5], 3)
    fm = FunctionalModel(module)
    X, y = _data(n, seed=2)
    theta0 = fm.init_flat(7)
    tr = record_opacus_transcript(module, X, y, 0, DPSGDSettings(noise_multiplier=0.0, clip=C, steps=20, lr=1.0, sample_rate=1.0, momentum=0.5), seed=0, theta0=theta0)
    r = train_dpsgd(fm, theta0, X, y, DPSGDSettings(noise_multiplier=0.0, clip=C, steps=20, lr=1.0, momentum=0.5), seed=0, target_index=0, record=True)
    assert bool(tr.batch_masks.all())
    for a, b in [(tr.thetas, r.transcript.thetas), (tr.gbar, r.transcript.gbar), (tr.noisy_sums, r.transcript.noisy_sums),
                 (tr.final_theta, r.theta)]:
        assert torch.allclose(a, b, atol=1e-5, rtol=0)
    # the module passed in is untouched
    assert torch.equal(fm.current_flat(), FunctionalModel(module).current_flat())


def test_opacus_noise_scale_and_history():
    n, C, sigma, T = 10, 0.5, 2.0, 40
    module = make_mlp(6, [4], 3)
    X, y = _data(n, seed=3)
    tr = record_opacus_transcript(module, X, y, None, DPSGDSettings(noise_multiplier=sigma, clip=C, steps=T, lr=0.1, sample_rate=0.3), seed=5)
    fm = FunctionalModel(module)
    z = []
    for t in range(T):
        G = per_sample_clipped_grads(fm, tr.thetas[t], X, y, C)
        noise = tr.noisy_sums[t] - tr.batch_masks[t].float() @ G
        assert torch.allclose(tr.gbar[t], noise, atol=1e-4)  # all points known: gbar is the noise
        z.append(noise)
    z = torch.stack(z).reshape(-1).double().numpy()
    N = z.size
    s2 = z.var(ddof=0) * N / (sigma * C) ** 2
    lo, hi = stats.chi2.ppf([5e-5, 1 - 5e-5], N)
    assert lo < s2 < hi
    assert abs(z.mean()) < 4 * sigma * C / math.sqrt(N)
    assert tr.settings["accountant_history"] == [(sigma, 0.3, T)]
    from rerokit.accounting.events import segments_from_opacus_history

    assert segments_from_opacus_history(tr.dp_history()) == [(sigma, 0.3, T)]
    r = train_dpsgd(fm, fm.current_flat(), X, y, DPSGDSettings(noise_multiplier=sigma, clip=C, steps=T, lr=0.1, sample_rate=0.3), seed=0, record=True)
    assert r.transcript.dp_history() == tr.dp_history()  # same format from both trainers
    assert stats.binomtest(int(tr.batch_masks.sum()), tr.batch_masks.numel(), 0.3).pvalue > 1e-4


def test_opacus_bad_inputs():
    module = make_mlp(6, [4], 3)
    X, y = _data(5)
    base = dict(target_index=0, noise_multiplier=1.0, clip=1.0, steps=2, lr=0.1, sample_rate=1.0, seed=0)

    def run(X_, y_, kw, **more):
        kw = {**kw, **more}
        s = DPSGDSettings(**{k: kw.pop(k) for k in ("noise_multiplier", "clip", "steps", "lr", "sample_rate")})
        return record_opacus_transcript(module, X_, y_, kw.pop("target_index"), s, **kw)

    for name, val in [("clip", 0.0), ("noise_multiplier", -1.0), ("steps", 0), ("sample_rate", 2.0), ("target_index", 5),
                      ("lr", float("nan"))]:
        with pytest.raises(ValueError, match=name):
            run(X, y, base, **{name: val})
    with pytest.raises(ValueError, match="clip"):
        run(X, y, base, noise_multiplier=0.0, clip=None)
    with pytest.raises(ValueError, match="y must hold class labels"):
        run(X, y + 3, base)
    with pytest.raises(ValueError, match="theta0"):
        run(X, y, base, theta0=torch.zeros(3))


def test_opacus_empty_poisson_batches():
    """q = 0.05 on n = 10: many empty batches; there the update is pure noise / (q n)."""
    module = make_mlp(6, [4], 3)
    X, y = _data(10, seed=4)
    tr = record_opacus_transcript(module, X, y, 0, DPSGDSettings(noise_multiplier=1.0, clip=1.0, steps=20, lr=0.1, sample_rate=0.05), seed=1)
    sizes = tr.batch_masks.sum(1)
    empty = (sizes == 0).nonzero().reshape(-1)
    assert empty.numel() > 0
    for t in empty.tolist():
        assert torch.allclose(tr.gbar[t], tr.noisy_sums[t], atol=1e-6)  # nothing known to subtract
        if t + 1 < 20:
            assert torch.allclose(tr.thetas[t + 1], tr.thetas[t] - 0.1 * tr.noisy_sums[t] / 0.5, atol=1e-5)


def test_opacus_cnn_matches_vmap_engine():
    """A conv model (engine's generic vmap path): sigma = 0, q = 1, same trajectory as Opacus."""
    from rerokit.training import SmallCNN

    torch.manual_seed(0)
    module = SmallCNN(in_channels=1, num_classes=3, width=2)
    fm = FunctionalModel(module)
    g = torch.Generator().manual_seed(5)
    X, y = torch.rand(6, 1, 6, 6, generator=g), torch.randint(0, 3, (6,), generator=g)
    theta0 = fm.current_flat()
    tr = record_opacus_transcript(module, X, y, 1, DPSGDSettings(noise_multiplier=0.0, clip=0.05, steps=4, lr=2.0, sample_rate=1.0), seed=0, theta0=theta0)
    r = train_dpsgd(fm, theta0, X, y, DPSGDSettings(noise_multiplier=0.0, clip=0.05, steps=4, lr=2.0), seed=0, target_index=1, record=True)
    assert r.settings["method"] == "vmap"
    assert torch.allclose(tr.thetas, r.transcript.thetas, atol=1e-5, rtol=0)
    assert torch.allclose(tr.gbar, r.transcript.gbar, atol=1e-5, rtol=0)
