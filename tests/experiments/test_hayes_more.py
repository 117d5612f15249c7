"""Hayes et al. (2023) Figs. 3 (prior sizes), 9, 12, 13 at tiny scale: the bounds against closed
forms, the attack against its exact noiseless behaviour, the gradient norms against a direct loop,
resume against a fresh run."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import torch
from scipy import stats

from rerokit.experiments.audit import AuditConfig
from rerokit.experiments.hayes_cells import CellOptions, noise_range, run_prior_cell, tolerance_gamma
from rerokit.experiments.hayes_more import HayesRun, fig3_sizes, fig9, fig12, fig13

TINY = dict(trials=3, steps=2, n_known=12, progress=False)


def _above(bound: float, truth: float, tol: float = 5e-5) -> bool:
    """The certified bound (exact method: a pessimistic PLD) is never below the truth, and close to it."""
    return truth - 1e-12 <= bound <= truth + tol


def _gdp_gamma(kappa: float, sigma: float, T: int) -> float:
    """q = 1: gamma = Phi(Phi^-1(kappa) + sqrt(T) / sigma) (Gaussian DP, Kaissis et al. 2023)."""
    return float(stats.norm.cdf(stats.norm.ppf(kappa) + math.sqrt(T) / sigma))


def test_fig3_sizes_bound_is_the_gaussian_closed_form_and_resume_repeats_nothing(tmp_path):
    run = HayesRun(**TINY)
    res = fig3_sizes(tmp_path, run, prior_sizes=(2, 64), epsilons=(2.0,))
    assert (tmp_path / "fig3_sizes.png").stat().st_size > 0
    rows = list(csv.DictReader(open(tmp_path / "fig3_sizes.csv")))
    assert [int(r["prior_size"]) for r in rows] == [2, 64]
    for r in res["rows"]:
        assert _above(r["gamma"], _gdp_gamma(1 / r["prior_size"], r["noise_multiplier"], 2))
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
    # a second run with resume reads every trial from the files: same rows, no line appended
    before = (tmp_path / "fig3_sizes_n64_eps2.jsonl").read_text()
    again = fig3_sizes(tmp_path, HayesRun(**TINY, resume=True), prior_sizes=(2, 64), epsilons=(2.0,))
    assert (tmp_path / "fig3_sizes_n64_eps2.jsonl").read_text() == before
    assert [r["value"] for r in again["rows"]] == [r["value"] for r in res["rows"]]


def test_fig3_sizes_refuses_a_data_prior_larger_than_the_digits(tmp_path):
    with pytest.raises(ValueError, match="prior_sizes"):
        fig3_sizes(tmp_path, HayesRun(**TINY), prior_sizes=(2048,))


@pytest.mark.parametrize("prior", ["data", "noise"])
def test_without_noise_alg2_always_finds_the_target(prior):
    # sigma = 0, full batch, every candidate clipped: sum_t <g_i, g*> <= T C^2 with equality only for z*
    cfg = AuditConfig(noise_multiplier=0.0, prior_size=8, n_known=10, steps=2, clip=1e-3)
    rep = run_prior_cell(cfg, 4, 1, options=CellOptions(prior=prior), progress=False)
    assert rep.results["alg2"].value == 1.0
    assert all(r["target_clipped_fraction"] == 1.0 for r in rep.records)


def test_noise_range_matches_the_data_pairwise_distance_by_simulation():
    rng = np.random.default_rng(0)
    X = rng.beta(0.5, 2.0, size=(4000, 16))
    R = noise_range(X)
    a, b = rng.integers(0, 4000, (2, 20000))
    keep = a != b
    data = ((X[a[keep]] - X[b[keep]]) ** 2).sum(1).mean()
    u, v = rng.uniform(0, R, (2, 20000, 16))
    assert ((u - v) ** 2).sum(1).mean() == pytest.approx(data, rel=0.03)


def test_fig9_noise_prior_records_and_shared_bound(tmp_path):
    res = fig9(tmp_path, HayesRun(**TINY), epsilons=(4.0,), prior_size=5)
    rows = {r["prior"]: r for r in res["rows"]}
    assert set(rows) == {"data", "noise"}
    assert rows["data"]["gamma"] == rows["noise"]["gamma"]
    assert _above(rows["data"]["gamma"], _gdp_gamma(0.2, rows["data"]["noise_multiplier"], 2))
    header = json.loads((tmp_path / "fig9_noise_eps4.jsonl").read_text().splitlines()[0])
    assert "noise" in json.dumps(header)


def test_fig13_gradient_norms_match_a_direct_per_sample_loop(tmp_path):
    from rerokit.data import load_dataset
    from rerokit.experiments.audit import build_model, make_trial

    res = fig13(tmp_path, HayesRun(trials=2, steps=1, n_known=12, progress=False), epsilons=(4.0,),
                clips=(1e-3, 1.0), prior_size=4)
    small, big = sorted(res["rows"], key=lambda r: r["clip"])
    assert small["clipped_grad_norm"] == pytest.approx(1e-3)  # every gradient clipped at C = 1e-3
    assert big["clipped_grad_norm"] <= min(1.0, big["grad_norm"]) + 1e-12
    # T = 1: theta_1 is the initialisation; recompute the norms of trial 0 one sample at a time
    rec = json.loads((tmp_path / "fig13_C1_eps4.jsonl").read_text().splitlines()[1])
    cfg = AuditConfig(noise_multiplier=1.0, prior_size=4, n_known=12, steps=1, clip=1.0)
    ds = load_dataset("digits")
    fm = build_model(cfg, ds.sample_shape, ds.num_classes)
    t = make_trial(ds.n, 4, 12, rec["seed"])
    theta = fm.init_flat(rec["seed"]).requires_grad_(True)
    norms = []
    for i in list(t.known) + [t.target_index]:
        logits = fm.logits(theta, torch.as_tensor(ds.X[i : i + 1]))
        (g,) = torch.autograd.grad(torch.nn.functional.cross_entropy(logits, torch.as_tensor(ds.y[i : i + 1])), theta)
        norms.append(float(g.norm()))
    assert rec["grad_norm"] == pytest.approx(np.mean(norms), rel=1e-5)
    assert rec["clipped_grad_norm"] == pytest.approx(np.mean(np.minimum(norms, 1.0)), rel=1e-5)


def test_tolerance_gamma_is_the_closed_form_at_the_binomial_kappa():
    cfg = AuditConfig(noise_multiplier=2.0, steps=9)
    for rho in (0.5, 0.8, 1.0):
        lk, g = tolerance_gamma(cfg, rho)
        # 17 pixel levels, tau = 32/255: the best guess catches 5 of 17 levels
        need = math.ceil(rho * 64)
        assert lk == pytest.approx(stats.binom.logsf(need - 1, 64, 5 / 17), rel=1e-6)
        truth = _gdp_gamma(math.exp(lk), 2.0, 9)
        assert _above(g, truth)


def test_fig12_success_falls_with_rho_and_rho_zero_always_succeeds(tmp_path):
    res = fig12(tmp_path, HayesRun(trials=2, steps=2, n_known=12, progress=False), epsilons=(100.0,),
                rhos=(0.0, 0.5, 1.0), iterations=3, restarts=1)
    succ = [r for r in res["rows"] if r["metric"] == "success"]
    assert [r["rho"] for r in succ] == [0.0, 0.5, 1.0]
    assert succ[0]["value"] == 1.0 and succ[0]["gamma"] == 1.0
    assert succ[0]["value"] >= succ[1]["value"] >= succ[2]["value"]
    assert succ[2]["log_kappa"] < succ[1]["log_kappa"] < 0
    # the model-free all-zero guess on the digits: always meets rho = 0, and falls with rho
    assert succ[0]["zero_guess_success"] == 1.0 >= succ[1]["zero_guess_success"] >= succ[2]["zero_guess_success"]
    assert any(r["metric"] == "mse" for r in res["rows"])


def test_weighted_priors_are_left_to_the_plain_audit():
    cfg = AuditConfig(noise_multiplier=1.0, prior_size=2, n_known=5, steps=1, prior_weights=(0.7, 0.3))
    with pytest.raises(ValueError, match="prior_weights"):
        run_prior_cell(cfg, 1, 0, progress=False)
