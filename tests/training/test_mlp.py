"""The MLP engine (rerokit.training.mlp) against torch.func per-sample gradients (vmap(grad)):
clipped sums (ghost clipping), full-batch mean gradients and the prior-aware candidate
statistics, for every activation of ACTIVATIONS, with and without bias, on inputs shared by all
models, per-model inputs, both together, and inputs shared by groups of models."""

import pytest
import torch
import torch.nn.functional as F

from rerokit.training import ACTIVATIONS, FunctionalModel, make_mlp, per_sample_grads, train_dpsgd, train_dpsgd_many
from rerokit.training.grads import clip_rows
from rerokit.training.mlp import MLPPlan, mlp_plan
from rerokit.training.settings import DPSGDSettings, EngineOptions

K, D, CLASSES = 4, 6, 3


def _layouts(g):
    """(name, blocks as (X (G, n_b, D), y (G, n_b)) pairs); model k uses group k // (K / G) of each block."""
    def data(G, n):
        return torch.rand(G, n, D, generator=g, dtype=torch.float64), torch.randint(0, CLASSES, (G, n), generator=g)

    return [
        ("per-model", [data(K, 7)]),
        ("shared", [data(1, 7)]),
        ("shared+own", [data(1, 6), data(K, 2)]),
        ("grouped", [data(2, 5)]),
        ("shared+grouped", [data(1, 3), data(2, 4)]),
    ]


def _model_data(blocks, k):
    """Model k's dataset: its rows of every block, concatenated."""
    Xs, ys = [], []
    for X, y in blocks:
        grp = k // (K // X.shape[0])
        Xs.append(X[grp])
        ys.append(y[grp])
    return torch.cat(Xs), torch.cat(ys)


def _models():
    for act in ACTIVATIONS:
        for bias in (True, False):
            yield act, bias, make_mlp(D, [5, 4], CLASSES, activation=act, bias=bias).double()


@pytest.mark.parametrize("act,bias,module", list(_models()), ids=lambda v: v if isinstance(v, str) else None)
def test_clipped_sums_and_mean_grads_equal_torch_func(act, bias, module):
    fm = FunctionalModel(module)
    plan = MLPPlan(fm)
    g = torch.Generator().manual_seed(0)
    theta = torch.randn(K, fm.num_params, generator=g, dtype=torch.float64)
    for name, blocks in _layouts(g):
        inp = plan.inputs(K, *[plan.block(X, y) for X, y in blocks])
        n = inp.n
        w = (torch.rand(K, n, generator=g) < 0.6).double()
        tgt = torch.randint(0, n, (K,), generator=g)
        raw = [per_sample_grads(fm, theta[k], *_model_data(blocks, k)) for k in range(K)]  # torch.func vmap(grad)
        for C in (0.05, None):
            s, st = plan.clipped_sums(theta, inp, C, w, tgt)
            s1, st1 = plan.clipped_sums(theta, inp, C)  # no weights, no target
            assert st1 is None
            for k in range(K):
                G = clip_rows(raw[k], C)  # (n, P)
                torch.testing.assert_close(s[k], w[k] @ G, rtol=1e-10, atol=1e-12, msg=f"{name} C={C}")
                torch.testing.assert_close(st[k], w[k, tgt[k]] * G[tgt[k]], rtol=1e-10, atol=1e-12, msg=name)
                torch.testing.assert_close(s1[k], G.sum(0), rtol=1e-10, atol=1e-12, msg=name)
        mean = plan.mean_grads(theta, inp)
        for k in range(K):
            Xk, yk = _model_data(blocks, k)
            want = torch.func.grad(lambda t: F.cross_entropy(fm.logits(t, Xk), yk))(theta[k])
            torch.testing.assert_close(mean[k], want, rtol=1e-10, atol=1e-12, msg=name)


@pytest.mark.parametrize("act", list(ACTIVATIONS))
def test_candidate_statistics_equal_torch_func(act):
    """<clip(g), gbar>/C^2 and ||clip(g)||^2/C^2 of N candidates at T steps of k trials (Hayes et
    al. 2023 Alg. 2), candidates given as images (Flatten), some clipped and some not."""
    for bias in (True, False):
        fm = FunctionalModel(make_mlp(12, [7, 5], 4, activation=act, bias=bias).double())
        g = torch.Generator().manual_seed(1)
        k, T, N = 3, 4, 6
        thetas = torch.randn(k, T, fm.num_params, generator=g, dtype=torch.float64)
        gbar = torch.randn(k, T, fm.num_params, generator=g, dtype=torch.float64)
        Xc = torch.rand(k, N, 1, 3, 4, generator=g, dtype=torch.float64)
        yc = torch.randint(0, 4, (k, N), generator=g)
        raw = [[per_sample_grads(fm, thetas[a, t], Xc[a], yc[a]) for t in range(T)] for a in range(k)]
        for C in (0.05, 1.0, 1e3):
            for max_elements in (1, 1 << 24):  # one trial per chunk, all trials in one chunk
                inner, sq = MLPPlan(fm).candidate_statistics(thetas, gbar, Xc, yc, C, max_elements=max_elements)
                assert inner.shape == sq.shape == (k, T, N)
                for a in range(k):
                    for t in range(T):
                        G = clip_rows(raw[a][t], C)
                        torch.testing.assert_close(inner[a, t], G @ gbar[a, t] / C**2, rtol=1e-10, atol=1e-12)
                        torch.testing.assert_close(sq[a, t], (G * G).sum(1) / C**2, rtol=1e-10, atol=1e-12)


def test_plan_parse_and_unsupported_models():
    assert mlp_plan(FunctionalModel(make_mlp(6, [5], 3))) is not None
    # parameter-free activations before the first Linear are applied to the inputs once
    m = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Tanh(), torch.nn.Linear(6, 3), torch.nn.Tanh()).double()
    plan = MLPPlan(FunctionalModel(m))
    assert len(plan.prefix) == 1 and len(plan.linears) == 1
    for bad, why in [
        (torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 3)), "LayerNorm"),
        (torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Flatten(), torch.nn.Linear(4, 3)), "Flatten"),
        (torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Conv1d(1, 1, 1)), "Conv1d"),
    ]:
        with pytest.raises(ValueError, match=why):
            MLPPlan(FunctionalModel(bad))
        assert mlp_plan(FunctionalModel(bad)) is None
    lin = torch.nn.Linear(4, 4)
    with pytest.raises(ValueError, match="twice"):
        MLPPlan(FunctionalModel(torch.nn.Sequential(lin, torch.nn.ReLU(), lin)))
    # no Flatten: samples must be vectors
    p2 = MLPPlan(FunctionalModel(torch.nn.Sequential(torch.nn.Linear(6, 3))))
    with pytest.raises(ValueError, match="vectors"):
        p2.block(torch.rand(2, 3, 1, 6))


def test_inplace_activation_gives_the_same_gradients():
    """An in-place activation must not overwrite the pre-activation the backward needs."""
    torch.manual_seed(0)
    base = make_mlp(D, [5], CLASSES, activation="elu").double()
    inpl = torch.nn.Sequential(*[torch.nn.ELU(inplace=True) if isinstance(m, torch.nn.ELU) else m for m in base])
    X = torch.rand(2, 8, D, dtype=torch.float64) - 0.5
    y = torch.randint(0, CLASSES, (2, 8))
    out = []
    for mod in (base, inpl):
        fm = FunctionalModel(mod)
        plan = MLPPlan(fm)
        theta = fm.current_flat().expand(2, -1).contiguous()
        out.append(plan.clipped_sums(theta, plan.inputs(2, plan.block(X, y)), 0.1)[0])
    torch.testing.assert_close(out[0], out[1], rtol=0, atol=0)


@pytest.mark.parametrize("method", ["linear", "vmap"])
def test_train_dpsgd_is_trial_k_of_train_dpsgd_many(method):
    """train_dpsgd is the K = 1 case of the batched trainer: with chunks of one trial the same
    computation (bitwise equal); with larger chunks equal to rounding."""
    fm = FunctionalModel(make_mlp(D, [5], CLASSES).double())
    g = torch.Generator().manual_seed(3)
    Kt, n, T = 3, 9, 40
    X = torch.rand(Kt, n, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, CLASSES, (Kt, n), generator=g)
    theta0 = fm.init_flat_many([1, 2, 3]).double()
    st = DPSGDSettings(noise_multiplier=0.7, clip=0.3, steps=T, lr=0.2, sample_rate=0.5, momentum=0.3)
    seeds = [101, 202, 303]
    R1 = train_dpsgd_many(fm, theta0, X, y, st, seed=seeds, target_index=[0, 4, 8], record=True,
                          options=EngineOptions(method=method, chunk_size=1))
    R3 = train_dpsgd_many(fm, theta0, X, y, st, seed=seeds, target_index=[0, 4, 8], record=True,
                          options=EngineOptions(method=method, chunk_size=3))
    for k, t in enumerate([0, 4, 8]):
        r = train_dpsgd(fm, theta0[k], X[k], y[k], st, seed=seeds[k], target_index=t, record=True,
                        options=EngineOptions(method=method))
        s1, s3 = R1.transcript.trial(k), R3.transcript.trial(k)
        for name in ("thetas", "gbar", "noisy_sums", "batch_masks"):
            assert torch.equal(getattr(s1, name), getattr(r.transcript, name)), name
            torch.testing.assert_close(getattr(s3, name), getattr(r.transcript, name), rtol=0, atol=1e-12)
        assert torch.equal(R1.theta[k], r.theta)
