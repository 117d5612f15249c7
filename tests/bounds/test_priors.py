"""Baseline kappa of each prior family, against independent computations and paper numbers."""

import math

import numpy as np
import pytest
from scipy import stats

from rerokit.bounds.priors import (
    DiscretePrior,
    GaussianPrior,
    PixelTolerancePrior,
    UniformBallPrior,
    UniformDiscretePrior,
    kappa_from_samples,
    log10_kappa,
    log_binom_sf,
    log_chi2_cdf,
)


def _sci(log10_value):
    """(mantissa, exponent) of 10**log10_value, for comparing with printed numbers."""
    e = math.floor(log10_value)
    return 10 ** (log10_value - e), e


# ----------------------------------------------------------------------------- discrete priors


def test_uniform_discrete_is_one_over_n_and_one_beyond_eta_1():
    for n in (1, 2, 10, 100, 10**6):
        p = UniformDiscretePrior(n)
        assert p.kappa() == pytest.approx(1.0 / n, rel=1e-14)
        # the same as the weighted prior with equal weights (independent code path)
        if n <= 1000:
            assert p.log_kappa() == pytest.approx(DiscretePrior([3.0] * n).log_kappa(), abs=1e-14)
        assert p.kappa(1.0) == 1.0  # every guess has 0/1 error <= 1


def test_discrete_prior_kappa_is_success_of_best_oblivious_guess():
    # Monte Carlo: draw targets from the prior, score every fixed guess; the best empirical
    # success matches max_i p_i within 4 standard errors.
    rng = np.random.default_rng(0)
    n = 100_000
    for _ in range(5):
        w = rng.gamma(0.5, size=rng.integers(2, 30))
        z = rng.choice(len(w), size=n, p=w / w.sum())
        best = np.bincount(z, minlength=len(w)).max() / n
        k = DiscretePrior(w).kappa()
        assert abs(best - k) < 4 * math.sqrt(k * (1 - k) / n) + 1e-12
    # zero weights are allowed as long as one is positive
    assert DiscretePrior([0.0, 0.0, 2.0]).kappa() == 1.0


@pytest.mark.parametrize(
    "weights", [[], [1.0, -0.1], [0.0, 0.0], [1.0, float("nan")], [1.0, float("inf")], [[1.0, 2.0]]]
)
def test_discrete_prior_rejects_bad_weights(weights):
    with pytest.raises(ValueError, match="weights"):
        DiscretePrior(weights)


@pytest.mark.parametrize("n", [0, -3, 2.5, float("nan")])
def test_uniform_discrete_rejects_bad_size(n):
    with pytest.raises((ValueError, TypeError), match="prior_size"):
        UniformDiscretePrior(n)


# ----------------------------------------------------------------------------- unit ball


def test_ball_closed_form_and_saturation():
    assert UniformBallPrior(10).kappa(0.5) == pytest.approx(0.5**10, rel=1e-14)
    assert UniformBallPrior(3).kappa(1.0) == 1.0 and UniformBallPrior(3).kappa(1.7) == 1.0
    assert log10_kappa(UniformBallPrior(10_000).log_kappa(0.5)) == pytest.approx(-3010.2999566, rel=1e-10)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="eta"):
            UniformBallPrior(3).kappa(bad)


@pytest.mark.parametrize("d,eta", [(1, 0.3), (2, 0.5), (3, 0.7)])
def test_ball_kappa_matches_monte_carlo_sup_over_centres(d, eta):
    """Prop. 6 proof: sup_z0 Vol(B_1 cap B_eta(z0)) / Vol(B_1) = eta^d. Monte Carlo over centres
    at several radii: the centre attains eta^d and no centre does better (3.5 sigma tolerance)."""
    rng = np.random.default_rng(1)
    n = 200_000
    g = rng.standard_normal((n, d))
    z = g / np.linalg.norm(g, axis=1, keepdims=True) * rng.uniform(size=(n, 1)) ** (1.0 / d)
    k = UniformBallPrior(d).kappa(eta)
    se = math.sqrt(k * (1 - k) / n)
    u = np.zeros(d)
    u[0] = 1.0
    rates = []
    for r in (0.0, 0.5 * (1 - eta), 1 - eta, 1 - eta / 2, 1.0):
        rates.append(np.mean(np.linalg.norm(z - r * u, axis=1) <= eta))
    assert abs(rates[0] - k) < 3.5 * se  # centre attains eta^d
    assert abs(rates[2] - k) < 3.5 * se  # any centre with ||z0|| <= 1 - eta does too
    assert max(rates) < k + 3.5 * se  # nothing beats it
    assert rates[-1] < k - 3.5 * se  # a centre on the sphere loses mass


# ----------------------------------------------------------------------------- Gaussian


def test_gaussian_kappa_equals_chi2_cdf_where_representable():
    for d, s, eta in [(1, 1.0, 0.5), (2, 0.3, 0.2), (10, 1.0, 3.0), (100, 0.1, 0.9), (784, 1.0, 26.0)]:
        exact = stats.chi2.cdf((eta / s) ** 2, d)
        assert GaussianPrior(d, s).kappa(eta) == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("d,x", [(784, 1.0), (3072, 10.0), (10, 1e-250), (1, 1e-300), (50_000, 100.0)])
def test_log_chi2_cdf_in_underflow_regime_matches_mpmath(d, x, monkeypatch):
    mpmath = pytest.importorskip("mpmath")  # in the test env via torch -> sympy
    monkeypatch.setattr(mpmath.mp, "dps", 50)  # restored after the test
    ref = float(mpmath.log(mpmath.gammainc(mpmath.mpf(d) / 2, 0, mpmath.mpf(x) / 2, regularized=True)))
    got = log_chi2_cdf(x, d)
    assert math.isfinite(got)
    assert got == pytest.approx(ref, rel=1e-10)


def test_gaussian_mean_is_best_guess_monte_carlo():
    """Prop. 7 proof: argmax_{z0} P(||Z - z0|| <= eta) is the mean (checked by MC in d = 3)."""
    rng = np.random.default_rng(2)
    d, s, eta, n = 3, 1.0, 1.2, 200_000
    z = rng.standard_normal((n, d)) * s
    k = GaussianPrior(d, s).kappa(eta)
    se = math.sqrt(k * (1 - k) / n)
    assert abs(np.mean(np.linalg.norm(z, axis=1) <= eta) - k) < 3.5 * se
    for shift in (0.2, 0.5, 1.0):
        z0 = np.full(d, shift / math.sqrt(d))
        assert np.mean(np.linalg.norm(z - z0, axis=1) <= eta) < k + 3.5 * se


def test_gaussian_tail_bound_of_prop7_upper_bounds_exact():
    for d in (1, 10, 100, 1000):
        for r in (0.01, 0.25, 0.9):
            p = GaussianPrior(d, 1.0)
            eta = math.sqrt(r * d)
            assert p.log_kappa(eta) <= p.log_kappa_tail_bound(eta) + 1e-12


def test_gaussian_kappa_monotone_in_eta_and_sigma():
    etas = np.linspace(0.05, 5, 40)
    lk = [GaussianPrior(50, 0.3).log_kappa(e) for e in etas]
    assert np.all(np.diff(lk) >= 0)
    lk_s = [GaussianPrior(50, s).log_kappa(1.0) for s in np.linspace(0.05, 2, 30)]
    assert np.all(np.diff(lk_s) <= 0)


# ----------------------------------------------------------------------------- pixels (App. I)


def test_app_i_numbers_mnist_and_cifar10():
    """Hayes et al. 2023, App. I: the prior probability of success (rho = 1, delta = 32/255,
    uniform pixels, (2 x 32/256)^(d rho)) is 9.66e-473 for MNIST (d = 28*28) and 2.96e-1850 for
    CIFAR-10 (d = 32*32*3). Both settings that give the paper's p = 64/256 are checked: 256 grid
    levels with the strict |z_i - zhat_i| < 32/255, and continuous pixels with delta = 32/256."""
    for kw in ({"delta": 32 / 255, "levels": 256}, {"delta": 32 / 256}):
        mn = PixelTolerancePrior(784, rho=1.0, **kw)
        cf = PixelTolerancePrior(3072, rho=1.0, **kw)
        assert mn.p == pytest.approx(0.25, rel=1e-12)
        m, e = _sci(log10_kappa(mn.log_kappa()))
        assert e == -473 and round(m, 2) == 9.66
        m, e = _sci(log10_kappa(cf.log_kappa()))
        assert e == -1850 and round(m, 2) == 2.96
        assert mn.kappa() == 0.0  # underflows as a float; log10_kappa above is exact


def _brute_force_levels(L, delta, strict):
    """Max over guesses (fine grid incl. half-steps) of #grid points within delta."""
    grid = np.arange(L) / (L - 1)
    guesses = np.concatenate([grid, (np.arange(2 * L) / (2 * (L - 1)))[: 2 * L - 1], np.linspace(0, 1, 4001)])
    dist = np.abs(grid[None, :] - guesses[:, None])
    # exact rational comparison via integer units of 1/(2(L-1)) is not needed: tolerance 1e-12
    within = dist < delta - 1e-12 if strict else dist <= delta + 1e-12
    return int(within.sum(axis=1).max())


@pytest.mark.parametrize("L", [2, 5, 8, 17])
def test_matching_levels_against_brute_force(L):
    for j in range(1, 2 * L + 2):
        delta = j / (2.0 * (L - 1)) * 0.999999 if j % 3 == 0 else j / (2.0 * (L - 1))
        for strict in (True, False):
            pr = PixelTolerancePrior(4, delta, levels=L, strict=strict)
            assert pr.matching_levels == _brute_force_levels(L, delta, strict), (L, delta, strict)


def test_pixel_tail_matches_scipy_and_monte_carlo():
    # representable regime: equals scipy's binomial survival function
    for d, delta, rho in [(20, 0.1, 0.6), (50, 0.3, 0.5), (784, 0.125, 0.3), (10, 0.05, 0.0)]:
        pr = PixelTolerancePrior(d, delta, rho)
        k = math.ceil(rho * d - 1e-9)
        assert pr.kappa() == pytest.approx(stats.binom.sf(k - 1, d, min(1.0, 2 * delta)), rel=1e-9)
    # Monte Carlo: uniform pixels, best guess 1/2, fraction within delta >= rho
    rng = np.random.default_rng(3)
    d, delta, rho, n = 12, 0.2, 0.5, 200_000
    z = rng.uniform(size=(n, d))
    rate = np.mean(np.mean(np.abs(z - 0.5) < delta, axis=1) >= rho)
    k = PixelTolerancePrior(d, delta, rho).kappa()
    assert abs(rate - k) < 3.5 * math.sqrt(k * (1 - k) / n)


def test_pixel_tail_is_at_least_the_papers_fixed_subset_formula_and_monotone_in_rho():
    """For rho < 1 App. I writes (2 delta)^(d rho): the chance that one fixed set of pixels
    matches, a lower bound on kappa (so unsafe for gamma); the binomial tail is the kappa."""
    lks = []
    for rho in np.linspace(0.0, 1.0, 21):
        pr = PixelTolerancePrior(784, 32 / 256, float(rho))
        lk = pr.log_kappa()
        assert lk >= pr.required * math.log(0.25) - 1e-9
        lks.append(lk)
    assert np.all(np.diff(lks) <= 1e-12)
    # rho * d that is an integer up to float error: 0.1 * 10 -> 1 coordinate, not 2
    assert PixelTolerancePrior(10, 0.1, 0.1).required == 1
    assert PixelTolerancePrior(10, 0.1, 0.3).required == 3


def test_log_binom_sf_against_mpmath_when_tiny(monkeypatch):
    mpmath = pytest.importorskip("mpmath")  # in the test env via torch -> sympy
    monkeypatch.setattr(mpmath.mp, "dps", 60)  # restored after the test
    for k, n, p in [(700, 784, 0.25), (3000, 3072, 0.25), (5, 10, 1e-80)]:
        ref = mpmath.log(
            mpmath.fsum(mpmath.binomial(n, j) * mpmath.mpf(p) ** j * (1 - mpmath.mpf(p)) ** (n - j) for j in range(k, n + 1))
        )
        got = log_binom_sf(k, n, math.log(p), math.log1p(-p))
        assert got == pytest.approx(float(ref), rel=1e-10)
    assert log_binom_sf(0, 5, math.log(0.3), math.log(0.7)) == 0.0
    assert log_binom_sf(6, 5, math.log(0.3), math.log(0.7)) == -math.inf


@pytest.mark.parametrize(
    "kw,name",
    [({"d": 0, "delta": 0.1}, "dim"), ({"d": 5, "delta": 0.0}, "delta"), ({"d": 5, "delta": 0.1, "rho": 1.5}, "rho"),
     ({"d": 5, "delta": 0.1, "rho": float("nan")}, "rho"), ({"d": 5, "delta": 0.1, "levels": 1}, "levels")],
)
def test_pixel_prior_rejects_bad_input(kw, name):
    with pytest.raises((ValueError, TypeError), match=name):
        PixelTolerancePrior(**kw)


# ----------------------------------------------------------------------------- samples (App. J)


def test_samples_chernoff_bound_inverts_prop5():
    """The returned value u solves u - sqrt(2 u log(1/beta) / N) = kappa_hat (Prop. 5 with
    tau = sqrt(2 log(1/beta) / (N u)), i.e. confidence 1 - exp(-N u tau^2 / 2) = 1 - beta)."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 20, size=500)
    b = kappa_from_samples(x, confidence=0.9)
    n, kh, u = 500, b.extras["kappa_hat"], b.value
    assert kh == pytest.approx(np.bincount(x).max() / n)
    tau = math.sqrt(2 * math.log(1 / 0.1) / (n * u))
    assert kh / (1 - tau) == pytest.approx(u, rel=1e-10)
    assert math.exp(-n * u * tau**2 / 2) == pytest.approx(0.1, rel=1e-10)
    assert b.direction == "upper" and u >= kh


@pytest.mark.parametrize("method", ["chernoff", "clopper_pearson"])
def test_samples_bound_covers_true_kappa(method):
    """Coverage: over 400 independent sample sets the upper bound falls below the true kappa in
    at most a beta fraction (+ 3 binomial sd) of runs."""
    rng = np.random.default_rng(5)
    w = np.array([0.06] + [0.94 / 60] * 60)  # true kappa = 0.06
    fails, reps, beta = 0, 400, 0.1
    for _ in range(reps):
        x = rng.choice(len(w), size=300, p=w)
        fails += kappa_from_samples(x, confidence=1 - beta, method=method).value < 0.06
    assert fails <= reps * beta + 3 * math.sqrt(reps * beta * (1 - beta))


def test_clopper_pearson_never_looser_than_chernoff():
    rng = np.random.default_rng(6)
    for _ in range(30):
        n = int(rng.integers(1, 2000))
        x = rng.integers(0, int(rng.integers(1, 50)), size=n)
        c = rng.uniform(0.5, 0.999)
        assert kappa_from_samples(x, confidence=c, method="clopper_pearson").value <= (
            kappa_from_samples(x, confidence=c).value + 1e-12
        )


def test_samples_l2_count_upper_bounds_exact_sup_over_centres():
    """1-D points with l2 error: the exact sup over all centres of #{points within eta} is a
    sliding window of length 2 eta (brute force over windows starting at a point); the bound's
    count (radius 2 eta around samples) is >= it and the plug-in (radius eta) is <= it."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        x = np.sort(rng.uniform(size=60))
        eta = float(rng.uniform(0.01, 0.2))
        exact = max(int(np.sum((x >= a) & (x <= a + 2 * eta))) for a in x)
        b = kappa_from_samples(x[:, None], eta, metric="l2", confidence=0.9)
        assert b.extras["count"] >= exact >= round(b.extras["kappa_hat_plugin"] * 60)


def test_samples_metrics_agree_with_direct_pairwise_counts():
    """Chunked counting (chunks of 1 forced by size for linf/l1) equals a direct computation."""
    rng = np.random.default_rng(9)
    x = rng.uniform(size=(150, 4))
    eta = 0.15
    diff = x[:, None, :] - x[None, :, :]
    dists = {"l2": np.sqrt((diff**2).sum(-1)), "linf": np.abs(diff).max(-1), "l1": np.abs(diff).sum(-1)}
    for m, dm in dists.items():
        b = kappa_from_samples(x, eta, metric=m)
        assert b.extras["count"] == int((dm <= 2 * eta).sum(1).max())
        assert b.extras["kappa_hat_plugin"] == pytest.approx((dm <= eta).sum(1).max() / 150)


def test_samples_ball_prior_bound_exceeds_true_kappa():
    rng = np.random.default_rng(8)
    d, eta, n = 2, 0.3, 1000
    g = rng.standard_normal((n, d))
    z = g / np.linalg.norm(g, axis=1, keepdims=True) * rng.uniform(size=(n, 1)) ** (1 / d)
    b = kappa_from_samples(z, eta, metric="l2", confidence=0.95)
    assert UniformBallPrior(d).kappa(eta) <= b.value <= 1
    # linf balls contain l2 balls and l1 balls are contained in them: counts are ordered
    c = {m: kappa_from_samples(z, eta, metric=m).extras["count"] for m in ("l1", "l2", "linf")}
    assert c["l1"] <= c["l2"] <= c["linf"]


@pytest.mark.parametrize(
    "args,kw,name",
    [((np.zeros(3),), {"confidence": 1.0}, "confidence"), ((np.zeros(3),), {"metric": "l3"}, "metric"),
     ((np.zeros(3),), {"method": "x"}, "method"), ((np.zeros((0, 2)),), {}, "samples"),
     ((np.zeros((3, 2)), float("nan")), {"metric": "l2"}, "eta"),
     ((np.array([1.0, np.nan]),), {}, "samples")],
)
def test_samples_rejects_bad_input(args, kw, name):
    with pytest.raises((ValueError, TypeError), match=name):
        kappa_from_samples(*args, **kw)


# --------------------------------------------------------------------------- the Prior protocol


def test_every_prior_family_satisfies_the_protocol():
    from rerokit.bounds.priors import (
        BaselinePrior,
        DiscretePrior,
        GaussianPrior,
        PixelTolerancePrior,
        Prior,
        UniformBallPrior,
        UniformDiscretePrior,
    )

    for p in (UniformDiscretePrior(10), DiscretePrior([1, 2, 7]), UniformBallPrior(3), GaussianPrior(3, 1.0),
              PixelTolerancePrior(784, 32 / 256), BaselinePrior(0.25)):
        assert isinstance(p, Prior) and isinstance(p.name, str) and p.name


def test_resolve_baseline_is_exact_for_uniform_priors():
    from rerokit.bounds.priors import UniformDiscretePrior, resolve_baseline

    for n in (2, 3, 7, 10, 100, 12345):
        b = resolve_baseline(n)
        assert b.kappa == 1.0 / n  # exactly, not exp(-log n) (0.09999999999999998 for n = 10)
        assert b.log_kappa == -math.log(n) and b.echo() == {"prior_size": n}
        assert resolve_baseline(UniformDiscretePrior(n)).kappa == 1.0 / n


def test_resolve_baseline_forms_and_errors():
    from rerokit.bounds.priors import PixelTolerancePrior, UniformBallPrior, resolve_baseline

    assert resolve_baseline(kappa=0.25).kappa == 0.25
    tiny = resolve_baseline(log_kappa=-5000.0)
    assert tiny.kappa == 0.0 and tiny.log_kappa == -5000.0
    assert resolve_baseline(PixelTolerancePrior(784, 32 / 256)).log10_kappa == pytest.approx(-472.015, abs=1e-3)
    assert resolve_baseline(UniformBallPrior(2), eta=0.5).kappa == pytest.approx(0.25)
    with pytest.raises(ValueError, match="eta"):
        resolve_baseline(UniformBallPrior(2))
    with pytest.raises(ValueError, match="exactly one"):
        resolve_baseline(10, kappa=0.1)
    with pytest.raises(TypeError, match="kappa="):
        resolve_baseline(0.1)
    with pytest.raises(ValueError, match="prior_size"):
        resolve_baseline(0)
    with pytest.raises(ValueError, match="log_kappa"):
        resolve_baseline(log_kappa=0.5)
