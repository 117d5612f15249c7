"""Guo et al. 2022 (ICML), Figs. 5 and 2 at tiny scale: `rerokit experiment guo-fig5` / `guo-dfil-hist`.

What the paper says and is checked here:
* Fig. 5 / Sec. 7.3: both MSE bounds fall as the noise sigma falls (and as training gets longer),
  test accuracy rises, and the bound from the *maximum* dFIL is above (tighter than) the RDP
  bound, by orders of magnitude at the higher accuracies.
* Fig. 2 / Sec. 7.1: with an RDP bound of about 0.1, every per-sample dFIL bound is above 1.
Numbers against independent computations: the replace-one (2, eps)-RDP of full-batch DP-GD and its
Thm 1 bound in closed form (T (2 * 1.1153)^2 / sigma^2, 0.25 / (e^eps - 1)), the dFIL of one step
of a linear softmax model from its Jacobian written out by hand in numpy, and the Fig. 2 RDP bound
from the output-perturbation sensitivity 2 L / (n lam).
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from rerokit.bounds.mse import GELU_CLIP_FACTOR
from rerokit.experiments.guo_dfil import FIL_LEAK_NOTE, GuoDfilHistConfig, run_guo_dfil_hist
from rerokit.experiments.guo_fig5 import GuoFig5Config, guo_fig5_setup, run_guo_fig5
from rerokit.training.settings import DPSGDSettings

TINY = GuoFig5Config(sigmas=(0.5, 64.0), steps=(1, 5), lr=2.0, hidden=(), train_size=40, coords=None, seed=0)


@pytest.fixture(scope="module")
def fig5(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig5")
    return out, run_guo_fig5(out, TINY, progress=False)


def _cell(rows, sigma, steps):
    (r,) = [r for r in rows if r["sigma"] == sigma and r["steps"] == steps]
    return r


def _dfil_by_hand(W, b, X, Y, sigma, clip):
    """Per-sample Tr(J^T J) / (sigma C)^2 / d of the GELU-clipped cross-entropy gradient of a
    linear softmax model (params W (K, d), b (K), flattened [W row-major, b]), J = d g~ / dx."""
    K, d = W.shape
    out = []
    for x, y in zip(X, Y):
        logits = W @ x + b
        p = np.exp(logits - logits.max())
        p /= p.sum()
        r = p.copy()
        r[y] -= 1.0
        g = np.concatenate([np.outer(r, x).ravel(), r])
        dr = (np.diag(p) - np.outer(p, p)) @ W  # (K, d): d r / d x
        G = np.zeros((K * d + K, d))
        for k in range(K):
            G[k * d:(k + 1) * d] = np.outer(x, dr[k]) + r[k] * np.eye(d)  # d(r_k x_j)/dx_m
        G[K * d:] = dr
        u = np.linalg.norm(g)
        t = u / clip - 1.0
        gelu, dgelu = t * norm.cdf(t), norm.cdf(t) + t * norm.pdf(t)
        c = 1.0 / (gelu + 1.0)
        dc = -dgelu / clip / (gelu + 1.0) ** 2
        J = c * G + np.outer(g, dc * (g @ G) / u)
        out.append(np.sum(J**2) / (sigma * clip) ** 2 / d)
    return np.array(out)


def test_fig5_rdp_side_is_the_closed_form(fig5):
    _, res = fig5
    for r in res["cells"]:
        eps = r["steps"] * (2 * GELU_CLIP_FACTOR) ** 2 / r["sigma"] ** 2
        assert r["epsilon_rdp2"] == pytest.approx(eps, rel=1e-9)
        assert r["rdp_mse_lower_bound"] == pytest.approx(0.25 / math.expm1(eps), rel=1e-12)
        assert r["rdp_mse_lower_bound"] <= 0.25 / math.expm1(eps)  # rounded down: the safe side


@pytest.mark.parametrize("sigma", TINY.sigmas)
def test_fig5_one_step_dfil_is_the_analytic_fisher_information(fig5, sigma):
    _, res = fig5
    data = guo_fig5_setup(TINY)
    lin = data.module[1]
    W, b = lin.weight.detach().double().numpy(), lin.bias.detach().double().numpy()
    want = _dfil_by_hand(W, b, data.X.double().numpy(), data.Y.numpy(), sigma, TINY.clip)
    r = _cell(res["cells"], sigma, 1)
    assert r["dfil_max"] == pytest.approx(want.max(), rel=1e-4)
    assert r["dfil_median"] == pytest.approx(np.median(want), rel=1e-4)
    assert r["fil_mse_lower_bound_min"] == pytest.approx(1 / want.max(), rel=1e-4)


def test_fig5_bounds_and_accuracy_behave_as_the_paper_says(fig5):
    _, res = fig5
    rows = res["cells"]
    lo, hi = min(TINY.sigmas), max(TINY.sigmas)
    for T in TINY.steps:
        a, b = _cell(rows, lo, T), _cell(rows, hi, T)
        for key in ("rdp_mse_lower_bound", "fil_mse_lower_bound_min", "fil_mse_lower_bound_median"):
            assert a[key] < b[key], (key, T)  # less noise, less protection
        # the maximum-dFIL bound is above the RDP bound (Fig. 5: "in most settings"; here in all)
        assert a["fil_mse_lower_bound_min"] > a["rdp_mse_lower_bound"]
        assert b["fil_mse_lower_bound_min"] > b["rdp_mse_lower_bound"]
    for s in TINY.sigmas:  # more steps, less protection
        assert _cell(rows, s, 5)["rdp_mse_lower_bound"] < _cell(rows, s, 1)["rdp_mse_lower_bound"]
        assert _cell(rows, s, 5)["fil_mse_lower_bound_min"] < _cell(rows, s, 1)["fil_mse_lower_bound_min"]
    best, worst = _cell(rows, lo, 5), _cell(rows, hi, 5)
    assert best["test_accuracy"] > worst["test_accuracy"] + 0.2  # accuracy rises as sigma falls
    # at the highest accuracy the dFIL bound is orders of magnitude above the RDP bound
    assert best["fil_mse_lower_bound_min"] > 1e6 * best["rdp_mse_lower_bound"]
    assert res["fraction_fil_max_above_rdp"] == 1.0
    assert res["note"] == FIL_LEAK_NOTE


def test_fig5_files_and_resume(fig5):
    out, res = fig5
    with open(out / "guo_fig5.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(TINY.sigmas) * len(TINY.steps)
    assert float(rows[0]["fil_mse_lower_bound_min"]) == pytest.approx(res["cells"][0]["fil_mse_lower_bound_min"])
    assert (out / "guo_fig5.png").stat().st_size > 0
    lines = (out / "guo_fig5.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["settings"]["seed"] == 0 and len(lines) == 1 + len(rows)
    # a resumed run finds every cell done and reports the same numbers without training
    import rerokit.training.fil as fil

    def boom(*a, **k):  # pragma: no cover - must not be called
        raise AssertionError("a finished cell was recomputed")

    orig, fil.dpsgd_fil = fil.dpsgd_fil, boom
    try:
        again = run_guo_fig5(out, TINY, resume=True, progress=False, plot=False)
    finally:
        fil.dpsgd_fil = orig
    assert again["cells"] == res["cells"]


def test_fig5_bad_config_names_the_field(tmp_path):
    with pytest.raises(ValueError, match="sigmas"):
        run_guo_fig5(tmp_path, GuoFig5Config(sigmas=(1.0, -1.0)), progress=False)
    with pytest.raises(ValueError, match="train_size"):
        run_guo_fig5(tmp_path, GuoFig5Config(train_size=5000), progress=False)
    with pytest.raises(ValueError, match="steps"):
        GuoFig5Config(steps=()).checked()


def test_dfil_hist_reproduces_fig2_shape(tmp_path):
    from rerokit.data import load_dataset

    cfg = GuoDfilHistConfig()
    res = run_guo_dfil_hist(tmp_path, cfg)
    # RDP side by hand: eps_2 = (2 L / (n lam))^2 / s^2, L = max ||[1, x]|| over digits 0 and 1
    ds = load_dataset("digits")
    X = np.asarray(ds.flat, dtype=float)[np.isin(ds.y, cfg.classes)]
    L = np.sqrt(1 + (X**2).sum(1)).max()
    eps = (2 * L / (len(X) * cfg.lam)) ** 2 / cfg.noise_std**2
    assert res["n"] == len(X) and res["epsilon_rdp2"] == pytest.approx(eps, rel=1e-12)
    assert res["rdp_mse_lower_bound"] == pytest.approx(0.25 / math.expm1(eps), rel=1e-12)
    assert 0.05 < res["rdp_mse_lower_bound"] < 0.2  # the paper's "about 0.1"
    with open(tmp_path / "guo_dfil_hist.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == res["n"]
    b = np.array([float(r["mse_lower_bound"]) for r in rows])
    spec = np.array([float(r["mse_lower_bound_spectral"]) for r in rows])
    trinv = np.array([float(r["mse_lower_bound_trinv"]) for r in rows])
    dfil = np.array([float(r["dfil"]) for r in rows])
    np.testing.assert_allclose(b, 1 / dfil, rtol=1e-12)
    assert np.all(spec <= b * (1 + 1e-12)) and np.all(b <= trinv * (1 + 1e-9))  # Thm 2's chain
    assert b.min() > 1 and res["fraction_dfil_bound_above_1"] == 1.0  # Fig. 2: every sample above 1
    assert res["fraction_dfil_bound_above_rdp"] == 1.0
    assert res["dfil_bound_max"] / res["dfil_bound_min"] > 10  # "an extremely wide range"
    assert (tmp_path / "guo_dfil_hist.png").stat().st_size > 0
    assert res["note"] == FIL_LEAK_NOTE


def test_fig5_interrupted_run_resumes_to_the_same_records(fig5, tmp_path, monkeypatch):
    import rerokit.training.fil as fil

    _, straight = fig5
    orig, calls = fil.dpsgd_fil, []

    def once_then_interrupt(*a, **k):
        calls.append(a[3].noise_multiplier)  # the DPSGDSettings
        if len(calls) > 1:
            raise KeyboardInterrupt
        return orig(*a, **k)

    monkeypatch.setattr(fil, "dpsgd_fil", once_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_guo_fig5(tmp_path, TINY, progress=False, plot=False)
    lines = (tmp_path / "guo_fig5.jsonl").read_text().splitlines()
    assert len(lines) == 2  # the header and the finished cell
    with pytest.raises(ValueError, match="resume"):  # unfinished and not resumed: refused, never overwritten
        run_guo_fig5(tmp_path, TINY, progress=False, plot=False)
    counted = []

    def count(*a, **k):
        counted.append(1)
        return orig(*a, **k)

    monkeypatch.setattr(fil, "dpsgd_fil", count)
    resumed = run_guo_fig5(tmp_path, TINY, resume=True, progress=False, plot=False)
    assert len(counted) == len(straight["cells"]) - 1
    assert resumed["cells"] == straight["cells"]
    with pytest.raises(ValueError, match="settings"):
        run_guo_fig5(tmp_path, GuoFig5Config(**{**TINY.__dict__, "seed": 1}), resume=True, progress=False)


def test_fig5_repeats_average_the_runs(tmp_path):
    from rerokit.training.fil import dpsgd_fil

    cfg = GuoFig5Config(sigmas=(1.0,), steps=(2,), lr=2.0, hidden=(), train_size=12, coords=None, repeats=2)
    (cell,) = run_guo_fig5(tmp_path, cfg, progress=False, plot=False)["cells"]
    data = guo_fig5_setup(cfg)
    runs = [dpsgd_fil(data.module, data.X, data.Y, DPSGDSettings(noise_multiplier=1.0, clip=1.0, steps=2, lr=2.0, sample_rate=1.0), seed=s).dfil for s in (0, 1)]
    assert not np.allclose(runs[0], runs[1])  # the second step differs between the two noise draws
    mean = np.mean(runs, axis=0)
    assert cell["dfil_max"] == pytest.approx(mean.max(), rel=1e-6)
    assert cell["dfil_median"] == pytest.approx(np.median(mean), rel=1e-6)
