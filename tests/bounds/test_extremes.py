"""Adversarial extremes: every bound stays on its safe side at extreme but valid inputs.

References are independent high-precision computations with mpmath (closed forms or the
defining equations), never the code under test.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds import fano



@pytest.fixture(autouse=True)
def _mp_precision():
    """mpmath's working precision for this module's references, restored after each test (a
    module-level assignment leaked into the other modules collected in the same process)."""
    with mp.workdps(60):
        yield


# --------------------------------------------------------------------------- fano


def _mp_fano_advantage(sigma: float, n: int) -> tuple[mp.mpf, mp.mpf]:
    """(advantage bound, I) of Hayes et al. 2023 App. H Eq. 4-5 by 400-step mpmath bisection."""
    p = mp.mpf(1) / n
    i = -mp.log(p + (1 - p) * mp.e ** (-1 / (2 * mp.mpf(sigma) ** 2)))
    h, top = mp.log(n), 1 - p
    if i >= h:
        return mp.mpf(1), i
    f = lambda t: h - i + t * mp.log(t) + (1 - t) * mp.log(1 - t) - t * mp.log(n - 1)  # noqa: E731
    lo, hi = mp.mpf(0), top
    for _ in range(400):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return (1 - lo - p) / (1 - p), i


@pytest.mark.parametrize("n", [2, 10, 10**6])
@pytest.mark.parametrize("sigma", [1e-200, 0.5, 1.0, 1e3, 1e5, 1e8, 1e10])
def test_fano_gaussian_never_below_mpmath(sigma: float, n: int) -> None:
    # Before the fix: sigma=1e8 gave I = 0 and advantage 0 (true 7.07e-9 for n=2), sigma=1e5,
    # n=10 gave 3.16229e-6 < true 3.16229099e-6, and sigma=1e-200 raised ZeroDivisionError.
    b = fano.fano_advantage_gaussian(sigma, n)
    true_adv, true_i = _mp_fano_advantage(sigma, n)
    i = b.extras["mutual_information_bound"]
    assert i >= true_i and i <= true_i * (1 + 1e-13) + 1e-300
    assert b.value >= true_adv
    assert 0.0 <= b.error <= b.value <= 1.0
    assert b.value - b.error <= true_adv  # the lower end of the bracket is also honest


# --------------------------------------------------------------------------- uninformed


def _mp_log_gamma_p(n: int, log_x: mp.mpf) -> mp.mpf:
    """log Gamma_R(n/2, x) in mpmath (x given by its log, so that it may be 1e-400)."""
    a, x = mp.mpf(n) / 2, mp.e**log_x
    if x > a:
        return mp.log(1 - mp.gammainc(a, x, mp.inf, regularized=True))
    return mp.log(mp.gammainc(a, 0, x, regularized=True))


@pytest.mark.parametrize("dim", [1, 784, 10**6])
@pytest.mark.parametrize("sigma", [1e-200, 1e-3, 1.0, 1e3, 1e200])
@pytest.mark.parametrize("eta", [1e-300, 0.01, 1e300])
def test_mse_rero_extreme_sigma_never_below_mpmath(dim: int, sigma: float, eta: float) -> None:
    # Before the fix: sigma=1e-200 raised ZeroDivisionError (sigma^2 underflows) and sigma=1e200
    # returned value 0.0 (x = 0) although the true gamma is > 0 (e.g. 10^-2001 for dim=10).
    from rerokit.bounds import uninformed as u

    b = u.mse_rero(eta, sigma, dim, min_norm=1.0)
    log_x = mp.log(mp.mpf(dim) * mp.mpf(eta) / (2 * mp.mpf(sigma) ** 2))
    if log_x > 30 + 2 * mp.log(dim):  # Gamma_R(N/2, x) = 1 to 1e-13 and beyond
        assert b.value == 1.0
        return
    true_log = _mp_log_gamma_p(dim, log_x)
    assert 0.0 < b.value <= 1.0 and math.isfinite(b.error) and b.error >= 0
    assert b.extras["log_value"] >= true_log
    assert b.extras["log_value"] <= true_log + 1e-6 * max(1, abs(true_log))
    assert b.value >= min(mp.e**true_log, 5e-324)  # a positive float, never 0


@pytest.mark.parametrize("psnr", [-4000.0, 4000.0, 1e5])
def test_psnr_rero_extreme_threshold(psnr: float) -> None:
    # Before the fix: psnr=-4000 raised OverflowError (10^400), psnr=4000 returned 0.0.
    from rerokit.bounds import uninformed as u

    b = u.psnr_rero(psnr, 1.0, 1.0, 784, min_norm=1.0)
    if psnr < 0:
        assert b.value == 1.0
        return
    log_x = mp.log(392) - mp.mpf(psnr) / 10 * mp.log(10)  # N eta~ / (2 sigma^2 r^2)
    true_log = _mp_log_gamma_p(784, log_x)
    assert b.value == 5e-324 and b.extras["log_value"] >= true_log
    assert b.extras["log_value"] <= true_log * (1 - 1e-9)


@pytest.mark.parametrize("sigma", [1e-200, 1e200])
def test_mse_rero_over_steps_extreme_sigma(sigma: float) -> None:
    from rerokit.bounds import uninformed as u

    b = u.mse_rero_over_steps(0.1, sigma, 784, 1000, 0.01, min_norm=1.0)
    if sigma < 1:
        # every release reconstructs exactly; only k = 0 (prob 0.99^1000) fails
        assert b.value >= 1 - 0.99**1000 and b.value <= 1.0
    else:
        # true value ~ 10^-(huge): safe side, finite, positive. The binomial weights come from log-gamma
        # (scipy.special) with a proven relative rounding allowance (~2e-11 at T = 1000) that the bound adds
        # on the safe side; before, scipy.stats' pmf carried none and the bound read 1e-15.
        assert 0.0 < b.value <= 1e-10


# --------------------------------------------------------------------------- calibrate


@pytest.mark.parametrize(
    "target,q,T,kappa",
    [(0.0100001, 0.01, 100, 0.01), (0.02, 1.0, 1, 0.01), (1e-10, 0.01, 100, 1e-12), (0.63, 0.01, 100, 0.01)],
)
def test_calibrate_noise_multiplier_extremes(target: float, q: float, T: int, kappa: float) -> None:
    """Target next to kappa, next to the sigma -> 0 supremum 1 - (1-q)^T (1-kappa), tiny kappa:
    the returned sigma meets the target with the certified value, the bracket's lower end not."""
    from rerokit.bounds.calibrate import calibrate_noise_multiplier
    from rerokit.bounds.dpsgd import rero_dpsgd

    r = calibrate_noise_multiplier(target, q, T, kappa=kappa, delta=None)
    at = rero_dpsgd(r.noise_multiplier, q, T, kappa=kappa, comparisons=False)
    below = rero_dpsgd(r.bracket[0], q, T, kappa=kappa, comparisons=False)
    assert at.value <= target < below.value
    assert r.bracket[1] / r.bracket[0] <= 1 + 1.01e-4
    if q == 1.0:  # closed form Phi(Phi^-1(kappa) + sqrt(T)/sigma) at the calibrated sigma
        from rerokit.bounds.conversions import rero_from_gdp

        assert rero_from_gdp(math.sqrt(T) / r.noise_multiplier, kappa) <= target


@pytest.mark.parametrize("target,q,T,kappa", [(0.999, 0.01, 100, 0.01), (0.2, 1e-5, 1000, 0.1)])
def test_calibrate_noise_multiplier_target_above_supremum_fails_fast(target, q, T, kappa) -> None:
    # Before: bisected down to sigma < 1e-6 (52 s / 22 s measured) before raising.
    from rerokit.bounds.calibrate import calibrate_noise_multiplier
    from rerokit.bounds.dpsgd import rero_dpsgd

    sup = 1 - (1 - q) ** T * (1 - kappa)
    assert rero_dpsgd(1e-3, q, T, kappa=kappa, comparisons=False).interval[0] <= sup  # sup is honest
    with pytest.raises(ValueError, match="met by every noise multiplier"):
        calibrate_noise_multiplier(target, q, T, kappa=kappa, delta=None)


@pytest.mark.parametrize("target,sigma,q,kappa", [(0.999, 1.0, 0.01, 0.01), (0.5, 10.0, 1e-5, 0.01)])
def test_calibrate_steps_extremes(target: float, sigma: float, q: float, kappa: float) -> None:
    from rerokit.bounds.calibrate import calibrate_steps
    from rerokit.bounds.dpsgd import rero_dpsgd

    r = calibrate_steps(target, sigma, q, kappa=kappa, delta=None)
    assert rero_dpsgd(sigma, q, r.steps, kappa=kappa, comparisons=False).value <= target
    if r.capped:
        assert r.steps == 10_000_000
    else:
        assert rero_dpsgd(sigma, q, r.steps + 1, kappa=kappa, comparisons=False).value > target


# --------------------------------------------------------------------------- priors


@pytest.mark.parametrize("d", [1, 784, 10**5, 10**6])
@pytest.mark.parametrize("delta", [1e-6, 32 / 256, 0.49])
@pytest.mark.parametrize("rho", [1e-6, 1.0])
def test_pixel_tolerance_log_kappa_never_below_mpmath(d: int, delta: float, rho: float) -> None:
    # rho = 1e-6 needs ceil(rho d) = 1 match: kappa = 1 - (1 - p)^d; rho = 1: kappa = p^d.
    # Before the fix d = 1e6, delta = 1e-6, rho = 1e-6 gave log kappa -0.14541314504
    # (exact -0.14541314483) and delta = 0.49 gave -5e-10 (exact -1e-1.7e6 ~ 0): below the truth.
    from rerokit.bounds.priors import PixelTolerancePrior

    pr = PixelTolerancePrior(d, delta, rho)
    p = 2 * mp.mpf(delta)
    exact = mp.log(1 - (1 - p) ** d) if pr.required == 1 else d * mp.log(p)
    got = pr.log_kappa()
    assert got >= exact
    assert got <= exact + 1e-6 * max(1, abs(exact))


@pytest.mark.parametrize("d", [1, 784, 10**6])
@pytest.mark.parametrize("ratio", [1e-200, 1e-100, 1e200])
def test_gaussian_prior_extreme_eta_over_sigma(d: int, ratio: float) -> None:
    # Before the fix: ratio 1e200 raised OverflowError and 1e-200 returned log kappa = -inf
    # (x = (eta/sigma)^2 underflowed to 0) although kappa > 0.
    from rerokit.bounds.priors import GaussianPrior

    got = GaussianPrior(d, 1.0).log_kappa(ratio)
    if ratio > 1:
        assert got == 0.0
        return
    y = mp.mpf(ratio) ** 2 / 2
    exact = mp.log(mp.gammainc(mp.mpf(d) / 2, 0, y, regularized=True))
    assert exact <= got <= exact + 1e-9 * abs(exact)


# --------------------------------------------------------------------------- mse


@pytest.mark.parametrize("noise_std,delta", [(1e-4, 1e-5), (1e-3, 1e-5), (0.05, 1e-10), (1.0, 1e-300), (100.0, 1e-5)])
def test_gaussian_dp_epsilon_extremes_against_mpmath(noise_std: float, delta: float) -> None:
    # Before the fix noise_std <= 1e-2 (eps > 709) raised OverflowError from math.exp(eps).
    from rerokit.bounds.mse import gaussian_dp_epsilon

    eps = gaussian_dp_epsilon(1.0, noise_std, delta)
    mu = 1 / mp.mpf(noise_std)
    d = lambda e: mp.ncdf(mu / 2 - e / mu) - mp.e**e * mp.ncdf(-mu / 2 - e / mu)  # noqa: E731 Balle & Wang Thm 8
    assert d(mp.mpf(eps)) <= delta  # valid: (eps, delta)-DP
    assert d(mp.mpf(eps) * (1 - mp.mpf("1e-8"))) > delta  # and tight


@pytest.mark.parametrize("orders", [[1.5, 2.0, 3.0], [1.1, 1.9, 2.5, 64.0], [2.0], [3.0, 1.5]])
def test_rdp_mse_from_curve_never_uses_order_below_two(orders: list[float]) -> None:
    """eps(alpha) is non-decreasing: the bound must read eps at an order >= 2, never lower ones
    (an order-1.5 value is smaller and would put the MSE lower bound above the true one)."""
    from rerokit.bounds.mse import rdp_mse_lower_bound, rdp_mse_lower_bound_from_curve

    rdp = [a / 2.0 for a in orders]  # Gaussian mechanism, mu = 1: eps(alpha) = alpha / 2
    b = rdp_mse_lower_bound_from_curve(orders, rdp, 1.0, 1)
    assert b.extras["order_used"] >= 2.0
    assert b.value <= rdp_mse_lower_bound(1.0).value  # eps_2 = 1 is the true order-2 value
    assert b.value <= 0.25 / math.expm1(1.0)


def test_rdp_mse_from_curve_without_order_two_raises() -> None:
    from rerokit.bounds.mse import rdp_mse_lower_bound_from_curve

    with pytest.raises(ValueError, match="order >= 2"):
        rdp_mse_lower_bound_from_curve([1.1, 1.5, 1.9], [0.1, 0.2, 0.3])


# --------------------------------------------------------------------------- dpsgd (verified clean: guards)


def _mp_log_phi_inv(log_k: float) -> mp.mpf:
    """Phi^{-1}(e^log_k) in mpmath, also for log_k = -1000."""
    lk = mp.mpf(log_k)
    if lk > -1:
        return mp.sqrt(2) * mp.erfinv(2 * mp.e**lk - 1)
    f = lambda z: mp.log(mp.erfc(-z / mp.sqrt(2)) / 2) - lk  # noqa: E731
    z0 = -mp.sqrt(-2 * lk)
    return mp.findroot(f, (z0 - 5, z0 + 5), solver="anderson")


@pytest.mark.parametrize("sigma", [0.05, 1e3])
@pytest.mark.parametrize("q", [1e-5, 0.5, 1.0])
@pytest.mark.parametrize("log_k", [math.log(0.999), math.log(0.01), -1000.0])
def test_dpsgd_one_step_brackets_neyman_pearson(sigma: float, q: float, log_k: float) -> None:
    """T = 1: the likelihood ratio is increasing in x, so the Neyman-Pearson region is
    {x > sigma Phi^{-1}(1 - kappa)} and gamma = (1-q) kappa + q Phi(Phi^{-1}(kappa) + 1/sigma)."""
    from rerokit.bounds.dpsgd import rero_dpsgd

    b = rero_dpsgd(sigma, q, 1, log_kappa=log_k, comparisons=False)
    k = mp.e ** mp.mpf(log_k)
    true = (1 - q) * k + q * mp.ncdf(_mp_log_phi_inv(log_k) + 1 / mp.mpf(sigma))
    assert b.extras["log_gamma"] >= mp.log(true) - 1e-13 * abs(mp.log(true))
    assert b.interval[0] <= true * (1 + 1e-12)
    assert log_k - 1e-9 <= b.extras["log_gamma"] <= 0.0
    assert math.isfinite(b.error) and b.error >= 0 and 0 < b.value <= 1


@pytest.mark.parametrize(
    "sigma,T,log_k", [(1e3, 10**6, math.log(0.01)), (0.05, 1, math.log(0.999)), (1.0, 100, -1000.0), (2.0, 10**6, math.log(1e-12))]
)
def test_dpsgd_full_batch_extremes_match_closed_form(sigma: float, T: int, log_k: float) -> None:
    from rerokit.bounds.dpsgd import rero_dpsgd

    b = rero_dpsgd(sigma, 1.0, T, log_kappa=log_k, comparisons=False)
    true_log = mp.log(mp.ncdf(_mp_log_phi_inv(log_k) + mp.sqrt(T) / sigma))
    assert b.extras["log_gamma"] >= true_log - 1e-12 * abs(true_log)
    assert b.interval[0] <= mp.e**true_log * (1 + 1e-12)
    if log_k > -20:  # the bracket is narrow (measured <= 1.3e-5 here); for tiny kappa the
        assert b.error <= 1e-4  # FFT round-off slack (~1e-9) exceeds kappa and the lower end is kappa


def _dpa_gamma(segments, kappa: float, pessimistic: bool) -> float:
    """min over a fine eps grid of e^eps kappa + delta(eps) of dp-accounting's REMOVE PLD."""
    import numpy as np
    from dp_accounting.pld import privacy_loss_distribution as pldm

    pmf = None
    for s, q, T in segments:
        p = pldm.from_gaussian_mechanism(
            standard_deviation=s, sensitivity=1.0, sampling_prob=q, pessimistic_estimate=pessimistic,
            value_discretization_interval=1e-3, use_connect_dots=pessimistic,
        )._pmf_remove.self_compose(T)
        pmf = p if pmf is None else pmf.compose(p)
    eps = np.linspace(-5.0, 30.0, 20001)
    return float(np.min(np.exp(eps) * kappa + np.asarray(pmf.get_delta_for_epsilon(eps))))


@pytest.mark.parametrize(
    "segments,kappa",
    [([(2.0, 0.001, 10000)], 1e-3), ([(1.0, 0.999, 10)], 0.01), ([(1.0, 1.0, 10), (1.0, 0.01, 1000)], 0.01)],
)
def test_dpsgd_between_dp_accounting_optimistic_and_pessimistic(segments, kappa: float) -> None:
    """dp-accounting's pessimistic PLD gives an upper bound on gamma, its optimistic one a lower
    bound: rerokit's certified bracket must not contradict either (q near 0, near 1, mixed q)."""
    from rerokit.bounds.dpsgd import rero_dpsgd

    b = rero_dpsgd(segments=segments, kappa=kappa, comparisons=False)
    assert b.interval[0] <= _dpa_gamma(segments, kappa, True) * (1 + 1e-9)
    assert b.value >= _dpa_gamma(segments, kappa, False) * (1 - 1e-9)


@pytest.mark.parametrize("log_k", [math.log(0.01), -1000.0])
def test_dpsgd_monotone_at_extremes(log_k: float) -> None:
    """gamma non-increasing in sigma, non-decreasing in T and q (Hayes et al. Thm 2): the
    certified brackets of neighbouring settings are consistent from sigma = 0.05 to 1e3."""
    from rerokit.bounds.dpsgd import rero_dpsgd

    def run(s, q, T):
        return rero_dpsgd(s, q, T, log_kappa=log_k, comparisons=False)

    seq = [run(s, 0.01, 100) for s in (0.05, 0.3, 3.0, 1e3)]  # sigma up: gamma down
    assert all(a.value >= b.interval[0] for a, b in zip(seq, seq[1:]))
    seq = [run(1.0, q, 100) for q in (1e-5, 0.1, 0.999, 1.0)]  # q up: gamma up
    assert all(b.value >= a.interval[0] for a, b in zip(seq, seq[1:]))
    seq = [run(1.0, 0.01, T) for T in (1, 1000, 10**6)]  # T up: gamma up
    assert all(b.value >= a.interval[0] for a, b in zip(seq, seq[1:]))


# --------------------------------------------------------------------------- conversions (GDP closed form)


@pytest.mark.parametrize("log_k", [math.log(0.5), math.log(1e-12), -100.0, -1000.0, -1e4])
@pytest.mark.parametrize("mu", [1e-8, 0.1, 1.0, 5.0, 100.0])
def test_gdp_closed_form_never_below_mpmath(log_k: float, mu: float) -> None:
    # Before the fix log_ndtr(ndtri_exp(lk) + mu) was below the exact value by up to 3.7e-10
    # (lk = -1e4) / 4.6e-13 (lk = -1000), and rero_dpsgd(method="closed-form") reported e.g.
    # 2.6133219967178893e-38 < exact 2.613321996718005e-38 (sigma = 1, T = 1, lk = -100) with error 0.
    from rerokit.bounds.conversions import log_rero_from_gdp
    from rerokit.bounds.dpsgd import rero_dpsgd

    exact = mp.log(mp.ncdf(_mp_log_phi_inv(log_k) + mp.mpf(mu)))
    got = log_rero_from_gdp(mu, log_k)
    assert got >= exact
    assert got <= exact + 1e-9 * max(1, abs(exact)) + 1e-300
    if log_k >= -1000:
        b = rero_dpsgd(1.0 / mu, 1.0, 1, log_kappa=log_k, method="closed-form", comparisons=False)
        assert b.value >= mp.e**exact


# --------------------------------------------------------------------------- dpsgd RDP (fractional orders)


def _mp_rdp(sigma: float, q: float, alpha: float) -> mp.mpf:
    """D_alpha(mixture || N(0, sigma^2)) by mpmath quadrature (30 digits)."""
    with mp.workdps(30):
        s, qq, a = mp.mpf(sigma), mp.mpf(q), mp.mpf(alpha)
        f = lambda x: mp.npdf(x, 0, s) * ((1 - qq) + qq * mp.e ** ((2 * x - 1) / (2 * s * s))) ** a  # noqa: E731
        return mp.log(mp.quad(f, [-mp.inf, -10 * s, 0, a / 2, a, a + 10 * s, mp.inf])) / (a - 1)


@pytest.mark.parametrize(
    "sigma,q,alpha", [(1e3, 1e-5, 1.1), (1e3, 0.01, 1.1), (1.0, 1e-5, 1.1), (1.0, 0.01, 1.5), (1e3, 0.5, 5.5), (0.2, 0.01, 1.1)]
)
def test_rdp_fractional_order_never_below_quadrature(sigma: float, q: float, alpha: float) -> None:
    # Before the fix: sigma=1e3, q=1e-5, alpha=1.1 gave 0.0 (exact 5.5e-17) and sigma=1,
    # q=1e-5 gave 9.45022e-11 < 9.45032e-11: log A ~ 1e-16 lost in round-off.
    from rerokit.bounds.dpsgd import rdp_poisson_gaussian

    got = float(rdp_poisson_gaussian(sigma, q, [alpha])[0])
    exact = _mp_rdp(sigma, q, alpha)
    assert got >= exact
    assert got <= exact * (1 + 1e-2) + 1e-12  # the round-off slack stays small


@pytest.mark.parametrize("sigma,q", [(1e3, 1e-5), (1e3, 1e-3), (30.0, 1e-5), (1.0, 1e-5), (1.0, 0.5), (0.05, 0.999)])
def test_rdp_integer_orders_never_below_exact_sum(sigma: float, q: float) -> None:
    # Before the fix: sigma=1e3, q=1e-5, alpha=2 gave 0.0 (exact 1.0e-16); sigma=1, q=1e-5,
    # alpha=2 was 1.7e-7 (relative) below the exact binomial sum (Mironov et al. 2019 Sec. 3.3).
    from rerokit.bounds.dpsgd import rdp_poisson_gaussian

    orders = [2, 3, 11, 64, 1024]
    got = rdp_poisson_gaussian(sigma, q, orders)
    with mp.workdps(40):
        for a, g in zip(orders, got):
            s, qq = mp.mpf(sigma), mp.mpf(q)
            A = mp.fsum(mp.binomial(a, k) * (1 - qq) ** (a - k) * qq**k * mp.e ** ((k * k - k) / (2 * s * s)) for k in range(a + 1))
            exact = mp.log(A) / (a - 1)
            assert g >= exact
            assert g <= exact * (1 + 1e-6) + 1e-14


@pytest.mark.parametrize("dim", [1, 784, 10**6])
@pytest.mark.parametrize("target", [1e-10, 0.5, 1 - 1e-12, 1 - 1e-16])
def test_calibrate_noise_mse_extreme_targets(dim: int, target: float) -> None:
    # Before the fix targets within the 1e-10 safety margin of 1 raised "calibration did not
    # converge" (a fixed 1e-9 relative nudge, 200 times, cannot reach the needed sigma).
    from rerokit.bounds import uninformed as u

    b = u.calibrate_noise_mse(1.0, target, dim, min_norm=1.0)
    assert u.mse_rero(1.0, b.value, dim, min_norm=1.0).value <= target
    assert u.mse_rero(1.0, b.value / (1 + 1e-9), dim, min_norm=1.0).value > target  # (nearly) smallest


@pytest.mark.parametrize("kappa", [0.9, 1e-3, 1e-100, 1e-300])
@pytest.mark.parametrize("eps", [1e-8, 1.0, 7.3, 600.0])
def test_dp_rdp_zcdp_conversions_never_below_mpmath(kappa: float, eps: float) -> None:
    # Before the fix rero_from_rdp(32, 7.3, 1e-300) was 7.4e-14, rero_from_dp(7.3, 1e-300)
    # 2.2e-14 and rero_from_zcdp(0.1, 1e-100) 3.1e-14 (relative) below the exact values.
    from rerokit.bounds import conversions as cv

    K, E = mp.mpf(kappa), mp.mpf(eps)
    assert cv.rero_from_dp(eps, kappa) >= min(1, K * mp.e**E)
    for a in (1.5, 2.0, 32.0):
        exact = min(1, (K * mp.e**E) ** ((a - 1) / mp.mpf(a)))
        assert cv.rero_from_rdp(a, eps, kappa) >= exact
        assert cv.rero_from_rdp_curve([a], [eps], kappa)[0] >= exact
        assert cv.rero_from_rdp(a, eps, kappa) <= exact * (1 + 1e-11)
    if eps < -math.log(kappa):
        exact = mp.e ** (-((mp.sqrt(-mp.log(K)) - mp.sqrt(E)) ** 2))
        assert exact <= cv.rero_from_zcdp(eps, kappa) <= exact * (1 + 1e-11)


@pytest.mark.parametrize("eps", [5e-324, 1e-320, 1e-300, 1e-8, 1.0, 50.0, 800.0])
def test_rdp_mse_lower_bound_never_above_exact(eps: float) -> None:
    """Guo et al. 2022 Thm 1 on Z = [0, 1]: 0.25 / (e^eps - 1) exactly (mpmath). A lower bound:
    the float value must not exceed it. Before the fix subnormal eps gave +inf (exact ~1e322)."""
    from rerokit.bounds.mse import rdp_mse_lower_bound

    b = rdp_mse_lower_bound(eps)
    exact = mp.mpf("0.25") / mp.expm1(mp.mpf(eps))
    assert math.isfinite(b.value) and 0.0 <= b.value <= exact
    if exact < 1e300:
        assert b.value >= exact * (1 - 1e-13) or exact < 1e-300


@pytest.mark.parametrize("sigma", [1e-300, 1e-160, 1e-5, 1e100, 1e200, 1e300])
@pytest.mark.parametrize("q", [1e-300, 0.01, 1.0])
def test_rdp_poisson_gaussian_at_extreme_sigma_is_an_upper_bound_never_nan(sigma, q):
    from rerokit.bounds.dpsgd import rdp_poisson_gaussian

    with np.errstate(all="raise"):  # no overflow / division warning on the way either
        eps = rdp_poisson_gaussian(sigma, q, [1.5, 2.0, 64.0])
    assert not np.isnan(eps).any() and (eps > 0).all()
    # never below the q = 1 Gaussian value alpha / (2 sigma^2) where q = 1, and never above it for q < 1
    # beyond the grid (quasi-convexity), rounded up to the smallest positive double where it underflows
    gauss = np.array([1.5, 2.0, 64.0]) / (2.0 * sigma) / sigma
    if q == 1.0 or sigma >= 1e100:
        assert (eps >= gauss).all()


def test_epsilon_below_the_sigma_range_uses_the_revealed_pair_too():
    """Every sigma below 1e-4: the q = 1 Gaussian bound alone gave 6.2e8 at sigma 9e-5, q 1e-6, T 10,
    where the target is used at all with probability 1 - (1 - q)^T = 1e-5 - 5e-11 <= delta: the
    revealed-indicator pair (which dominates) has delta(0) = that probability, so epsilon = 0. Where
    that probability exceeds delta the revealed pair's epsilon is infinite and the Gaussian bound
    stays (the smaller of the two is returned)."""
    from rerokit.bounds.dpsgd import epsilon_dpsgd
    from rerokit.bounds.gaussian import gaussian_epsilon

    assert epsilon_dpsgd(9e-5, 1e-6, 10, 1e-5) == 0.0
    assert epsilon_dpsgd(9e-5, 1e-6, 10, 1e-5, group_size=1) == epsilon_dpsgd(1e-4, 1e-6, 10, 1e-5)
    mu = math.sqrt(100) / 9e-5
    assert epsilon_dpsgd(9e-5, 0.01, 100, 1e-5) == gaussian_epsilon(1e-5, mu)
