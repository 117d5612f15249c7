"""Prior-aware attacks (Hayes et al. 2023 Alg. 2, Alg. 3, App. G) on hand-made transcripts.

A hand-made transcript gives each of N candidates a clipped gradient direction per step
(norm C, i.e. "every gradient clipped") and sets g-bar_t = b_t g_{t,*} + N(0, sigma^2 C^2 I),
exactly the distribution the attacks assume. References: the Gaussian-DP closed form of the
ReRo bound for q = 1, gamma = Phi(Phi^-1(kappa) + sqrt(T)/sigma) (Hayes et al. Thm 2 with
Kaissis et al. 2023), and a brute-force mixture log-likelihood computed with scipy.
"""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from rerokit.attacks.prior_aware import (
    alg2_scores,
    alg3_scores,
    guess,
    loglik_scores,
    scores,
    step_statistics_from_grads,
    top_k_steps,
)
from rerokit.attacks.result import AttackResult
from rerokit.stats import clopper_pearson


def gdp_gamma(kappa, T, sigma):
    """Closed-form ReRo bound of full-batch DP-SGD (q = 1)."""
    return float(stats.norm.cdf(stats.norm.ppf(kappa) + math.sqrt(T) / sigma))


def transcript(K, T, N, P, sigma, C, *, q=1.0, directions="random", seed=0, weights=None):
    """K hand-made trials: candidate clipped grads (K,T,N,P), gbar (K,T,P), target index (K,)."""
    g = torch.Generator().manual_seed(seed)
    if directions == "antipodal":
        assert N == 2
        u = torch.randn(K, T, 1, P, generator=g, dtype=torch.float64)
        G = torch.cat([u, -u], dim=2)
    else:
        G = torch.randn(K, T, N, P, generator=g, dtype=torch.float64)
    G = C * G / G.norm(dim=-1, keepdim=True)
    if weights is None:
        tgt = torch.randint(0, N, (K,), generator=g)
    else:
        tgt = torch.multinomial(torch.as_tensor(weights, dtype=torch.float64), K, replacement=True, generator=g)
    b = (torch.rand(K, T, generator=g, dtype=torch.float64) < q).to(torch.float64)
    gstar = G[torch.arange(K), :, tgt]  # (K, T, P)
    gbar = b[..., None] * gstar + sigma * C * torch.randn(K, T, P, generator=g, dtype=torch.float64)
    return G, gbar, tgt, b


def success(score, tgt):
    return (guess(score) == tgt).numpy()


@pytest.mark.parametrize("C", [0.1, 1.0])
def test_no_noise_always_succeeds(C):
    G, gbar, tgt, _ = transcript(200, 20, 10, 30, 0.0, C)
    inner, sq = step_statistics_from_grads(G, gbar, C)
    assert torch.allclose(inner[torch.arange(200), :, tgt], torch.ones(200, 20, dtype=torch.float64))
    assert success(alg2_scores(inner), tgt).all()
    assert success(alg3_scores(inner, 1.0), tgt).all()


def test_huge_noise_success_is_kappa():
    K, N = 3000, 10
    G, gbar, tgt, _ = transcript(K, 5, N, 20, 1e4, 0.5, seed=1)
    inner, sq = step_statistics_from_grads(G, gbar, 0.5)
    for sc in (alg2_scores(inner), loglik_scores(inner, sq, 1e4, 1.0)):
        lo, hi = clopper_pearson(int(success(sc, tgt).sum()), K, 0.999)
        assert lo <= 1 / N <= hi


def test_nonuniform_prior_huge_noise_loglik_picks_heaviest():
    """With no information in the transcript the Bayes guess is the heaviest candidate:
    success -> kappa = max_i p_i (App. G, non-uniform prior)."""
    w = np.array([0.4, 0.3, 0.2, 0.1])
    K = 3000
    G, gbar, tgt, _ = transcript(K, 5, 4, 20, 1e4, 1.0, seed=2, weights=w)
    inner, sq = step_statistics_from_grads(G, gbar, 1.0)
    sc = loglik_scores(inner, sq, 1e4, 1.0, log_prior=torch.log(torch.as_tensor(w)))
    assert (guess(sc) == 0).all()
    lo, hi = clopper_pearson(int(success(sc, tgt).sum()), K, 0.999)
    assert lo <= w.max() <= hi


def test_antipodal_prior_attains_the_bound():
    """N = 2 with g_2 = -g_1: Alg. 2 succeeds iff 2T + 2 N(0, T sigma^2) > 0, i.e. with
    probability Phi(sqrt(T)/sigma) -- exactly the q = 1 bound at kappa = 1/2."""
    K, T, sigma = 4000, 16, 4.0
    G, gbar, tgt, _ = transcript(K, T, 2, 8, sigma, 0.1, directions="antipodal", seed=3)
    inner, _ = step_statistics_from_grads(G, gbar, 0.1)
    k = int(success(alg2_scores(inner), tgt).sum())
    lo, hi = clopper_pearson(k, K, 0.999)
    gamma = gdp_gamma(0.5, T, sigma)
    assert lo <= gamma <= hi


@pytest.mark.parametrize("N", [2, 10])
def test_never_significantly_above_bound(N):
    K, T, sigma = 3000, 25, 5.0
    G, gbar, tgt, _ = transcript(K, T, N, 4, sigma, 1.0, seed=4)
    inner, sq = step_statistics_from_grads(G, gbar, 1.0)
    gamma = gdp_gamma(1 / N, T, sigma)
    for sc in (alg2_scores(inner), loglik_scores(inner, sq, sigma, 1.0)):
        r = AttackResult.from_successes(success(sc, tgt), seed=4)
        assert r.interval[0] <= gamma
        assert r.value > 1 / N  # and the attack does learn something


def test_alg3_sums_top_qT():
    inner = torch.tensor([[5.0, -1.0], [1.0, 2.0], [3.0, 7.0], [-2.0, 0.5]])  # (T=4, N=2)
    assert top_k_steps(0.5, 4) == 2
    assert torch.equal(alg3_scores(inner, 0.5), torch.tensor([8.0, 9.0]))
    assert torch.equal(alg3_scores(inner, 0.01), torch.tensor([5.0, 7.0]))  # at least one step
    assert torch.equal(alg3_scores(inner, 1.0), alg2_scores(inner))
    batched = torch.stack([inner, -inner])  # leading trial dimension
    assert torch.equal(alg3_scores(batched, 0.5)[1], torch.tensor([1.0, 0.5]))


def test_loglik_full_batch_relation_to_alg2():
    """q = 1: loglik = (alg2 - sum_t n_t / 2) / sigma^2; with all gradients clipped the
    decisions coincide."""
    sigma = 2.0
    G, gbar, tgt, _ = transcript(500, 10, 6, 12, sigma, 0.3, seed=5)
    inner, sq = step_statistics_from_grads(G, gbar, 0.3)
    ll = loglik_scores(inner, sq, sigma, 1.0)
    assert torch.allclose(ll, (alg2_scores(inner) - sq.sum(-2) / 2) / sigma**2)
    assert torch.equal(guess(ll), guess(alg2_scores(inner)))
    # Unclipped (shorter) gradients: the sqnorm term matters and decisions may differ.
    G2 = G * torch.linspace(0.2, 1.0, 6, dtype=torch.float64)[:, None]
    inner2, sq2 = step_statistics_from_grads(G2, gbar, 0.3)
    ll2 = loglik_scores(inner2, sq2, sigma, 1.0)
    assert torch.allclose(ll2, (alg2_scores(inner2) - sq2.sum(-2) / 2) / sigma**2)


def test_loglik_equals_bruteforce_mixture_likelihood():
    """Score differences equal differences of sum_t ln[(1-q) N(gbar_t; 0, s^2 C^2 I) +
    q N(gbar_t; g_t^z, s^2 C^2 I)] computed with scipy densities."""
    q, sigma, C = 0.3, 1.5, 0.7
    G, gbar, tgt, _ = transcript(3, 8, 5, 6, sigma, C, q=q, seed=6)
    inner, sq = step_statistics_from_grads(G, gbar, C)
    ll = loglik_scores(inner, sq, sigma, q).numpy()
    Gn, gb = G.numpy(), gbar.numpy()
    cov = (sigma * C) ** 2 * np.eye(6)
    for k in range(3):
        ref = np.zeros(5)
        for i in range(5):
            for t in range(8):
                l0 = stats.multivariate_normal.logpdf(gb[k, t], np.zeros(6), cov)
                l1 = stats.multivariate_normal.logpdf(gb[k, t], Gn[k, t, i], cov)
                ref[i] += np.logaddexp(math.log(1 - q) + l0, math.log(q) + l1)
        np.testing.assert_allclose(ll[k] - ll[k, 0], ref - ref[0], rtol=1e-9, atol=1e-9)


def test_minibatch_alg3_and_loglik_beat_chance_and_respect_bound():
    K, T, N, q, sigma = 2000, 40, 10, 0.1, 0.7
    G, gbar, tgt, _ = transcript(K, T, N, 16, sigma, 1.0, q=q, seed=7)
    inner, sq = step_statistics_from_grads(G, gbar, 1.0)
    ll = AttackResult.from_successes(success(loglik_scores(inner, sq, sigma, q), tgt), seed=7)
    a3 = AttackResult.from_successes(success(alg3_scores(inner, q), tgt), seed=7)
    assert a3.value > 0.3 and ll.value > 0.3
    # loglik is the Bayes-optimal decision for this model: not significantly worse than Alg. 3.
    assert ll.interval[1] >= a3.value


def test_bad_input():
    inner = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="sample_rate"):
        alg3_scores(inner, 0.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        loglik_scores(inner, inner, 0.0, 1.0)
    with pytest.raises(ValueError, match="attack"):
        scores("alg9", inner)
    with pytest.raises(ValueError, match="not finite"):
        guess(torch.tensor([0.0, float("nan")]))
    with pytest.raises(ValueError, match="disagree"):
        step_statistics_from_grads(torch.zeros(3, 2, 5), torch.zeros(3, 4), 1.0)


def test_attack_result_intervals():
    r = AttackResult.from_successes([1, 1, 0, 1], seed=3, settings={"a": 1})
    assert r.value == 0.75 and r.interval == clopper_pearson(3, 4)
    d = r.to_dict()
    assert d["success"] == 0.75 and d["trials"] == 4 and d["seed"] == 3 and d["settings"] == {"a": 1}
    m = AttackResult.from_values([1.0, 2.0, 3.0], seed=0, metric="mse")
    half = stats.t.ppf(0.975, 2) * 1.0 / math.sqrt(3)
    assert m.value == 2.0 and m.interval == pytest.approx((2 - half, 2 + half))
    p = AttackResult.from_values([0.9, 1.0], seed=0, metric="success", support=(0.0, 1.0))
    assert p.interval[1] == 1.0 and p.interval[0] < 0.9
    with pytest.raises(ValueError, match="finite"):
        AttackResult.from_values([1.0, float("nan")], seed=0, metric="mse")


def test_candidate_statistics_with_a_real_model():
    """(T, N) statistics from the engine's clipped per-sample gradients, vmapped over steps,
    equal a step-by-step loop; the target's own statistic is ||clip(g)||^2 / C^2 <= 1."""
    from functools import partial

    from rerokit.attacks.prior_aware import candidate_statistics
    from rerokit.training import FunctionalModel, make_mlp, per_sample_clipped_grads

    fm = FunctionalModel(make_mlp(6, [5], 3).double())
    g = torch.Generator().manual_seed(0)
    thetas = torch.randn(4, fm.num_params, generator=g, dtype=torch.float64)
    Xc = torch.rand(5, 6, generator=g, dtype=torch.float64)
    yc = torch.randint(0, 3, (5,), generator=g)
    C = 0.2
    G = torch.stack([per_sample_clipped_grads(fm, th, Xc, yc, C) for th in thetas])  # (T, N, P)
    gbar = G[:, 2]  # noise-free transcript with target 2
    inner, sq = candidate_statistics(partial(per_sample_clipped_grads, fm), thetas, Xc, yc, gbar, C)
    ref_inner = torch.einsum("tnp,tp->tn", G, gbar) / C**2
    torch.testing.assert_close(inner, ref_inner)
    torch.testing.assert_close(inner[:, 2], sq[:, 2])
    assert bool((sq <= 1 + 1e-12).all())
    assert int(guess(alg2_scores(inner))) == 2
