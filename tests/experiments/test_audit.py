"""Audit runner: trial construction, attack success vs the ReRo bound on real DP-SGD runs,
resume. Small settings (digits MLP, |D-| = 49-99, T <= 20) keep these fast; the reference for
the bound is the closed form gamma = Phi(Phi^-1(kappa) + sqrt(T)/sigma) of full-batch DP-SGD
(Hayes et al. 2023 Thm 2 with q = 1, Gaussian DP)."""

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import stats

from rerokit.experiments.audit import AuditConfig, GradientAttack, RunOptions
from rerokit.experiments.audit import make_trial, rero_gamma, run_gradient_audit, run_prior_aware_audit
from rerokit.stats import clopper_pearson


def small(sigma, **kw):
    base = dict(noise_multiplier=sigma, n_known=49, steps=10, clip=0.1, lr=2.0)
    base.update(kw)
    return AuditConfig(**base)


def test_make_trial_draws_disjoint_sets_deterministically():
    t = make_trial(100, 10, 50, seed=3)
    assert len(set(t.prior)) == 10 and len(set(t.known)) == 50
    assert not set(t.prior) & set(t.known)
    assert 0 <= t.target < 10 and t.target_index == t.prior[t.target]
    u = make_trial(100, 10, 50, seed=3)
    assert np.array_equal(t.prior, u.prior) and np.array_equal(t.known, u.known) and t.target == u.target
    targets = [make_trial(100, 4, 10, seed=s, prior_weights=[0.7, 0.1, 0.1, 0.1]).target for s in range(400)]
    assert 0.6 < np.mean(np.array(targets) == 0) < 0.8
    with pytest.raises(ValueError, match="prior_size \\+ n_known"):
        make_trial(100, 10, 91, seed=0)


def test_rero_gamma_matches_closed_form():
    for sigma, T, kappa in [(2.0, 10, 0.1), (5.0, 25, 0.5)]:
        ref = stats.norm.cdf(stats.norm.ppf(kappa) + math.sqrt(T) / sigma)
        assert rero_gamma(sigma, 1.0, T, kappa) == pytest.approx(ref, abs=1e-3)
        assert rero_gamma(sigma, 1.0, T, kappa) >= ref - 1e-9  # safe side
    assert rero_gamma(0.0, 1.0, 10, 0.1) == 1.0


def test_no_noise_success_is_one():
    rep = run_prior_aware_audit(small(0.0), 16, seed=1, attacks=("alg2", "alg3"), options=RunOptions(progress=False))
    assert rep.results["alg2"].value == 1.0 and rep.results["alg3"].value == 1.0
    assert rep.gamma == 1.0
    # C = 0.1: every target gradient is clipped at every step
    assert min(r["target_clipped_fraction"] for r in rep.records) == 1.0


def test_huge_noise_success_is_kappa():
    K = 300
    rep = run_prior_aware_audit(small(1e4, steps=4, n_known=19), K, seed=2, attacks=("alg2", "loglik"), options=RunOptions(progress=False))
    for a in ("alg2", "loglik"):
        k = sum(r["success"][a] for r in rep.records)
        lo, hi = clopper_pearson(k, K, 0.999)
        assert lo <= 0.1 <= hi
    assert rep.gamma == pytest.approx(0.1, abs=1e-3)


@pytest.mark.slow
def test_never_significantly_above_bound_moderate():
    """sigma = 3, T = 20, N = 10: gamma = Phi(Phi^-1(0.1) + sqrt(20)/3) ~ 0.45; the attack's
    Clopper-Pearson lower end must not exceed gamma, and it must beat the baseline."""
    cfg = small(3.0, steps=20)
    rep = run_prior_aware_audit(cfg, 200, seed=3, attacks=("alg2", "loglik"), options=RunOptions(progress=False))
    for a in ("alg2", "loglik"):
        r = rep.results[a]
        assert r.interval[0] <= rep.gamma, (a, r.value, rep.gamma)
        assert r.interval[1] >= cfg.kappa
    assert rep.results["alg2"].value > 0.2
    # q = 1, every gradient clipped, uniform prior: loglik and Alg. 2 decide alike (the only
    # difference is the engine's 1e-6 clip guard in ||clip(g)||^2).
    agree = np.mean([r["guess"]["alg2"] == r["guess"]["loglik"] for r in rep.records])
    assert agree >= 0.98


def test_nonuniform_prior_huge_noise():
    w = (0.5, 0.2, 0.2, 0.1)
    cfg = small(1e4, steps=3, n_known=19, prior_size=4, prior_weights=w)
    assert cfg.kappa == 0.5
    rep = run_prior_aware_audit(cfg, 200, seed=4, attacks=("loglik",), options=RunOptions(progress=False))
    assert all(r["guess"]["loglik"] == 0 for r in rep.records)  # heaviest candidate
    lo, hi = clopper_pearson(sum(r["success"]["loglik"] for r in rep.records), 200, 0.999)
    assert lo <= 0.5 <= hi


def test_resume_does_not_repeat_and_equals_straight_run(tmp_path):
    cfg = small(2.0, steps=6)
    straight = run_prior_aware_audit(cfg, 12, seed=5, attacks=("alg2", "loglik"), options=RunOptions(chunk_size=4, progress=False))
    p = tmp_path / "r.jsonl"
    run_prior_aware_audit(cfg, 5, seed=5, attacks=("alg2", "loglik"), options=RunOptions(out=str(p), chunk_size=4, progress=False))
    again = run_prior_aware_audit(cfg, 12, seed=5, attacks=("alg2", "loglik"), options=RunOptions(out=str(p), resume=True, chunk_size=4, progress=False))
    lines = [json.loads(s) for s in p.read_text().splitlines()]
    ids = [ln["trial"] for ln in lines if ln["kind"] == "trial"]
    assert sorted(ids) == list(range(12)) and len(ids) == len(set(ids))
    for a, b in zip(straight.records, again.records):
        assert a["trial"] == b["trial"] and a["seed"] == b["seed"] and a["prior"] == b["prior"]
        assert a["guess"] == b["guess"] and a["success"] == b["success"]
    # the finished file again without resume: reported again; with other settings: both options named
    reused = run_prior_aware_audit(cfg, 12, seed=5, attacks=("alg2", "loglik"),
                                   options=RunOptions(out=str(p), chunk_size=4, progress=False))
    assert reused.records == again.records
    with pytest.raises(ValueError, match="other settings.*--overwrite"):
        run_prior_aware_audit(cfg, 12, seed=5, attacks=("alg2", "loglik"), options=RunOptions(out=str(p), progress=False))
    with pytest.raises(ValueError, match="other settings"):
        run_prior_aware_audit(cfg, 12, seed=6, attacks=("alg2", "loglik"), options=RunOptions(out=str(p), resume=True, progress=False))


def test_no_subtraction_variant_is_weaker():
    """App. E / Fig. 10: without subtracting the known gradients the attack degrades."""
    rep = run_prior_aware_audit(small(0.0, n_known=99), 24, seed=7, attacks=("alg2", "alg2_nosub"), options=RunOptions(progress=False))
    assert rep.results["alg2"].value == 1.0
    assert rep.results["alg2_nosub"].value < 1.0


@pytest.mark.slow
def test_gradient_audit_without_noise_recovers_target():
    cfg = small(0.0, steps=4, n_known=9)
    rep = run_gradient_audit(cfg, 1, seed=8, prior_sizes=(2, 10), attack=GradientAttack(iterations=120, restarts=1), options=RunOptions(progress=False))
    assert rep.results["mse"].value < 1e-3
    assert rep.results["prior_success_10"].value == 1.0
    assert rep.results["prior_success_2"].value == 1.0


def test_bad_config():
    with pytest.raises(ValueError, match="prior_size"):
        AuditConfig(noise_multiplier=1.0, prior_size=1)
    with pytest.raises(ValueError, match="noise_multiplier"):
        AuditConfig(noise_multiplier=float("nan"))
    with pytest.raises(ValueError, match="prior_weights"):
        AuditConfig(noise_multiplier=1.0, prior_size=2, prior_weights=(0.5, 0.6))
    with pytest.raises(ValueError, match="attack"):
        run_prior_aware_audit(small(1.0), 2, seed=0, attacks=("alg7",), options=RunOptions(progress=False))
    with pytest.raises(ValueError, match="loglik"):
        run_prior_aware_audit(small(0.0), 2, seed=0, attacks=("loglik",), options=RunOptions(progress=False))
    with pytest.raises(ValueError, match="prior_size \\+ n_known"):
        run_prior_aware_audit(small(1.0, n_known=1790), 2, seed=0, options=RunOptions(progress=False))


def test_mlp_candidate_statistics_equal_generic_vmap_path():
    """The exact MLP shortcut (delta^T G-bar a per layer) equals vmapped per-sample clipped
    gradients dotted with g-bar, in float64, with some candidates unclipped (large C)."""
    import torch

    from rerokit.experiments.audit import candidate_statistics_many
    from rerokit.training import FunctionalModel, make_mlp

    fm = FunctionalModel(make_mlp(12, [7, 5], 4).double())
    g = torch.Generator().manual_seed(0)
    k, T, N = 3, 4, 6
    thetas = torch.randn(k, T, fm.num_params, generator=g, dtype=torch.float64)
    gbar = torch.randn(k, T, fm.num_params, generator=g, dtype=torch.float64)
    Xc = torch.rand(k, N, 1, 3, 4, generator=g, dtype=torch.float64)
    yc = torch.randint(0, 4, (k, N), generator=g)
    for C in (0.05, 1e3):
        a = candidate_statistics_many(fm, thetas, gbar, Xc, yc, C, method="mlp", max_elements=100)
        b = candidate_statistics_many(fm, thetas, gbar, Xc, yc, C, method="vmap")
        torch.testing.assert_close(a[0], b[0], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(a[1], b[1], rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_hayes_fig5_and_fig8_write_png_csv_matching_trials(tmp_path):
    """Tiny Fig. 5 / Fig. 8 runs: PNG and CSV written; each CSV success equals the fraction of
    successful trials in its JSONL file; the bound column equals rero_gamma at kappa = 1/N."""
    import csv

    from rerokit.experiments.hayes_figures import fig5, fig8

    from rerokit.experiments.hayes_figures import FIG3_AUDIT, FIG5_AUDIT

    quiet = RunOptions(progress=False)
    r = fig5(tmp_path, sample_rates=(0.5, 1.0), trials=6, audit=dataclasses.replace(FIG5_AUDIT, steps=3, n_known=19),
             options=quiet)
    assert (tmp_path / "fig5.png").stat().st_size > 0
    rows = list(csv.DictReader(open(tmp_path / "fig5.csv")))
    assert len(rows) == 4 and {x["attack"] for x in rows} == {"alg3", "loglik"}
    for row in rows:
        q = float(row["x"])
        recs = [json.loads(s) for s in (tmp_path / f"fig5_q{q:g}.jsonl").read_text().splitlines()[1:]]
        assert float(row["value"]) == pytest.approx(np.mean([t["success"][row["attack"]] for t in recs]))
        assert float(row["gamma"]) == pytest.approx(rero_gamma(float(row["noise_multiplier"]), q, 3, 0.1))
    r = fig8(tmp_path, epsilons=(8,), prior_sizes=(2, 8), trials=4, gradient_trials=1,
             audit=dataclasses.replace(FIG3_AUDIT, steps=3, n_known=19), attack=GradientAttack(iterations=5, restarts=1),
             options=quiet)
    with pytest.raises(ValueError, match="sample_rate"):  # set per cell by the figure: never silently replaced
        fig5(tmp_path, audit=dataclasses.replace(FIG5_AUDIT, sample_rate=0.5), options=quiet)
    with pytest.raises(ValueError, match="noise_multiplier"):
        fig8(tmp_path, audit=dataclasses.replace(FIG3_AUDIT, noise_multiplier=1.0), options=quiet)
    with pytest.raises(ValueError, match="out"):
        fig5(tmp_path, options=RunOptions(out="x.jsonl"))
    assert (tmp_path / "fig8.png").stat().st_size > 0
    attacks = {(x["attack"], x["prior_size"]) for x in r["rows"] if x["metric"] == "success"}
    assert attacks == {("prior-aware (alg2)", 2), ("prior-aware (alg2)", 8),
                       ("gradient (Eq. 1 + App. D)", 2), ("gradient (Eq. 1 + App. D)", 8)}


def test_empirical_lower_bounds_never_refute_the_certified_guarantee_and_rise_with_epsilon():
    """Seeded prior-aware audits (full batch: the mechanism is exactly mu-GDP, mu = sqrt(T)/sigma)
    at increasing epsilon: what the attack proves (mu_lo, eps_lo at 95% one-sided confidence) never
    exceeds the mechanism's certified mu / epsilon, and grows with epsilon (Hayes et al. 2023;
    Nasr et al. 2021). Sizes: 120 trials, T = 10, |D-| = 49, prior of 10."""
    import math

    from rerokit.bounds.calibrate import noise_multiplier_for_epsilon
    from rerokit.bounds.gaussian import gaussian_epsilon

    lows = []
    for eps in (1.0, 8.0, 64.0):
        sigma = noise_multiplier_for_epsilon(eps, 1e-5, 1.0, 10)
        rep = run_prior_aware_audit(small(sigma), 120, 3, attacks=("alg2",), options=RunOptions(chunk_size=60, progress=False))
        d = rep.to_dict(primary="alg2", delta=1e-5)
        assert d["empirical_success_lower"] <= d["success"] <= d["gamma"] + 0.15  # sanity: estimate vs bound
        assert d["empirical_mu_lower"] <= math.sqrt(10) / sigma
        # q = 1: the exact epsilon of the Gaussian mechanism with mu = sqrt(T)/sigma (Balle & Wang 2018)
        assert d["empirical_epsilon_lower"] <= gaussian_epsilon(1e-5, math.sqrt(10) / sigma) <= eps * (1 + 1e-9)
        lows.append((d["empirical_mu_lower"], d["empirical_epsilon_lower"]))
    assert lows[0][0] <= lows[1][0] <= lows[2][0] and lows[2][0] > 0
    assert lows[0][1] <= lows[1][1] <= lows[2][1] and lows[2][1] > 0
