"""DP-SGD engine: vectorised trials vs sequential runs, DP-GD vs a plain-GD reference, sampling
rate and noise statistics, transcript semantics (Hayes et al. 2023 Eq. (1)), input validation."""

import math

import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from rerokit.training import (
    FunctionalModel,
    SmallCNN,
    linear_plan_supported,
    make_mlp,
    per_sample_clipped_grads,
    train_dpsgd,
    train_dpsgd_many,
    trial_seeds,
)
from rerokit.training.engine import _VmapSums
from rerokit.training.mlp import MLPPlan
from rerokit.training.settings import DPSGDSettings, EngineOptions


_SETTINGS = ("noise_multiplier", "clip", "steps", "lr", "sample_rate", "momentum")


def _data(K, n, d=6, classes=3, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(K, n, d, generator=g, dtype=dtype)
    y = torch.randint(0, classes, (K, n), generator=g)
    return X, y


def test_vectorised_trials_equal_sequential_runs():
    """Trial k of train_dpsgd_many == train_dpsgd(seed=seeds[k]) on trial k's data, crossing the
    two independent gradient paths (vectorised linear vs sequential vmap and vice versa)."""
    K, n, T = 3, 10, 36  # T > NOISE_BLOCK: crosses a block boundary of pre-drawn noise
    fm = FunctionalModel(make_mlp(6, [5], 3))
    X, y = _data(K, n)
    theta0 = torch.stack([fm.init_flat(s) for s in range(K)])
    seeds = [11, 12, 11]
    tgt = [0, 9, 0]
    st = DPSGDSettings(noise_multiplier=0.8, clip=0.5, steps=T, lr=0.3, sample_rate=0.6, momentum=0.5)
    for many_m, single_m in [("linear", "vmap"), ("vmap", "linear")]:
        R = train_dpsgd_many(fm, theta0, X, y, st, seed=seeds, target_index=tgt, record=True,
                             options=EngineOptions(method=many_m, chunk_size=2))
        assert R.settings["method"] == many_m
        tr = R.transcript
        assert tr.thetas.shape == (K, T, fm.num_params) and tr.batch_masks.shape == (K, T, n)
        for k in range(K):
            r = train_dpsgd(fm, theta0[k], X[k], y[k], st, seed=seeds[k], target_index=tgt[k], record=True,
                            options=EngineOptions(method=single_m))
            assert r.settings["method"] == single_m
            s = tr.trial(k)
            assert torch.equal(s.batch_masks, r.transcript.batch_masks)  # same random numbers
            for a, b in [(s.thetas, r.transcript.thetas), (s.gbar, r.transcript.gbar),
                         (s.noisy_sums, r.transcript.noisy_sums), (R.theta[k], r.theta)]:
                assert torch.allclose(a, b, atol=1e-5, rtol=0), (k, (a - b).abs().max())
        # trials 0 and 2 share the seed: same masks although theta0 differs
        assert torch.equal(tr.batch_masks[0], tr.batch_masks[2])
    # seed=s is seeds=trial_seeds(s, K), and trial k's seed depends only on (s, k)
    R2 = train_dpsgd_many(fm, theta0, X, y, st, seed=5)
    R3 = train_dpsgd_many(fm, theta0[:2], X[:2], y[:2], st, seed=5)
    assert R2.seed == trial_seeds(5, K) and R3.seed == R2.seed[:2]
    assert torch.allclose(R2.theta[:2], R3.theta, atol=1e-6, rtol=0)


def test_linear_plan_equals_vmap_clipped_sums():
    """Ghost-clipping MLP path vs (k, n, P) per-sample gradients from vmap(grad), all activations."""
    torch.manual_seed(1)
    cases = [(make_mlp(6, [7, 4], 3, activation="tanh"), 0.3), (make_mlp(6, [5], 3, bias=False), None),
             (make_mlp(6, [5], 3, activation="gelu"), 1e-3), (make_mlp(6, [5, 5], 3, activation="relu"), 0.5),
             (make_mlp(6, [5], 3, activation="sigmoid"), 0.2), (make_mlp(6, [4, 3], 3, activation="elu"), 0.05),
             (make_mlp(6, [], 3), 0.1), (torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ELU(alpha=0.5), torch.nn.Linear(4, 3)), 0.1),
             (torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ELU(alpha=2.0), torch.nn.Linear(4, 3)), 0.1),
             (torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Tanh(), torch.nn.Linear(6, 3), torch.nn.Tanh()), 0.1)]
    for module, clip in cases:
        fm = FunctionalModel(module.double())
        assert linear_plan_supported(fm)
        X, y = _data(3, 9, dtype=torch.float64)
        theta = torch.randn(3, fm.num_params, dtype=torch.float64)
        w = (torch.rand(3, 9) < 0.6).double()
        w[:, 2] = 1.0
        tgt = torch.tensor([2, 0, 8])
        plan = MLPPlan(fm)
        a = plan.clipped_sums(theta, plan.inputs(3, plan.block(X, y)), clip, w, tgt)
        b = _VmapSums(fm).sums(theta, (X, y), clip, w, tgt)
        for u, v in zip(a, b):
            assert torch.allclose(u, v, atol=1e-12, rtol=1e-10), module
    assert not linear_plan_supported(FunctionalModel(SmallCNN(width=2)))


def test_full_batch_noiseless_dpgd_equals_plain_gd_with_clipping():
    """Reference: nn.Module, per-sample loss.backward() in a loop, manual clip, torch.optim.SGD."""
    torch.manual_seed(0)
    n, C, lr, T = 10, 0.2, 0.5, 15
    module = make_mlp(6, [5], 3).double()
    fm = FunctionalModel(module)
    X, y = _data(1, n, dtype=torch.float64)
    X, y = X[0], y[0]
    theta0 = fm.current_flat()
    ref = make_mlp(6, [5], 3).double()
    fm.load_flat(theta0, ref)
    opt = torch.optim.SGD(ref.parameters(), lr=lr, momentum=0.9)
    for _ in range(T):
        acc = [torch.zeros_like(p) for p in ref.parameters()]
        for i in range(n):
            ref.zero_grad()
            F.cross_entropy(ref(X[i : i + 1]), y[i : i + 1]).backward()
            norm = math.sqrt(sum(float((p.grad ** 2).sum()) for p in ref.parameters()))
            f = min(1.0, C / (norm + 1e-6))
            for a, p in zip(acc, ref.parameters()):
                a += f * p.grad
        for a, p in zip(acc, ref.parameters()):
            p.grad = a / n
        opt.step()
    want = fm.flatten(ref.named_parameters())
    for method in ("vmap", "linear"):
        r = train_dpsgd(fm, theta0, X, y, DPSGDSettings(noise_multiplier=0.0, clip=C, steps=T, lr=lr, momentum=0.9), seed=0, options=EngineOptions(method=method))
        assert torch.allclose(r.theta, want, atol=1e-12)
    R = train_dpsgd_many(fm, theta0, X[None], y[None], DPSGDSettings(noise_multiplier=0.0, clip=C, steps=T, lr=lr, momentum=0.9), seed=0)
    assert torch.allclose(R.theta[0], want, atol=1e-12)
    # clip=None, sigma=0: plain GD on the mean loss
    ref2 = make_mlp(6, [5], 3).double()
    fm.load_flat(theta0, ref2)
    opt2 = torch.optim.SGD(ref2.parameters(), lr=lr)
    for _ in range(T):
        opt2.zero_grad()
        F.cross_entropy(ref2(X), y).backward()
        opt2.step()
    r2 = train_dpsgd(fm, theta0, X, y, DPSGDSettings(noise_multiplier=0.0, clip=None, steps=T, lr=lr), seed=0)
    assert torch.allclose(r2.theta, fm.flatten(ref2.named_parameters()), atol=1e-12)


def test_poisson_masks_have_rate_q():
    q, n, T = 0.3, 200, 64
    fm = FunctionalModel(make_mlp(2, [], 2))
    X, y = _data(1, n, d=2, classes=2)
    r = train_dpsgd(fm, fm.init_flat(0), X[0], y[0], DPSGDSettings(noise_multiplier=1.0, clip=1.0, steps=T, lr=0.1, sample_rate=q), seed=3, record="gbar_only")
    m = r.transcript.batch_masks
    N = m.numel()
    # binomial two-sided test at level 1e-4 (deterministic seed; fails only if the rate is wrong)
    assert stats.binomtest(int(m.sum()), N, q).pvalue > 1e-4
    # per-step batch sizes vary (Poisson, not fixed-size) and steps differ
    sizes = m.sum(1).numpy()
    assert sizes.std() > 0 and not torch.equal(m[0], m[1])
    assert r.transcript.noisy_sums is None  # gbar_only
    full = train_dpsgd(fm, fm.init_flat(0), X[0], y[0], DPSGDSettings(noise_multiplier=1.0, clip=1.0, steps=3, lr=0.1), seed=3, record=True)
    assert bool(full.transcript.batch_masks.all())  # q = 1: full batch


def test_noise_std_and_gbar_semantics():
    sigma, C = 1.7, 0.25
    n, T = 8, 50
    fm = FunctionalModel(make_mlp(6, [5], 3).double())
    X, y = _data(1, n, dtype=torch.float64)
    X, y = X[0], y[0]
    theta0 = fm.init_flat(1).double()
    tgt = 2
    r = train_dpsgd(fm, theta0, X, y, DPSGDSettings(noise_multiplier=sigma, clip=C, steps=T, lr=0.2, sample_rate=0.5), seed=9, target_index=tgt, record=True)
    tr = r.transcript
    noise = []
    for t in range(T):
        G = per_sample_clipped_grads(fm, tr.thetas[t], X, y, C)
        w = tr.batch_masks[t].double()
        noise.append(tr.noisy_sums[t] - w @ G)
        # gbar_t = 1[target in B_t] clip_C(g_target(theta_t)) + noise_t
        assert torch.allclose(tr.gbar[t], w[tgt] * G[tgt] + noise[-1], atol=1e-12)
        if t + 1 < T:  # theta_{t+1} = theta_t - lr * noisy_sum_t / (q n)
            assert torch.allclose(tr.thetas[t + 1], tr.thetas[t] - 0.2 * tr.noisy_sums[t] / (0.5 * n), atol=1e-12)
    z = torch.stack(noise).reshape(-1).numpy()
    N = z.size  # 50 * 63 = 3150 draws
    # std sigma*C: chi-square interval for the variance at 99.99%; mean within 4 standard errors
    s2 = z.var(ddof=0) * N / (sigma * C) ** 2
    lo, hi = stats.chi2.ppf([5e-5, 1 - 5e-5], N)
    assert lo < s2 < hi
    assert abs(z.mean()) < 4 * sigma * C / math.sqrt(N)
    # target_index=None: gbar is exactly the noise
    r0 = train_dpsgd(fm, theta0, X, y, DPSGDSettings(noise_multiplier=sigma, clip=C, steps=T, lr=0.2, sample_rate=0.5), seed=9, record=True)
    assert torch.allclose(r0.transcript.gbar.reshape(-1), torch.from_numpy(z), atol=1e-12)
    assert torch.equal(tr.target_in_batch(), tr.batch_masks[:, tgt])


def test_vectorised_transcript_helpers():
    fm = FunctionalModel(make_mlp(6, [4], 3))
    X, y = _data(3, 5)
    R = train_dpsgd_many(fm, fm.init_flat(0), X, y, DPSGDSettings(noise_multiplier=1.0, clip=1.0, steps=4, lr=0.1, sample_rate=0.5), seed=0, target_index=[0, 1, 4], record="gbar_only")
    tr = R.transcript
    assert tr.batched and tr.num_trials == 3 and tr.steps == 4 and tr.noisy_sums is None
    tib = tr.target_in_batch()
    assert tib.shape == (3, 4) and torch.equal(tib[2], tr.batch_masks[2, :, 4])
    assert tr.trial(1).target_index == 1 and tr.trial(1).seed == R.seed[1]
    assert torch.equal(tr.final_theta, R.theta)


def test_bad_inputs_raise_naming_parameter():
    fm = FunctionalModel(make_mlp(6, [4], 3))
    X, y = _data(2, 5)
    th = fm.init_flat(0)
    base = dict(noise_multiplier=1.0, clip=1.0, steps=3, lr=0.1, seed=0)
    cases = [
        ("noise_multiplier", dict(noise_multiplier=-1.0)),
        ("noise_multiplier", dict(noise_multiplier=float("nan"))),
        ("clip", dict(clip=0.0)),
        ("clip", dict(clip=None)),  # noise without a clip norm
        ("steps", dict(steps=0)),
        ("lr", dict(lr=float("inf"))),
        ("sample_rate", dict(sample_rate=1.5)),
        ("sample_rate", dict(sample_rate=0.0)),
        ("seed", dict(seed=-3)),
        ("target_index", dict(target_index=5)),
        ("momentum", dict(momentum=1.0)),
        ("record", dict(record="yes")),
    ]

    def run(f, th_, X_, y_, kw, **more):
        """``f`` called with the settings of ``kw`` (and ``more``) as a DPSGDSettings and EngineOptions."""
        kw = {**kw, **more}
        s = DPSGDSettings(**{k: kw.pop(k) for k in _SETTINGS if k in kw})
        opts = {k: kw.pop(k) for k in ("chunk_size", "method", "num_threads") if k in kw}
        return f(fm, th_, X_, y_, s, options=EngineOptions(**opts) if opts else None, **kw)

    for name, over in cases:
        with pytest.raises((ValueError, TypeError), match=name):
            run(train_dpsgd, th, X[0], y[0], base, **over)
        with pytest.raises((ValueError, TypeError), match=name if name != "seed" else "seed"):
            run(train_dpsgd_many, th, X, y, base, **over)
    with pytest.raises(TypeError, match="seed"):
        run(train_dpsgd_many, th, X, y, base, seed=None)
    with pytest.raises(ValueError, match="seed"):
        run(train_dpsgd_many, th, X, y, base, seed=[1])
    with pytest.raises(TypeError, match="settings"):
        train_dpsgd_many(fm, th, X, y, dict(noise_multiplier=1.0, clip=1.0, steps=3, lr=0.1), seed=0)
    with pytest.raises(ValueError, match="target_index"):
        run(train_dpsgd_many, th, X, y, base, target_index=[0, 9])
    with pytest.raises(ValueError, match="theta0"):
        run(train_dpsgd_many, th[:3], X, y, base)
    with pytest.raises(ValueError, match="chunk_size"):
        run(train_dpsgd_many, th, X, y, base, chunk_size=0)
    with pytest.raises(ValueError, match="method"):
        run(train_dpsgd_many, th, X, y, base, method="fast")
    with pytest.raises(ValueError, match="num_threads"):
        run(train_dpsgd_many, th, X, y, base, num_threads=0)
    before = torch.get_num_threads()
    r1 = run(train_dpsgd_many, th, X, y, base, num_threads=1)
    assert torch.get_num_threads() == before  # restored
    assert torch.allclose(r1.theta, run(train_dpsgd_many, th, X, y, base).theta, atol=1e-6)
    with pytest.raises(ValueError, match="X must"):
        run(train_dpsgd_many, th, X[0], y, base)
    with pytest.raises(ValueError, match="X must hold at least one"):
        run(train_dpsgd, th, X[0, :0], y[0, :0], base)
    with pytest.raises(ValueError, match="X must hold at least one"):
        run(train_dpsgd_many, th, X[:, :0], y[:, :0], base)
    with pytest.raises(ValueError, match="y must hold class labels in \\[0, 2\\]"):
        run(train_dpsgd, th, X[0], y[0] + 3, base)
    with pytest.raises(ValueError, match="y must hold class labels"):
        run(train_dpsgd_many, th, X, y - 1, base)
    # divergence is an error naming lr, never silent NaNs
    with pytest.raises(ValueError, match="lr=1e\\+30"):
        run(train_dpsgd, th, X[0], y[0], base, lr=1e30, steps=5)
    with pytest.raises(ValueError, match="lr="):
        run(train_dpsgd_many, th, X, y, base, lr=1e30, steps=5)


def test_shared_points_and_expanded_views_equal_materialised_datasets():
    """shared=(Xs, ys) prepended to each trial == the materialised concatenation; expanded views work."""
    fm = FunctionalModel(make_mlp(6, [4], 3))
    Xs, ys = _data(1, 7, seed=1)
    Xt, yt = _data(3, 1, seed=2)
    full_X = torch.cat([Xs.expand(3, 7, 6), Xt], 1)
    full_y = torch.cat([ys.expand(3, 7), yt], 1)
    st = DPSGDSettings(noise_multiplier=0.5, clip=0.4, steps=5, lr=0.5, sample_rate=0.7)
    kw = dict(seed=3, target_index=7, record=True)
    A = train_dpsgd_many(fm, fm.init_flat(0), Xt, yt, st, shared=(Xs[0], ys[0]), options=EngineOptions(chunk_size=2), **kw)
    B = train_dpsgd_many(fm, fm.init_flat(0), full_X, full_y, st, **kw)
    assert torch.equal(A.transcript.batch_masks, B.transcript.batch_masks)
    assert torch.allclose(A.transcript.gbar, B.transcript.gbar, atol=1e-6)
    assert torch.allclose(A.theta, B.theta, atol=1e-6)
    C_ = train_dpsgd_many(fm, fm.init_flat(0), full_X[:1].expand(3, 8, 6), full_y[:1].expand(3, 8), st, **kw)
    D = train_dpsgd(fm, fm.init_flat(0), full_X[0], full_y[0], st, **{**kw, "seed": C_.seed[2]})
    assert torch.allclose(C_.theta[2], D.theta, atol=1e-6)
    with pytest.raises(ValueError, match="shared"):
        train_dpsgd_many(fm, fm.init_flat(0), Xt, yt, st, shared=(Xs[0, :, :5], ys[0]), **kw)
    with pytest.raises(ValueError, match="target_index"):
        train_dpsgd_many(fm, fm.init_flat(0), Xt, yt, st, shared=(Xs[0], ys[0]), **{**kw, "target_index": 8})


def test_record_modes_do_not_change_the_run():
    fm = FunctionalModel(make_mlp(6, [4], 3))
    X, y = _data(2, 6)
    st = DPSGDSettings(noise_multiplier=1.0, clip=0.5, steps=4, lr=0.3, sample_rate=0.5)
    kw = dict(seed=2, target_index=3)
    runs = {m: train_dpsgd_many(fm, fm.init_flat(0), X, y, st, record=m, **kw) for m in (False, True, "gbar_only")}
    assert runs[False].transcript is None
    for m in (True, "gbar_only"):
        assert torch.equal(runs[m].theta, runs[False].theta)
    assert torch.equal(runs[True].transcript.gbar, runs["gbar_only"].transcript.gbar)
    assert runs["gbar_only"].transcript.noisy_sums is None and runs[True].transcript.noisy_sums is not None
    one = train_dpsgd(fm, fm.init_flat(0), X[0], y[0], st, record=False, **{**kw, "seed": runs[False].seed[0]})
    assert one.transcript is None and torch.allclose(one.theta, runs[False].theta[0], atol=1e-6)


def test_transcript_roundtrip(tmp_path):
    fm = FunctionalModel(make_mlp(6, [4], 3))
    X, y = _data(2, 5)
    R = train_dpsgd_many(fm, fm.init_flat(0), X, y, DPSGDSettings(noise_multiplier=1.0, clip=1.0, steps=3, lr=0.1), seed=0, target_index=[1, 2], record=True)
    torch.save(R.transcript.to_dict(), tmp_path / "t.pt")
    from rerokit.training import Transcript

    tr = Transcript.from_dict(torch.load(tmp_path / "t.pt", weights_only=False))
    assert torch.equal(tr.gbar, R.transcript.gbar) and tr.seed == R.seed and tr.settings == R.settings
    one = tr.trial(1)
    assert one.target_index == 2 and torch.equal(one.thetas, R.transcript.thetas[1]) and len(one) == 3
    assert tr.to(torch.float64).gbar.dtype == torch.float64


def test_init_flat_many_is_torch_default_init_under_manual_seed():
    """Row k of ``init_flat_many`` (one module copy re-initialised per seed, only the CPU generator
    seeded) equals a fresh module built after ``torch.manual_seed(seeds[k])`` (torch's own default
    initialisation), bit for bit, and leaves the global generator's state as it was."""
    for build in (lambda: make_mlp(12, [7, 5], 3, activation="tanh"), lambda: SmallCNN(1, 4)):
        fm = FunctionalModel(build())
        seeds = [0, 3, 2**62 + 5]
        before = torch.random.get_rng_state()
        many = fm.init_flat_many(seeds)
        assert torch.equal(torch.random.get_rng_state(), before)
        for k, s in enumerate(seeds):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(s)
                fresh = FunctionalModel(build()).current_flat()
            assert torch.equal(many[k], fresh), k
            assert torch.equal(fm.init_flat(s), fresh)
