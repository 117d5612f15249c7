"""Per-sample gradients and clipping vs an independent reference (a Python loop with torch.autograd)."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from rerokit.training import (
    CLIP_EPS,
    FunctionalModel,
    SmallCNN,
    clip_factors,
    clip_rows,
    make_mlp,
    per_sample_clipped_grads,
    per_sample_grads,
)


def _loop_reference(module, X, y):
    """Row i = d/dparams CE(module(X[i:i+1]), y[i]) via torch.autograd on the module itself."""
    rows = []
    for i in range(X.shape[0]):
        module.zero_grad()
        loss = F.cross_entropy(module(X[i : i + 1]), y[i : i + 1])
        gs = torch.autograd.grad(loss, list(module.parameters()))
        rows.append(torch.cat([g.reshape(-1) for g in gs]))
    return torch.stack(rows)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-6)])
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_per_sample_grads_equal_autograd_loop(kind, dtype, tol):
    torch.manual_seed(0)
    if kind == "mlp":
        module = make_mlp(64, [10], 10).to(dtype)
        X = torch.rand(17, 1, 8, 8, dtype=dtype)
    else:
        module = SmallCNN(in_channels=1, num_classes=10, width=4).to(dtype)
        X = torch.rand(9, 1, 8, 8, dtype=dtype)
    y = torch.randint(0, 10, (X.shape[0],))
    fm = FunctionalModel(module)
    theta = fm.current_flat()
    G = per_sample_grads(fm, theta, X, y)
    R = _loop_reference(module, X, y)
    assert G.shape == (X.shape[0], fm.num_params)
    assert torch.allclose(G, R, atol=tol, rtol=0)
    # and the clipped version equals clipping the loop rows by hand
    C = 0.05
    Gc = per_sample_clipped_grads(fm, theta, X, y, C)
    Rc = torch.stack([r * min(1.0, C / (r.norm().item() + CLIP_EPS)) for r in R])
    assert torch.allclose(Gc, Rc, atol=tol, rtol=0)


def test_clip_rows_factor_and_norms():
    G = torch.tensor([[3.0, 4.0], [0.03, 0.04], [0.0, 0.0], [1e3, 0.0]], dtype=torch.float64)
    C = 1.0
    out = clip_rows(G, C)
    # factor min(1, C / (||g|| + 1e-6)) (Opacus' DPOptimizer.clip_and_accumulate)
    assert torch.allclose(clip_factors(G, C), torch.tensor([1 / (5 + 1e-6), 1.0, 1.0, 1 / (1e3 + 1e-6)], dtype=torch.float64))
    assert torch.allclose(out[0], torch.tensor([3.0, 4.0], dtype=torch.float64) / (5 + 1e-6))
    assert torch.equal(out[1], G[1])  # small rows untouched
    assert torch.equal(out[2], G[2])  # zero row stays zero, finite
    norms = out.norm(dim=1)
    assert bool((norms <= C).all())  # the guard errs on the private side
    assert abs(norms[0].item() - C) < 1e-6
    assert torch.equal(clip_rows(G, None), G)
    # batched leading dims
    Gb = torch.stack([G, 2 * G])
    assert torch.allclose(clip_rows(Gb, C)[1], clip_rows(2 * G, C))


def test_functional_model_roundtrip_and_init():
    fm = FunctionalModel(make_mlp(64, [10], 10))
    assert fm.num_params == 64 * 10 + 10 + 10 * 10 + 10
    th = fm.init_flat(3)
    assert torch.equal(th, fm.init_flat(3))
    assert not torch.equal(th, fm.init_flat(4))
    assert torch.equal(fm.flatten(fm.unflatten(th)), th)
    st = torch.random.get_rng_state()
    fm.init_flat(5)
    assert torch.equal(st, torch.random.get_rng_state())  # global RNG untouched
    X = torch.rand(4, 1, 8, 8)
    m = fm.load_flat(th, make_mlp(64, [10], 10))
    assert torch.allclose(m(X), fm.logits(th, X))
    assert fm.init_flat_many([3, 4]).shape == (2, fm.num_params)


def test_bad_inputs_name_parameter():
    fm = FunctionalModel(make_mlp(4, [3], 2))
    th = fm.init_flat(0)
    X = torch.rand(5, 4)
    y = torch.randint(0, 2, (5,))
    with pytest.raises(ValueError, match="C must"):
        clip_rows(torch.ones(2, 3), 0.0)
    with pytest.raises(ValueError, match="C must"):
        per_sample_clipped_grads(fm, th, X, y, float("nan"))
    with pytest.raises(ValueError, match="theta"):
        per_sample_grads(fm, th[:-1], X, y)
    with pytest.raises(ValueError, match="same n"):
        per_sample_grads(fm, th, X, y[:4])
    with pytest.raises(TypeError, match="y must"):
        per_sample_grads(fm, th, X, y.float())
    with pytest.raises(ValueError, match="y must hold class labels"):
        per_sample_grads(fm, th, X, y + 2)
    # usable under vmap (over parameter sets and over data sets): equals the unbatched rows
    ths = torch.stack([th, 2 * th])
    Gv = torch.func.vmap(lambda t: per_sample_clipped_grads(fm, t, X, y, 0.5))(ths)
    assert torch.allclose(Gv[1], per_sample_clipped_grads(fm, 2 * th, X, y, 0.5), atol=1e-6)
    Gd = torch.func.vmap(lambda x, t: per_sample_grads(fm, th, x, t))(torch.stack([X, X.flip(0)]), torch.stack([y, y.flip(0)]))
    assert torch.allclose(Gd[1], per_sample_grads(fm, th, X.flip(0), y.flip(0)), atol=1e-6)
    with pytest.raises(ValueError, match="theta"):
        fm.unflatten(torch.zeros(3))
    with pytest.raises(ValueError, match="seed"):
        fm.init_flat(-1)
    with pytest.raises(ValueError, match="buffers"):
        FunctionalModel(torch.nn.BatchNorm1d(3))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=3, max_size=3), min_size=1, max_size=6),
    C=st.floats(1e-4, 1e3),
)
def test_clip_rows_properties(rows, C):
    """||clip_C(g)|| <= C always; rows with ||g|| + 1e-6 <= C are unchanged; direction is kept."""
    G = torch.tensor(rows, dtype=torch.float64)
    out = clip_rows(G, C)
    norms = G.norm(dim=1)
    assert bool((out.norm(dim=1) <= C * (1 + 1e-12)).all())
    small = norms + CLIP_EPS <= C
    assert torch.equal(out[small], G[small])
    f = clip_factors(G, C)
    assert bool(((f > 0) & (f <= 1)).all())
    assert torch.allclose(out, G * f[:, None])
