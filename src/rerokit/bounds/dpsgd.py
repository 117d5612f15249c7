"""The DP-SGD reconstruction-robustness bound of Hayes, Mahloujifar & Balle (NeurIPS 2023).

Theorem 2 / Corollary 3 of Hayes et al. (proof: paper 000, App. M.1-M.2): DP-SGD with noise
multiplier sigma, Poisson sampling rate q and T steps is (eta, gamma)-ReRo for every prior with
baseline kappa, where

    gamma = sup { mu(E) : nu(E) <= kappa },
    nu = N(0, sigma^2)^T,   mu = prod_{t=1}^T [(1-q) N(0, sigma^2) + q N(1, sigma^2)],

i.e. gamma is the power at level kappa of the most powerful test of nu against mu
(Neyman-Pearson). A heterogeneous schedule (segments of (sigma_i, q_i, T_i)) takes the product
of the corresponding one-dimensional pairs.

Three methods compute it:

``exact`` (default)
    Via the privacy-loss distribution (PLD) of L = log(mu/nu) under mu (dp-accounting's REMOVE
    adjacency: mu_upper = mixture, mu_lower = N(0, sigma^2)). For every eps,
    mu(E) <= e^eps nu(E) + delta(eps) with delta(eps) = E_mu[(1 - e^{eps-L})_+], so
    gamma <= inf_eps (e^eps kappa + delta(eps)), with equality for the exact delta (the pair is
    testable: continuous likelihood ratio, App. M.1). We discretise the one-step loss on the grid
    l_j = j h into buckets (l_j, l_{j+1}] and build two discrete experiments from the same buckets:

    * upper: each bucket's (mu, nu) mass is split onto the two end atoms l_j, l_{j+1} so that both
      masses are preserved ("connect the dots", Doroshenko et al. 2022). Its hockey-stick curve
      is the chord of the true (convex in e^eps) curve on every bucket, hence >= the true one for
      every eps: the discrete pair dominates the true pair (Blackwell), and so does its T-fold
      product. The top tail (mu mass <= tau) goes to an atom at +infinity, the bottom tail to
      the lowest atom - both pessimistic. gamma of the composed discrete pair is computed
      exactly: f(s) = s kappa + p_inf + sum_i p_i (1 - s e^{-l_i})_+ is convex and piecewise
      linear in s = e^eps, so its infimum sits at the atom where the nu-mass e^{-l_i} p_i
      accumulated from the top first reaches kappa (the randomised Neyman-Pearson test).
    * lower: the statistic S = sum_t (bucket index of step t) is a function of the output, so
      any threshold test on S is a test of the true pair; its exact (mu, nu) power and level
      come from convolving the bucket masses. The best randomised threshold test with level
      <= kappa gives a certified lower bound on gamma.

    ``error`` = upper - lower: a certified bracket of the true gamma (up to floating-point
    round-off, which we estimate from the FFT output and add/subtract). T-fold composition uses
    one FFT power per segment on a window chosen by Chernoff bounds; the mass outside the window
    (< 1e-15) is added to the upper and subtracted from the lower value. The value reported is
    the upper one, never below the truth.

``closed-form``
    For q = 1 (full batch) the pair is two Gaussians at distance mu_GDP = sqrt(sum_i T_i /
    sigma_i^2), and gamma = Phi(Phi^{-1}(kappa) + mu_GDP) exactly (Kaissis et al. 2023; Hayes et
    al. main text). ``error`` = 0. Raises for q < 1.

``mc``
    Hayes et al. Algorithm 1: N samples of nu, likelihood ratios r = mu/nu, threshold at the
    (1 - kappa)-quantile of r, estimate mean(r 1[r > tau]) (App. M.4 / Prop. 4: consistent). A
    point *estimate* with a 95% confidence interval, not a guarantee. Caveat (measured): r is
    heavy-tailed when mu and nu are far apart, and the estimate then falls far below the truth,
    e.g. q=0.1, sigma=1, T=1000, kappa=0.01: true 0.917, Algorithm 1 with 10^6 samples 0.709; with 10^5 samples (seed 0) we measured 0.586 with
    "95%" interval [0.363, 0.809] - the interval assumes a finite, well-estimated variance of
    r 1[r > tau] and misses the truth there. Where r is light-tailed (small T/sigma^2) its
    empirical coverage is >= 95% (200 seeds, three settings).

Every result also carries, in ``extras``, the RDP-based bound (Balle et al. 2022 Thm 2 applied
to the exact integer-order RDP curve of the Poisson-subsampled Gaussian, Mironov et al. 2019)
and the DP-SGD (epsilon, delta=1e-5) of the same schedule from our own pessimistic PLD (both
ADD and REMOVE directions, as dp-accounting's PLDAccountant). Both are cross-checked against
dp-accounting in the tests. This module imports only numpy at load time (normal tails via
``math.erfc``; scipy.special only for very large grids, conversions only for the closed form)
so that the CLI starts fast: ``import dp_accounting`` costs about a second, ``scipy.special``
a few tenths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from rerokit._validate import check_choice, check_int, check_positive, check_probability
from rerokit.bounds.priors import resolve_baseline
from rerokit.bounds.schedule import Schedule, Segment
from rerokit.bounds.types import Bound

__all__ = [
    "rero_dpsgd",
    "normalize_segments",
    "rdp_poisson_gaussian",
    "rdp_curve_subsampled_gaussian",
    "dpsgd_pld",
    "epsilon_from_pld",
    "exact_power_many",
    "np_upper_many",
    "np_lower_many",
    "log_rdp_gamma_many",
    "epsilon_dpsgd",
    "PLDTooWide",
    "MAX_EXACT_STEPS",
    "RDP_ORDERS",
    "METHODS",
]

METHODS = ("exact", "closed-form", "mc")

# RDP orders: dp-accounting's DEFAULT_RDP_ORDERS (1.1..10.9, 11..63, 128..1024) plus a few
# more integers; Thm 2 holds at every order, we take the best.
RDP_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 65))
    + [72, 80, 96, 112, 128, 160, 192, 256, 320, 384, 512, 768, 1024]
)

_LOG_TAU = math.log(1e-17)  # tail mass bound used for truncations (per composition)
_MAX_STEP_WIDTH = 200_000  # grid points of one step's PLD
_MAX_FFT = 1 << 24  # composed window size
_Z_MC = 2.241402727604947  # two-sided 97.5% normal quantile (Bonferroni over two error sources)


# --------------------------------------------------------------------------- inputs


def normalize_segments(
    noise_multiplier: float | None,
    sample_rate: float | None,
    steps: int | None,
    segments: Any = None,
) -> tuple[Segment, ...]:
    """Validated DP-SGD schedule as a tuple of (sigma, q, T) segments (:class:`~rerokit.bounds.schedule.Segment`).

    Give either (noise_multiplier, sample_rate, steps) or ``segments``.

    Args:
      noise_multiplier: sigma, a finite number > 0 (with ``sample_rate`` and ``steps``).
      sample_rate: Poisson sampling rate q in (0, 1].
      steps: number of steps T, an integer >= 1.
      segments: a :class:`~rerokit.bounds.schedule.Schedule`, a sequence of (sigma, q, T) triples or
        a dp-accounting ``DpEvent`` of Poisson-sampled Gaussians; None (default) to use the three
        settings above.

    Returns:
      The non-empty tuple of validated segments, in order.

    Raises:
      TypeError: if ``noise_multiplier`` is a schedule-like object (a list, a ``Schedule``, an
        accountant or a ``DpEvent``: pass it as ``segments``) or a value has the wrong type.
      ValueError: if both or neither of the two forms are given (or only some of the three
        settings), a value is out of range, or the event holds anything but Gaussian /
        Poisson-sampled Gaussian steps.
    """
    if segments is None:
        if isinstance(noise_multiplier, (list, tuple, Schedule)) or hasattr(noise_multiplier, "history") or (
            type(noise_multiplier).__module__.startswith("dp_accounting")
        ):
            raise TypeError(
                f"noise_multiplier must be a number, got {type(noise_multiplier).__name__} (a training run?): pass "
                "a history or DpEvent as segments=..., or use rerokit.reconstruction_risk(accountant_or_history, prior=...)"
            )
        if noise_multiplier is None or sample_rate is None or steps is None:
            raise ValueError("give noise_multiplier, sample_rate and steps (or segments)")
        return Schedule.from_settings(noise_multiplier, sample_rate, steps).segments
    if noise_multiplier is not None or sample_rate is not None or steps is not None:
        raise ValueError("give either noise_multiplier/sample_rate/steps or segments, not both")
    if isinstance(segments, Schedule):
        return segments.segments
    if isinstance(segments, (list, tuple)):
        return Schedule.from_segments(segments).segments
    return Schedule.from_event(segments).segments


# --------------------------------------------------------------------------- special functions
# numpy has no erfc; math.erfc (libm, accurate in the tails) element-wise is fast enough for the
# usual grids and avoids importing scipy (a few tenths of a second) on the CLI path.

_ERFC = np.frompyfunc(math.erfc, 1, 1)
_LGAMMA = np.frompyfunc(math.lgamma, 1, 1)
_SCIPY_ABOVE = 50_000


def _ndtr(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2, accurate in both tails."""
    x = np.asarray(x, dtype=float)
    if x.size > _SCIPY_ABOVE:
        from scipy.special import ndtr

        return ndtr(x)
    return 0.5 * _ERFC(-x * math.sqrt(0.5)).astype(float)


def _normal_isf_log(log_tau: float) -> float:
    """z >= 0 with Phi(-z) <= tau = exp(log_tau) (bisection to 1e-12; returns the safe end)."""
    if log_tau >= math.log(0.5):
        return 0.0
    lo, hi = 0.0, 38.0  # Phi(-38) ~ 3e-316
    if log_tau <= math.log(0.5 * math.erfc(hi * math.sqrt(0.5))):
        return hi
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if math.log(0.5 * math.erfc(mid * math.sqrt(0.5))) <= log_tau:
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------- one-step PLD


def _log_remove_loss(x: np.ndarray, sigma: float, q: float) -> np.ndarray:
    """L_R(x) = log((1-q) + q exp((2x-1)/(2 sigma^2))) = log(mixture(x) / N(0, sigma^2)(x))."""
    a = (2.0 * np.asarray(x, dtype=float) - 1.0) / (2.0 * sigma * sigma)
    if q == 1.0:
        return a
    return np.logaddexp(math.log1p(-q), math.log(q) + a)


def _x_of_remove_loss(l: np.ndarray, sigma: float, q: float) -> np.ndarray:
    """Inverse of L_R: x with L_R(x) = l; -inf where l <= log(1-q) (no such x)."""
    l = np.asarray(l, dtype=float)
    if q == 1.0:
        return sigma * sigma * l + 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        # log(e^l - (1-q)), computed without cancellation on both sides of l = 0
        big = l + np.log1p(-(1.0 - q) * np.exp(-np.maximum(l, 0.0)))
        small = np.log(np.expm1(np.minimum(l, 0.0)) + q)
        lg = np.where(l > 0, big, small)
        x = sigma * sigma * (lg - math.log(q)) + 0.5
    return np.where(np.isnan(x), -np.inf, x)


def _mix_sf(x: np.ndarray, sigma: float, q: float) -> np.ndarray:
    return (1.0 - q) * _ndtr(-x / sigma) + q * _ndtr((1.0 - x) / sigma)


def _mix_cdf(x: np.ndarray, sigma: float, q: float) -> np.ndarray:
    return (1.0 - q) * _ndtr(x / sigma) + q * _ndtr((x - 1.0) / sigma)


def _tails(l: np.ndarray, sigma: float, q: float, direction: str):
    """(P(L > l), P(L <= l), Q(L > l), Q(L <= l)) for the pair (P, Q) of ``direction``.

    remove: P = (1-q)N(0,s^2) + qN(1,s^2), Q = N(0,s^2), L = log P/Q increasing in x.
    add:    P = N(0,s^2), Q = mixture, L = -L_R(x) decreasing in x.
    """
    if direction == "remove":
        x = _x_of_remove_loss(l, sigma, q)
        return _mix_sf(x, sigma, q), _mix_cdf(x, sigma, q), _ndtr(-x / sigma), _ndtr(x / sigma)
    x = _x_of_remove_loss(-l, sigma, q)  # L_A > l  <=>  x < x_R(-l)
    return _ndtr(x / sigma), _ndtr(-x / sigma), _mix_cdf(x, sigma, q), _mix_sf(x, sigma, q)


def _grid_range(sigma: float, q: float, h: float, direction: str, log_tau: float) -> tuple[int, int]:
    """Labels [j_lo, j_hi] such that P(L > j_hi h) <= tau and P(L <= j_lo h) <= tau."""
    l_lo, l_hi = _loss_range(sigma, q, direction, log_tau)
    return math.floor(l_lo / h), math.ceil(l_hi / h)


def _loss_range(sigma: float, q: float, direction: str, log_tau: float) -> tuple[float, float]:
    """Losses (l_lo, l_hi) with P(L > l_hi) <= tau and P(L <= l_lo) <= tau."""
    z = _normal_isf_log(log_tau)  # Phi(-z) <= tau
    if direction == "remove":
        l_hi = float(_log_remove_loss(1.0 + sigma * z, sigma, q))  # P(X > 1 + s z) <= tau
        l_lo = float(_log_remove_loss(-sigma * z, sigma, q))  # P(X <= -s z) <= tau
    else:
        l_hi = -float(_log_remove_loss(-sigma * z, sigma, q))
        l_lo = -float(_log_remove_loss(sigma * z, sigma, q))
    return l_lo, l_hi


def _bucket_masses(p_gt: np.ndarray, p_le: np.ndarray) -> np.ndarray:
    """Masses of (l_j, l_{j+1}] from tail/cdf arrays, using the smaller side for precision."""
    from_gt = p_gt[:-1] - p_gt[1:]
    from_le = p_le[1:] - p_le[:-1]
    return np.maximum(np.where(p_gt[:-1] < 0.5, from_gt, from_le), 0.0)


class _TooWide(Exception):
    """The grid for this h would be too large; dpsgd_pld retries with a coarser h."""


class PLDTooWide(ValueError):
    """No grid step makes this schedule's privacy-loss distribution fit the size limits (an
    astronomically long schedule); callers answer with the closed-form envelope instead."""


@dataclass(frozen=True)
class _StepPLD:
    """One step's discretisation on the grid l_j = j h.

    ``split`` (labels j_lo..j_hi) + ``inf_mass``: the dominating (pessimistic) discrete PLD,
    mu-masses at the atoms. ``stat_p``/``stat_q`` (labels j_lo-1..j_hi): mu- and nu-masses of
    the buckets, the dominated (post-processed) experiment used for the lower bound.
    """

    h: float
    j_lo: int
    split: np.ndarray
    inf_mass: float
    stat_p: np.ndarray
    stat_q: np.ndarray


def _step_pld(sigma: float, q: float, h: float, direction: str, log_tau: float) -> _StepPLD:
    j_lo, j_hi = _grid_range(sigma, q, h, direction, log_tau)
    if j_hi - j_lo > _MAX_STEP_WIDTH:
        raise _TooWide(f"{j_hi - j_lo} grid points for one step (max {_MAX_STEP_WIDTH})")
    j_hi = max(j_hi, j_lo + 1)
    l = np.arange(j_lo, j_hi + 1) * h
    p_gt, p_le, q_gt, q_le = _tails(l, sigma, q, direction)
    pb = _bucket_masses(p_gt, p_le)  # bucket (l_j, l_{j+1}], j = j_lo..j_hi-1
    qb = _bucket_masses(q_gt, q_le)
    p_bot, q_bot = float(p_le[0]), float(q_le[0])
    p_top, q_top = float(p_gt[-1]), float(q_gt[-1])
    # split bucket j onto atoms j (mass a) and j+1 (mass c), preserving both mu and nu masses:
    # a + c = pb, a e^{-l_j} + c e^{-l_{j+1}} = qb  =>  c = (pb - e^{l_j} qb) / (1 - e^{-h})
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        eq = np.where(qb > 0, np.exp(l[:-1] + np.log(qb)), 0.0)
    c = np.clip((pb - eq) / (-math.expm1(-h)), 0.0, pb)
    a = pb - c
    split = np.zeros(j_hi - j_lo + 1)
    split[:-1] += a
    split[1:] += c
    split[0] += p_bot  # bottom tail: rounded up to the lowest atom (pessimistic)
    stat_p = np.concatenate(([p_bot], pb, [p_top]))
    stat_q = np.concatenate(([q_bot], qb, [q_top]))
    return _StepPLD(h, j_lo, split, p_top, stat_p, stat_q)


# --------------------------------------------------------------------------- composition


@dataclass(frozen=True)
class _Composed:
    """pmf on labels offset..offset+len-1 (loss = label * h), plus what the window left out."""

    h: float
    offset: int
    pmf: np.ndarray
    inf_mass: float  # mass at +infinity (pessimistic pmfs only)
    tail: float  # bound on the mass outside the window (above + below)
    noise: float  # estimated absolute round-off per entry

    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(self.pmf.size)) * self.h


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """Row-wise log-sum-exp, rounded *up*: terms below e^-700 of the row maximum count as
    e^-700 (conservative for the MGF/tail bounds that use it; avoids slow subnormal exp)."""
    m = np.max(a, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", under="ignore", invalid="ignore"):
        z = np.maximum(a - m, -700.0)
        return (np.log(np.sum(np.exp(z), axis=-1, keepdims=True)) + m)[..., 0]


def _window(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_tau: float) -> tuple[int, int]:
    """Chernoff window [A, B] of the composed labels with P(S > B), P(S < A) <= tau each.

    For a (sub-)probability pmf p and lam > 0: P(S >= B) <= e^{-lam B} prod_i M_i(lam)^{T_i},
    M_i(lam) = sum_j p_ij e^{lam j}. lam is tried on a geometric grid around the Gaussian
    optimum sqrt(2 log(1/tau) / Var(S)) and on 2^-6..2^8 per unit of loss.
    """
    var = 0.0
    logps = []
    lo_sup = hi_sup = 0
    for off, pmf, count in parts:
        labels = off + np.arange(pmf.size, dtype=float)
        tot = float(pmf.sum())
        if tot > 0:  # (elementwise sums: BLAS matmul threads are slow on a busy machine)
            m1 = float(np.sum(pmf * labels)) / tot
            var += count * float(np.sum(pmf * (labels - m1) ** 2)) / tot
        with np.errstate(divide="ignore"):
            logps.append((labels, np.log(pmf), count))
        nz = np.nonzero(pmf)[0]
        lo_sup += count * (off + int(nz[0]))
        hi_sup += count * (off + int(nz[-1]))
    lam0 = math.sqrt(2.0 * abs(log_tau) / var) if var > 0 else 1.0
    # Gaussian-optimal lam and, for heavy tails (rare large losses), a grid in loss units
    lam = np.concatenate((lam0 * 2.0 ** np.arange(-4, 7), h * 2.0 ** np.arange(-6, 9)))
    up = np.zeros(lam.size)
    dn = np.zeros(lam.size)
    for labels, logp, count in logps:
        up += count * _logsumexp_rows(logp[None, :] + lam[:, None] * labels[None, :])
        dn += count * _logsumexp_rows(logp[None, :] - lam[:, None] * labels[None, :])
    B = int(np.min(np.ceil((up - log_tau) / lam)))
    A = int(np.max(np.floor((log_tau - dn) / lam)))
    return max(A, lo_sup), min(B, hi_sup)


def _fft_size(n: int) -> int:
    m = 1 << max(4, (n - 1).bit_length())
    # 3 * 2^k is also fast in pocketfft
    if 3 * (m >> 2) >= n:
        return 3 * (m >> 2)
    return m


def _compose(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_tau: float, window=None) -> _Composed:
    """T_i-fold convolution of each pmf, all convolved, restricted to a Chernoff window.

    Circular FFT convolution: mass outside the window (<= 2 tau in total) wraps around and
    lands inside it, so computed entries are >= the true ones up to round-off.
    """
    A, B = window if window is not None else _window(parts, h, log_tau)
    n = B - A + 1
    if n > _MAX_FFT or n < 1:  # n < 1: the window's ends lost precision (astronomical T)
        raise _TooWide(f"the composed privacy-loss window needs {n} points (max {_MAX_FFT})")
    nfft = _fft_size(n)
    spec = np.ones(nfft // 2 + 1, dtype=complex)
    off_tot = 0
    for off, pmf, count in parts:
        folded = np.zeros(nfft)
        if pmf.size <= nfft:
            folded[: pmf.size] = pmf
        else:
            pad = np.zeros(-(-pmf.size // nfft) * nfft)
            pad[: pmf.size] = pmf
            folded = pad.reshape(-1, nfft).sum(axis=0)
        spec *= np.fft.rfft(folded) ** count
        off_tot += count * off
    circ = np.fft.irfft(spec, nfft)
    scale = float(np.max(np.abs(circ))) if circ.size else 0.0
    noise = max(float(-circ.min()), 0.0) * 4.0 + 8.0 * np.finfo(float).eps * scale * math.log2(nfft)
    window_vals = np.roll(circ, -((A - off_tot) % nfft))[:n]
    return _Composed(h, A, np.maximum(window_vals, 0.0), 0.0, 2.0 * math.exp(log_tau), noise)


def _compose_inf(steps: Sequence[tuple[_StepPLD, int]]) -> float:
    """Composed +infinity mass 1 - prod (1 - p_inf_i)^{T_i}."""
    s = sum(T * math.log1p(-min(st.inf_mass, 1.0 - 1e-300)) for st, T in steps)
    return -math.expm1(s)


# --------------------------------------------------------------------------- gamma from PLDs


def _allowance(c: _Composed) -> float:
    """Mass a dominating composed PLD may miss: +infinity atom, window tails, round-off."""
    return c.inf_mass + c.tail + c.noise * c.pmf.size


def _top_sums(c: _Composed) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(losses, log p, log nu-mass of the top i+1 atoms, log mu-mass of the top i+1 atoms).

    The mu-masses are summed in extended precision (np.longdouble) from the top.
    """
    l = c.losses
    with np.errstate(divide="ignore"):
        logp = np.log(c.pmf)
        rp = np.log(np.cumsum(c.pmf[::-1].astype(np.longdouble)).astype(float))
    rq = np.logaddexp.accumulate((logp - l)[::-1])  # nu-mass of the top i+1 atoms
    return l, logp, rq, rp


def np_upper_many(c: _Composed, log_kappas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds on log gamma at many levels kappa: the Neyman-Pearson power of the dominating discrete pair.

    For each log kappa: log of inf_s (s kappa + p_inf + sum_i p_i (1 - s e^{-l_i})_+) - the
    Neyman-Pearson power at level kappa of the dominating discrete pair - plus the window tail
    bound and the round-off estimate (each p_i may be low by ``noise``), and the optimal
    eps = log s (threshold loss).

    One O(n) pass over the pmf and O(m log n) for m queries. The value at every level kappa
    (not only at the pmf's breakpoints) is an upper bound on the true power: it is
    f(s) = s kappa + p_inf + sum_i p_i (1 - s e^{-l_i})_+ at s = e^{l_k}, and f(s) bounds the
    power of every test at level kappa for every s > 0 (Neyman-Pearson / hockey-stick duality).

    Args:
      c: the composed dominating (pessimistic) REMOVE-direction PLD, ``DpsgdPLD.upper``.
      log_kappas: natural logs of the levels kappa (<= 0), a 1-D array (not validated here).

    Returns:
      ``(log_gamma, eps_star)``: arrays of the same shape as ``log_kappas``; log_gamma (<= 0) is an
      upper bound on the log power (0 where the total nu-mass is below kappa), eps_star the
      threshold loss (-inf there).
    """
    lk = np.asarray(log_kappas, dtype=float)
    l, _, rq, rp = _top_sums(c)
    n = c.pmf.size
    allowance = _allowance(c)
    idx = np.searchsorted(rq, lk, side="left")
    full = idx >= n  # total nu-mass < kappa: optimum at s -> 0, gamma = total mass
    idc = np.minimum(idx, n - 1)
    k = n - 1 - idc
    prev = np.maximum(idc - 1, 0)
    log_q_above = np.where(idc > 0, rq[prev], -np.inf)
    log_p_above = np.where(idc > 0, rp[prev], -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = lk + np.log1p(-np.exp(np.minimum(0.0, log_q_above - lk)))
        lg = np.logaddexp(log_p_above, l[k] + frac)
        if allowance > 0:
            lg = np.logaddexp(lg, math.log(allowance))
    lg = np.where(full, 0.0, np.minimum(0.0, lg))
    return lg, np.where(full, -np.inf, l[k])


def _suffix_sums(pmf: np.ndarray) -> np.ndarray:
    """s[i] = sum(pmf[i:]) for i = 0..n (s[n] = 0), summed in extended precision."""
    return np.concatenate((np.cumsum(pmf[::-1].astype(np.longdouble))[::-1].astype(float), [0.0]))


def np_lower_many(cp: _Composed, cq: _Composed, log_kappas: np.ndarray) -> np.ndarray:
    """Certified lower bounds on gamma (the power) at many levels kappa from threshold tests on the bucket statistic S.

    The test rejects nu on S >= s and on S = s-1 with probability f. Its level is bounded above by
    the in-window nu-mass plus the window's tail bound and round-off (and by the tail bound alone
    above the window); its power below by the in-window mu-mass minus the same allowances.

    Args:
      cp: the mu-distribution of S on its own Chernoff window (``DpsgdPLD.stat_p``).
      cq: the nu-distribution of S on its own Chernoff window (``DpsgdPLD.stat_q``).
      log_kappas: natural logs of the levels kappa (<= 0), a 1-D array (not validated here).

    Returns:
      Array of lower bounds on gamma, same shape as ``log_kappas``, each in [kappa, 1] (kappa, the
      trivial lower end, where no threshold test fits the level).
    """
    kappa = np.exp(np.asarray(log_kappas, dtype=float))
    Q, qoff = cq.pmf, cq.offset
    slack_q = cq.tail + cq.noise * Q.size
    q_ge = _suffix_sums(Q) + slack_q  # nu(S >= qoff + i), non-increasing
    i = np.searchsorted(-q_ge, -kappa, side="left")  # first i with q_ge[i] <= kappa
    none = i >= q_ge.size
    i = np.minimum(i, q_ge.size - 1)
    s_star = qoff + i  # smallest label with level <= kappa (labels above B_q: level <= tail)
    rem = kappa - q_ge[i]
    P, poff = cp.pmf, cp.offset
    slack_p = cp.tail + cp.noise * P.size
    j = np.clip(s_star - poff, 0, P.size)
    power = _suffix_sums(P)[j] - slack_p
    b = s_star - 1 - poff  # the bucket S = s-1, rejected with probability f
    qb = Q[np.maximum(i - 1, 0)]
    rand = (i > 0) & (qb > 0) & (b >= 0) & (b < P.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.minimum(1.0, rem / (qb + cq.noise))
    pb = np.maximum(0.0, P[np.clip(b, 0, P.size - 1)] - cp.noise)
    power = power + np.where(rand, f * pb, 0.0)
    out = np.minimum(1.0, np.maximum(kappa, power))
    return np.where(none | (kappa <= 0.0), kappa, out)


def _default_h(segs: Sequence[Segment]) -> float:
    """Grid step ~ 1/40 of the rms standard deviation of one step's privacy loss.

    Var(L) ~ chi^2(mu||nu) = q^2 (e^{1/sigma^2} - 1) for small q, 1/sigma^2 for q = 1. The
    discretisation changes the composed loss variance by O(T h^2), small against T Var(L).
    """
    tot = 0.0
    n = 0
    for sigma, q, T in segs:
        inv = 1.0 / (sigma * sigma)
        v = inv if inv > 700 else min(q * q * math.expm1(inv), inv)
        tot += T * v
        n += T
    rms = math.sqrt(tot / n)
    return float(min(1e-2, max(1e-7, rms / 40.0)))


@dataclass(frozen=True)
class DpsgdPLD:
    """Composed discrete PLDs of a DP-SGD schedule (see module docstring).

    ``upper``: dominating (pessimistic) REMOVE-direction PLD; ``stat_p``/``stat_q``: mu- and
    nu-distributions of the bucket statistic (lower bound), or None; ``add``: pessimistic
    ADD-direction PLD (only for epsilon), or None; ``h``: the grid step used.
    """

    h: float
    upper: _Composed
    stat_p: _Composed | None
    stat_q: _Composed | None
    add: _Composed | None


def dpsgd_pld(
    segments: Sequence[Segment],
    value_discretization_interval: float | None = None,
    *,
    lower: bool = True,
    add_direction: bool = False,
    log_tau: float = _LOG_TAU,
) -> DpsgdPLD:
    """Build and compose the discrete PLDs of ``segments`` (validated (sigma, q, T) triples).

    The grid step h defaults to :func:`_default_h`, and is raised where needed to keep one step's
    grid within its size limit; when the composed grid would still exceed the size limits
    (very small sigma, very many steps) h is coarsened by 4x until it fits - the result is then
    still certified, only its bracket (``error``) is wider.

    Args:
      segments: validated (sigma, q, T) segments (:func:`normalize_segments`).
      value_discretization_interval: grid step h of the privacy loss, > 0; None (default) for the
        automatic choice (rms loss sd / 40, within [1e-7, 1e-2]).
      lower: also compose the bucket statistic's mu- and nu-distributions (``stat_p``/``stat_q``,
        for the certified lower end; default True).
      add_direction: also compose the ADD-direction PLD (``add``, needed for epsilon; default False).
      log_tau: natural log of the tail mass tau allowed outside the truncations (default log 1e-17).

    Returns:
      The :class:`DpsgdPLD`.

    Raises:
      ValueError: if ``value_discretization_interval`` is not a finite number > 0 (TypeError if not
        a number).
      PLDTooWide: (a ValueError) if no grid step fits the size limits.
    """
    h = _default_h(segments) if value_discretization_interval is None else check_positive(
        "value_discretization_interval", value_discretization_interval
    )
    n_steps = sum(T for _, _, T in segments)
    step_tau = log_tau - math.log(n_steps)
    for s_, q_, _ in segments:  # keep one step's grid below _MAX_STEP_WIDTH points
        for d in ("remove", "add") if add_direction else ("remove",):
            l_lo, l_hi = _loss_range(s_, q_, d, step_tau)
            h = max(h, (l_hi - l_lo) / (_MAX_STEP_WIDTH - 4))
    for _ in range(12):
        try:
            return _dpsgd_pld(segments, h, lower, add_direction, log_tau)
        except _TooWide:
            h *= 4.0
    raise PLDTooWide("the privacy-loss distribution of this schedule is too wide to discretise")


def _dpsgd_pld(segments, h, lower, add_direction, log_tau) -> DpsgdPLD:
    n_steps = sum(T for _, _, T in segments)
    step_tau = log_tau - math.log(n_steps)  # per-step top tail: composed +inf mass <= ~tau
    steps = [(_step_pld(s, q, h, "remove", step_tau), T) for s, q, T in segments]
    upper = _compose([(st.j_lo, st.split, T) for st, T in steps], h, log_tau)
    upper = _Composed(h, upper.offset, upper.pmf, _compose_inf(steps), upper.tail, upper.noise)
    sp = sq = None
    if lower:
        pp = [(st.j_lo - 1, st.stat_p, T) for st, T in steps]
        qq = [(st.j_lo - 1, st.stat_q, T) for st, T in steps]
        sp = _compose(pp, h, log_tau)
        sq = _compose(qq, h, log_tau)
    add = None
    if add_direction:
        if all(q == 1.0 for _, q, _ in segments):
            add = upper  # symmetric for q = 1
        else:
            asteps = [(_step_pld(s, q, h, "add", step_tau), T) for s, q, T in segments]
            a = _compose([(st.j_lo, st.split, T) for st, T in asteps], h, log_tau)
            add = _Composed(h, a.offset, a.pmf, _compose_inf(asteps), a.tail, a.noise)
    return DpsgdPLD(h, upper, sp, sq, add)


def epsilon_from_pld(c: _Composed, delta: float) -> float:
    """Smallest eps >= 0 with delta(eps) = p_inf + sum_i p_i (1 - e^{eps - l_i})_+ <= delta.

    delta(eps) is linear in e^eps between grid points; we find the grid interval by the delta
    values at the grid points and solve inside it (as dp-accounting's get_epsilon_for_delta).
    The infinity mass, window tails and round-off estimate count as p_inf, so the result is an
    upper bound for a dominating (pessimistic) PLD.

    Args:
      c: a composed pessimistic PLD (``DpsgdPLD.upper`` or ``DpsgdPLD.add``).
      delta: the target delta, in (0, 1) (not validated here).

    Returns:
      eps >= 0 as a float; inf if the infinity mass (with tails and round-off) is >= ``delta``.
    """
    inf = c.inf_mass + c.tail + c.noise * c.pmf.size
    if inf >= delta:
        return math.inf
    l = c.losses
    p = c.pmf
    with np.errstate(divide="ignore"):
        logq = np.log(p) - l
    # p_ge[k] = sum_{s >= k} p_s ; lq_ge[k] = log sum_{s >= k} p_s e^{-l_s}
    p_ge = np.concatenate((np.cumsum(p[::-1])[::-1], [0.0]))
    lq_ge = np.concatenate((np.logaddexp.accumulate(logq[::-1])[::-1], [-np.inf]))
    with np.errstate(over="ignore", invalid="ignore"):
        d_grid = inf + p_ge[1:] - np.exp(l + lq_ge[1:])  # delta at eps = l_k
    d_grid = np.where(np.isnan(d_grid), inf + p_ge[1:], d_grid)
    k = int(np.searchsorted(-d_grid, -delta, side="left"))  # first k with d_grid[k] <= delta
    if k >= l.size:
        return math.inf
    num = inf + p_ge[k] - delta
    lo = -math.inf if k == 0 else float(l[k - 1])
    if num <= 0 or not np.isfinite(lq_ge[k]):
        eps = float(l[k])
    else:
        eps = min(float(l[k]), max(lo, math.log(num) - float(lq_ge[k])))
    return max(0.0, eps)


def _epsilon_both(pld: DpsgdPLD, delta: float) -> float:
    """epsilon at delta under add-or-remove adjacency: the larger of the two directions."""
    return max(epsilon_from_pld(pld.upper, delta), epsilon_from_pld(pld.add, delta))


def epsilon_dpsgd(
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    delta: float = 1e-5,
    *,
    segments: Any = None,
    value_discretization_interval: float | None = None,
) -> float:
    """Certified upper bound on the epsilon at ``delta`` of a DP-SGD schedule (add-or-remove adjacency).

    Both directions, from the pessimistic PLDs of this module. The same number as
    ``rero_dpsgd(...).extras["epsilon"]``; cross-checked against dp-accounting's PLD accountant
    in the tests (agreement within its discretisation). Schedules outside the exact range
    (:func:`outside_exact_range`) or whose PLD is too wide get the exact epsilon of the same
    schedule at q = 1 (Gaussian DP with mu = sqrt(sum_i T_i / sigma_i^2); subsampling never
    increases epsilon), still an upper bound.

    Args:
      noise_multiplier: sigma > 0 (with ``sample_rate`` and ``steps``, or give ``segments``).
      sample_rate: Poisson sampling rate q in (0, 1].
      steps: number of steps T >= 1.
      delta: delta in (0, 1) (default 1e-5).
      segments: a heterogeneous schedule (see :func:`normalize_segments`).
      value_discretization_interval: PLD grid step h (default automatic).

    Returns:
      epsilon >= 0 (inf if even the infinity mass exceeds ``delta``, or mu of the q = 1 envelope
      overflows).

    Raises:
      ValueError: if the schedule is invalid (see :func:`normalize_segments`), ``delta`` is not in
        (0, 1), or ``value_discretization_interval`` is not > 0.
      TypeError: if a value has the wrong type.
    """
    segs = normalize_segments(noise_multiplier, sample_rate, steps, segments)
    d = check_probability("delta", delta, high_open=True)
    if not outside_exact_range(segs):
        try:
            pld = dpsgd_pld(segs, value_discretization_interval, lower=False, add_direction=True)
            return _epsilon_both(pld, d)
        except PLDTooWide:
            pass
    # the exact epsilon of the same schedule at q = 1 (subsampling never increases epsilon)
    from rerokit.bounds.gaussian import gaussian_epsilon

    mu = Schedule(tuple(segs)).mu_full_batch
    return math.inf if not math.isfinite(mu) or mu > 1e150 else gaussian_epsilon(d, mu)


# --------------------------------------------------------------------------- RDP


def _log_sum_rounded_up(t: np.ndarray) -> float:
    """log sum_i e^{t_i} plus its float round-off: each e^{t_i} carries a relative error of about
    eps |t_i| (from rounding t_i), the sum eps log2(n), the log eps |log A|. Without it tiny RDP
    values came out below the exact ones (log A ~ 1e-16 cancels): sigma=1e3, q=1e-5 gave 0 at
    alpha=2 and 1.1 (exact 1e-16 and 5.5e-17, mpmath)."""
    log_a = float(_logsumexp_rows(t[None, :])[0])
    with np.errstate(under="ignore", invalid="ignore"):
        w = np.exp(np.maximum(t - log_a, -700.0))
        t_avg = float(np.sum(np.where(np.isfinite(t), w * np.abs(t), 0.0)))  # sum_i (e^t_i / A) |t_i|
    return log_a + 4.0 * np.finfo(float).eps * (t_avg + math.log2(t.size) + 2.0 + abs(log_a))


def rdp_poisson_gaussian(
    noise_multiplier: float, sample_rate: float, orders: Sequence[float] = RDP_ORDERS
) -> np.ndarray:
    """RDP eps(alpha) = D_alpha(mu || nu) of one step of the Poisson-subsampled Gaussian.

    mu = (1-q) N(0, sigma^2) + q N(1, sigma^2), nu = N(0, sigma^2) (the REMOVE pair of Hayes et
    al. Thm 2), eps(alpha) = log(A_alpha) / (alpha - 1), A_alpha = E_nu[(mu/nu)^alpha].
    Integer alpha: A_alpha = sum_k C(alpha,k) (1-q)^{alpha-k} q^k exp((k^2 - k)/(2 sigma^2))
    exactly (Mironov, Talwar & Zhang 2019, Sec. 3.3). Fractional alpha: the 1-D integral by the
    trapezoid rule in log space on a grid of step sigma/50 over [-14 sigma, alpha + 14 sigma]
    (smooth, Gaussian-decaying integrand: relative error far below 1e-9; cross-checked against
    dp-accounting's series in the tests). Both add their float round-off to log A_alpha, so that
    tiny values are not rounded below the truth. q = 1: alpha / (2 sigma^2).

    Args:
      noise_multiplier: sigma, a finite number > 0.
      sample_rate: Poisson sampling rate q in (0, 1].
      orders: RDP orders alpha, each a finite number > 1 (default :data:`RDP_ORDERS`).

    Returns:
      Float array of eps(alpha), one per order, each >= 0 and rounded up.

    Raises:
      ValueError: if ``noise_multiplier``/``sample_rate`` is out of range, or an order is not a
        finite number > 1.
      TypeError: if ``noise_multiplier``/``sample_rate`` is not a number.
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sample_rate", sample_rate)
    out = np.empty(len(orders))
    for i, a in enumerate(orders):
        a = float(a)
        if not a > 1 or not math.isfinite(a):
            raise ValueError(f"orders must be finite numbers > 1, got {a!r}")
        if q == 1.0:
            out[i] = a / (2.0 * sigma * sigma)
        elif a.is_integer():
            k = np.arange(int(a) + 1, dtype=float)
            terms = (
                math.lgamma(a + 1.0) - _LGAMMA(k + 1.0).astype(float) - _LGAMMA(a - k + 1.0).astype(float)
                + k * math.log(q) + (a - k) * math.log1p(-q) + (k * k - k) / (2.0 * sigma * sigma)
            )
            out[i] = _log_sum_rounded_up(terms) / (a - 1.0)
        else:
            lo, hi = -14.0 * sigma, a + 14.0 * sigma
            n = int(min(200_000, max(4_000, math.ceil((hi - lo) / (sigma / 50.0)))))
            x = np.linspace(lo, hi, n)
            logf = -x * x / (2.0 * sigma * sigma) - math.log(sigma * math.sqrt(2.0 * math.pi))
            logf += a * _log_remove_loss(x, sigma, q)
            w = np.full(n, math.log((hi - lo) / (n - 1)))
            w[0] = w[-1] = w[0] - math.log(2.0)
            out[i] = _log_sum_rounded_up(logf + w) / (a - 1.0)
    return np.maximum(out, 0.0)


def rdp_curve_subsampled_gaussian(
    segments: Sequence[Segment], orders: Sequence[float] = RDP_ORDERS
) -> tuple[np.ndarray, np.ndarray]:
    """(orders, composed RDP) of a schedule: sum_i T_i eps_i(alpha) (RDP composition).

    Args:
      segments: (sigma, q, T) segments (:func:`normalize_segments`).
      orders: RDP orders alpha, each a finite number > 1 (default :data:`RDP_ORDERS`).

    Returns:
      ``(orders, rdp)``: two float arrays of the same length; rdp >= 0, rounded up per step as in
      :func:`rdp_poisson_gaussian`.

    Raises:
      ValueError: as :func:`rdp_poisson_gaussian`.
    """
    tot = np.zeros(len(orders))
    for s, q, T in segments:
        tot += T * rdp_poisson_gaussian(s, q, orders)
    return np.asarray(orders, dtype=float), tot


def _log_rdp_gamma(segments: Sequence[Segment], log_kappa: float) -> tuple[float, float]:
    v, o = log_rdp_gamma_many(segments, np.array([log_kappa], dtype=float))
    return float(v[0]), float(o[0])


def log_rdp_gamma_many(segments: Sequence[Segment], log_kappas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log gamma, best order) of Balle et al. 2022 Thm 2 on the schedule's RDP curve, per log kappa.

    Thm 2 bounds mu(E) <= (nu(E) e^{eps(alpha)})^{(alpha-1)/alpha} for every event E, so it is also
    an upper bound on the power (TPR) of every test at level (FPR) kappa. The curve is the
    exact-integer/trapezoid RDP of :func:`rdp_curve_subsampled_gaussian` at :data:`RDP_ORDERS`;
    each value gets a few ulps so that it is never below the float-exact bound.

    Args:
      segments: validated (sigma, q, T) segments (:func:`normalize_segments`).
      log_kappas: natural logs of the baselines kappa (<= 0), a 1-D array (not validated here).

    Returns:
      ``(log_gamma, best_order)``: arrays with one entry per log kappa; log_gamma <= 0 is an upper
      bound.
    """
    orders, rdp = rdp_curve_subsampled_gaussian(segments)
    lk = np.asarray(log_kappas, dtype=float)[:, None]
    # + a few ulps of the terms: the float value is never below (kappa e^eps)^((alpha-1)/alpha)
    logs = (lk + rdp) * (orders - 1.0) / orders + 4.0 * np.finfo(float).eps * (np.abs(lk) + rdp + 1.0)
    i = np.argmin(logs, axis=1)
    return np.minimum(0.0, logs[np.arange(lk.shape[0]), i]), orders[i]


# --------------------------------------------------------------------------- methods


def exact_power_many(
    pld: DpsgdPLD, segments: Sequence[Segment], log_kappas: np.ndarray, log_rdp: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The ``exact`` method at many log kappas from one composed PLD (arrays, one entry per kappa).

    :func:`rero_dpsgd` calls this with one kappa, so both give the same numbers.

    Args:
      pld: the composed PLDs of the schedule (:func:`dpsgd_pld`); without ``stat_p``/``stat_q``
        (``lower=False``) the lower end is the trivial kappa.
      segments: the same schedule's validated segments (for the RDP fallback).
      log_kappas: natural logs of the baselines kappa (<= 0), a 1-D array (not validated here).
      log_rdp: precomputed RDP bounds on log gamma for the same log kappas (optional); if None,
        they are computed here for the floored entries only.

    Returns:
      A dict of arrays (one entry per kappa, except the scalar ``floor``):
      ``log_upper``/``upper``: dominating-PLD bound (:func:`np_upper_many`); ``lower_pld``:
      min(threshold-test bound, upper); ``eps_star``: threshold loss; ``floor``: the PLD's infinity
      mass + tail + round-off; ``floored``: floor > 0.1 upper, where the RDP bound replaces the PLD
      value when smaller (``used_rdp``); ``log_value``/``value``: the final upper bound (value
      rounded up, never below the truth); ``lower``: min(lower_pld, value), the certified lower end.
    """
    lks = np.asarray(log_kappas, dtype=float)
    log_up, eps_star = np_upper_many(pld.upper, lks)
    up = np.exp(log_up)
    low = np_lower_many(pld.stat_p, pld.stat_q, lks) if pld.stat_p is not None else np.exp(lks)
    floor = _allowance(pld.upper)
    floored = floor > 0.1 * up
    log_val = log_up
    used_rdp = np.zeros(lks.shape, dtype=bool)
    if floored.any():
        if log_rdp is None:
            log_rdp = np.full(lks.shape, np.inf)
            log_rdp[floored] = log_rdp_gamma_many(segments, lks[floored])[0]
        used_rdp = floored & (log_rdp < log_up)
        log_val = np.where(used_rdp, log_rdp, log_up)
    value = np.array([_up(float(x)) for x in log_val])
    lower_pld = np.minimum(low, up)
    return {
        "log_upper": log_up, "upper": up, "lower_pld": lower_pld, "eps_star": eps_star, "floor": floor,
        "floored": floored, "used_rdp": used_rdp, "log_value": log_val, "value": value,
        "lower": np.minimum(lower_pld, value),
    }


def _mc(segs: Sequence[Segment], lk: float, n: int, seed: int | None, chunk_elements: int) -> dict[str, Any]:
    """Hayes et al. Algorithm 1 with a 95% confidence interval.

    Samples x_1..x_N ~ nu = N(0, sigma^2)^T (numpy Generator(seed), in chunks of about
    ``chunk_elements`` numbers), log r_i = sum_t log((1-q) + q exp((2 x_it - 1)/(2 sigma^2)))
    (logaddexp), k = floor(kappa N), threshold tau = the (k+1)-th largest r, and
    gamma_hat = (1/N) sum_{i <= k} r_(i) = mean(r 1[r > tau]).

    Interval, two error sources, Bonferroni with 97.5% each (z = 2.2414):
    (1) threshold: the number K of samples above the true (1-kappa)-quantile tau* of r under nu
        is Binomial(N, kappa); with prob. >= 97.5% (normal approximation) it lies in
        [k_lo, k_hi] = [N kappa -+ z sqrt(N kappa (1-kappa))], and then mean(r 1[r > tau*]) =
        (1/N) sum_{i <= K} r_(i) lies between the top-k_lo and top-k_hi sums;
    (2) sampling: mean(r 1[r > tau*]) is an unbiased estimate of gamma = mu(r > tau*) with
        CLT standard error se = sd(r 1[r > tau]) / sqrt(N) (estimated at the k-th threshold).
    Interval = [top_{k_lo}/N - z se, top_{k_hi}/N + z se] clipped to [0, 1]. It assumes a finite,
    well-estimated second moment of r 1[r > tau]: false for heavy-tailed r (see module docstring).
    """
    kappa = math.exp(lk)
    k = math.floor(kappa * n)
    if k < 1:
        raise ValueError(f"mc_samples must be >= 1/kappa = {1.0 / kappa:.4g} for method='mc', got {n}")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**63))
    rng = np.random.default_rng(seed)
    t_total = sum(T for _, _, T in segs)
    rows = max(1, chunk_elements // t_total)
    logr = np.empty(n)
    for start in range(0, n, rows):
        m = min(rows, n - start)
        acc = np.zeros(m)
        for sigma, q, T in segs:
            # x = sigma z ~ N(0, sigma^2); log(mu/nu)(x) = log(1-q + q exp((2x-1)/(2 sigma^2)))
            a = rng.standard_normal((m, T))
            a *= 1.0 / sigma
            a += math.log(q) - 1.0 / (2.0 * sigma * sigma)
            if q < 1.0:
                np.logaddexp(math.log1p(-q), a, out=a)
            acc += a.sum(axis=1)
        logr[start : start + m] = acc
    spread = _Z_MC * math.sqrt(n * kappa * (1.0 - kappa))
    k_lo = max(0, math.floor(n * kappa - spread))
    k_hi = min(n, math.ceil(n * kappa + spread))
    top = np.sort(np.partition(logr, n - k_hi)[n - k_hi :])[::-1] if k_hi > 0 else np.empty(0)
    logn = math.log(n)

    def mean_top(j: int, power: float = 1.0) -> float:
        if j <= 0:
            return 0.0
        return math.exp(min(700.0, float(_logsumexp_rows(power * top[None, :j])[0]) - logn))

    est = mean_top(k)
    second = mean_top(k, 2.0)
    var = max(0.0, second - est * est) * n / max(n - 1, 1)
    se = math.sqrt(var / n)
    lo = max(0.0, mean_top(k_lo) - _Z_MC * se)
    hi = min(1.0, mean_top(k_hi) + _Z_MC * se)
    return {
        "estimate": min(1.0, est),
        "interval": (lo, hi),
        "se": se,
        "seed": seed,
        "k": k,
        "log_threshold": float(top[k]) if k < top.size else float("-inf"),
        "chunk_rows": rows,
    }


def rero_dpsgd(
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    kappa: float | None = None,
    *,
    log_kappa: float | None = None,
    prior: Any = None,
    method: str = "exact",
    segments: Any = None,
    mc_samples: int = 1_000_000,
    seed: int | None = None,
    value_discretization_interval: float | None = None,
    comparisons: bool = True,
    delta: float = 1e-5,
    mc_chunk_elements: int = 1 << 21,
    membership: bool = False,
    bracket: bool = True,
) -> Bound:
    """ReRo bound gamma of DP-SGD (Hayes et al. 2023, Thm 2 / Cor. 3) - see the module docstring.

    gamma = sup { mu(E) : nu(E) <= kappa } for nu = N(0, sigma^2)^T and
    mu = prod_t [(1-q) N(0, sigma^2) + q N(1, sigma^2)] (per segment for heterogeneous schedules).
    Schedules outside the exact method's range (a noise multiplier outside
    :data:`SIGMA_EXACT_RANGE`, more than :data:`MAX_EXACT_STEPS` steps, or a PLD beyond its size
    limits) get the certified closed-form envelope (:func:`envelope_log_gamma`, ``method="envelope"``)
    for ``method="exact"``.

    Args:
      noise_multiplier: sigma > 0 (with ``sample_rate`` and ``steps``, or give ``segments``).
      sample_rate: Poisson sampling rate q in (0, 1].
      steps: number of steps T >= 1.
      kappa: the prior's baseline success in (0, 1]. Give exactly one of ``kappa`` / ``log_kappa`` /
        ``prior``.
      log_kappa: natural log of kappa (<= 0), for tiny baselines.
      prior: a prior (an int n = uniform over n, or a rerokit ``Prior``).
      method: "exact" (certified PLD bracket, default), "closed-form" (q = 1 only), "mc"
        (Hayes et al. Alg. 1 estimate with 95% CI).
      segments: heterogeneous schedule, list of (sigma, q, T) or a dp-accounting DpEvent.
      mc_samples: Monte Carlo sample count N, an integer in [1, 1e9] and >= 1/kappa for "mc"
        (recorded in ``extras``; default 1e6).
      seed: Monte Carlo seed, an integer >= 0; None (default) draws a fresh one (recorded in
        ``extras``).
      value_discretization_interval: PLD grid step h (default: rms loss sd / 40, <= 1e-2).
      comparisons: add the RDP-based gamma and the (epsilon, delta) of the schedule to extras
        (default True).
      delta: the delta of that (epsilon, delta), in (0, 1) (default 1e-5).
      mc_chunk_elements: Monte Carlo memory budget, about this many normal draws per chunk
        (default 2^21).
      membership: add ``extras['membership']``, the membership-inference risks read off the same
        composed PLD (certified brackets whatever ``method``; see
        :meth:`rerokit.bounds.tradeoff.TradeoffCurve.membership_summary`).
      bracket: compute the certified lower end of the exact method (default). ``False`` halves
        the cost and gives the same certified upper ``value`` with the trivial lower end kappa
        (used inside calibration searches, which only compare the upper value with a target).

    Returns:
      A :class:`Bound`: ``value`` = gamma (upper bound for exact/closed-form, estimate for mc),
      ``error`` = certified bracket width (exact), 0 (closed-form) or CI half-width (mc);
      ``interval`` = the certified bracket (exact) or the 95% CI (mc).
      For tiny kappa where the PLD's infinity mass / round-off floors the exact value,
      ``extras['floored']`` is True and the value is min(PLD bound, RDP bound) - still valid.

    Raises:
      ValueError: if the schedule or baseline is invalid, ``method`` is unknown, ``mc_samples``,
        ``seed`` or ``delta`` is out of range, ``method="closed-form"`` is asked for q < 1, or
        ``mc_samples`` < 1/kappa for ``method="mc"``.
      PLDTooWide: (a ValueError) for ``method="closed-form"``/``"mc"`` when ``comparisons`` or
        ``membership`` needs a PLD that cannot be discretised.
      TypeError: if a value has the wrong type.
    """
    segs = normalize_segments(noise_multiplier, sample_rate, steps, segments)
    base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa)
    lk = base.log_kappa
    method = check_choice("method", method, METHODS)
    mc_samples = check_int("mc_samples", mc_samples, minimum=1, maximum=10**9)
    if seed is not None:
        seed = check_int("seed", seed, minimum=0)
    delta = check_probability("delta", delta, high_open=True)
    if method == "closed-form":
        check_full_batch(segs)
    kap = base.kappa
    if method == "exact" and outside_exact_range(segs):
        b = _envelope(segs, lk, kap)
        if membership:
            b.extras["membership"] = _membership(segs, None)
        return b
    inputs: dict[str, Any] = {"method": method}
    if len(segs) == 1 and segments is None:
        inputs.update(noise_multiplier=segs[0][0], sample_rate=segs[0][1], steps=segs[0][2])
    else:
        inputs["segments"] = [list(s) for s in segs]
    inputs["kappa"] = kap
    inputs["log_kappa"] = lk
    extras: dict[str, Any] = {}
    log_rdp = None
    if comparisons:
        log_rdp, order = _log_rdp_gamma(segs, lk)
    pld = None
    if comparisons or method == "exact" or membership:
        try:
            pld = dpsgd_pld(
                segs, value_discretization_interval, lower=((method == "exact" and bracket) or membership),
                add_direction=comparisons,
            )
        except PLDTooWide:
            if method != "exact":
                raise
            b = _envelope(segs, lk, kap)
            if membership:
                b.extras["membership"] = _membership(segs, None)
            return b
    if comparisons:
        extras["rdp_gamma"] = _up(log_rdp)
        extras["rdp_order"] = order
        extras["epsilon"] = _epsilon_both(pld, delta)
        extras["delta"] = delta
    if membership:
        extras["membership"] = _membership(segs, pld)

    if method == "closed-form":
        mu = math.sqrt(sum(T / (s * s) for s, _, T in segs))
        from rerokit.bounds.conversions import log_rero_from_gdp

        lg = log_rero_from_gdp(mu, lk)
        extras["mu_gdp"] = mu
        extras["log_gamma"] = lg
        return Bound(_up(lg), 0.0, "closed-form", "upper", None, inputs, extras)

    if method == "mc":
        r = _mc(segs, lk, mc_samples, seed, mc_chunk_elements)
        extras.update(
            seed=r["seed"], mc_samples=mc_samples, se=r["se"], log_threshold=r["log_threshold"],
            chunk_rows=r["chunk_rows"],
        )
        lo, hi = r["interval"]
        return Bound(r["estimate"], (hi - lo) / 2.0, "mc", "estimate", (lo, hi), inputs, extras)

    r = exact_power_many(pld, segs, np.array([lk]), None if log_rdp is None else np.array([log_rdp]))
    floored = bool(r["floored"][0])
    extras.update(
        lower=float(r["lower_pld"][0]), upper=float(r["upper"][0]), value_discretization_interval=pld.h,
        threshold_epsilon=float(r["eps_star"][0]), pld_floor=float(r["floor"]), floored=floored,
    )
    if r["used_rdp"][0]:
        extras["note"] = (
            "the PLD's infinity mass / round-off floor dominates at this kappa; "
            "value is the (smaller, still valid) RDP bound"
        )
    elif floored:
        extras["note"] = "the PLD's infinity mass / round-off floor dominates at this kappa"
    extras["log_gamma"] = float(r["log_value"][0])
    value = float(r["value"][0])
    lower = float(r["lower"][0])
    return Bound(value, max(0.0, value - lower), "exact", "upper", (lower, value), inputs, extras)


def _membership(segs: Sequence[Segment], pld: DpsgdPLD | None) -> dict[str, Any]:
    """Membership-inference summary from the already composed PLD (no second build)."""
    from rerokit.bounds.tradeoff import TradeoffCurve

    return TradeoffCurve.from_pld(segs, pld).membership_summary()


# The exact PLD is built in double precision; outside this sigma range (no practical DP-SGD run
# lives there) its grids over/underflow, and rero_dpsgd answers with closed-form envelopes.
SIGMA_EXACT_RANGE = (1e-4, 1e8)

# Beyond this many steps the composed PLD's window loses double precision (measured: 1e13-1e14 steps
# fail to discretise; 1e12 gives a bracket of width 0.1); such schedules get the envelope.
MAX_EXACT_STEPS = 10**10


def check_full_batch(segments: Sequence[Segment]) -> None:
    """Raise unless every segment has q = 1 (what method='closed-form', Gaussian DP, needs).

    Args:
      segments: (sigma, q, T) segments.

    Raises:
      ValueError: if some segment has a sample rate other than 1.
    """
    bad = [q for _, q, _ in segments if q != 1.0]
    if bad:
        raise ValueError(
            f"method='closed-form' needs sample_rate = 1 (full batch, Gaussian DP); got sample_rate={bad[0]!r}. "
            "Use method='exact' for q < 1"
        )


def outside_exact_range(segments: Sequence[Segment]) -> bool:
    """True if the schedule is outside the exact PLD method's range (closed-form envelopes are used).

    That is: a noise multiplier outside SIGMA_EXACT_RANGE or more than MAX_EXACT_STEPS steps in all.

    Args:
      segments: (sigma, q, T) segments.

    Returns:
      Whether the exact method is skipped for this schedule.
    """
    return any(not (SIGMA_EXACT_RANGE[0] <= s <= SIGMA_EXACT_RANGE[1]) for s, _, _ in segments) or (
        sum(T for _, _, T in segments) > MAX_EXACT_STEPS
    )


def envelope_note(segments: Sequence[Segment]) -> str:
    """Why the closed-form envelope answers for this schedule (for ``extras['note']``).

    Args:
      segments: (sigma, q, T) segments.

    Returns:
      A one-sentence note naming the reason and what the value is.
    """
    why = (f"a noise multiplier outside [{SIGMA_EXACT_RANGE[0]:g}, {SIGMA_EXACT_RANGE[1]:g}]"
           if any(not (SIGMA_EXACT_RANGE[0] <= s <= SIGMA_EXACT_RANGE[1]) for s, _, _ in segments)
           else "a schedule too long for the privacy-loss distribution (more than "
                f"{MAX_EXACT_STEPS:.0e} steps, or a grid beyond its size limits)")
    return (f"{why}: value is the minimum of two closed-form upper bounds (same schedule at q = 1; target never "
            "sampled), error = value - kappa")


def envelope_log_gamma(segments: Sequence[Segment], log_kappa: float) -> float:
    """log of min(g_full, g_sup), two closed-form upper bounds on gamma valid for every schedule.

    * g_full = Phi(Phi^{-1}(kappa) + sqrt(sum_i T_i / sigma_i^2)): the same schedule with q = 1.
      Poisson subsampling never increases gamma: mu^T is a mixture over the set S of steps that
      use the target of products P_S with N(1, sigma^2) on S, and P_S(E) <= g_full for every E
      with nu(E) <= kappa (fewer Gaussian steps are a post-processing of more).
    * g_sup = 1 - (1 - kappa) prod_i (1 - q_i)^{T_i} (:func:`log_sup_gamma`).

    Args:
      segments: (sigma, q, T) segments.
      log_kappa: natural log of the baseline kappa (<= 0; not validated here).

    Returns:
      log gamma (<= 0), an upper bound (g_full is rounded up as in
      :func:`~rerokit.bounds.conversions.log_rero_from_gdp`).
    """
    lk = float(log_kappa)
    inv = sum(T / (s * s) if s > 1e-150 else math.inf for s, _, T in segments)
    mu = math.sqrt(inv) if math.isfinite(inv) else math.inf
    if math.isinf(mu):
        log_full = 0.0
    else:
        from rerokit.bounds.conversions import log_rero_from_gdp

        log_full = log_rero_from_gdp(mu, lk)
    return min(0.0, log_full, log_sup_gamma(segments, lk))


def log_sup_gamma(segments: Sequence[Segment], log_kappa: float) -> float:
    """log of sup over all noise multipliers of gamma: 1 - (1 - kappa) prod_i (1 - q_i)^{T_i}.

    With probability prod (1-q_i)^{T_i} the target is never sampled; mu and nu then coincide and
    no test beats kappa there, so mu(E) <= (1 - prod) + prod nu(E) for every E (sigma -> 0
    attains it). Used as an envelope and to reject unreachable calibration targets at once.

    Args:
      segments: (sigma, q, T) segments (only q and T matter).
      log_kappa: natural log of the baseline kappa (<= 0; not validated here).

    Returns:
      log of the supremum (<= 0; 0 when log_kappa >= 0 or some q = 1).
    """
    lk = float(log_kappa)
    if lk >= 0.0:
        return 0.0
    log_never = sum(T * math.log1p(-q) if q < 1.0 else -math.inf for _, q, T in segments)
    return math.log(-math.expm1(math.log(-math.expm1(lk)) + log_never))


def _envelope(segs: Sequence[Segment], lk: float, kap: float) -> Bound:
    """The closed-form envelope (:func:`envelope_log_gamma`) as a Bound, bracket [kappa, value]."""
    log_val = envelope_log_gamma(segs, lk)
    value = _up(log_val)
    lower = min(kap, value)  # gamma >= kappa always: the attacker may ignore the release
    inputs: dict[str, Any] = {"method": "exact", "kappa": kap, "log_kappa": lk}
    if len(segs) == 1:
        inputs.update(noise_multiplier=segs[0][0], sample_rate=segs[0][1], steps=segs[0][2])
    else:
        inputs["segments"] = [list(x) for x in segs]
    extras = {
        "lower": lower, "upper": value, "log_gamma": log_val, "floored": False,
        "note": envelope_note(segs),
    }
    return Bound(value, max(0.0, value - lower), "envelope", "upper", (lower, value), inputs, extras)


def _up(log_value: float) -> float:
    """exp(log_value) rounded up (never below the true value because of underflow/rounding)."""
    v = math.exp(log_value)
    if v >= 1.0:
        return 1.0
    return float(np.nextafter(v, 1.0)) if v > 0 else 5e-324
