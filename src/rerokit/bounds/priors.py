"""Priors over the target and their baseline kappa (Balle et al. 2022, Sec. VII-B).

For a prior pi, error function l and threshold eta the baseline is

    kappa_{pi,l}(eta) = sup_{z0} P_{Z ~ pi}[ l(Z, z0) <= eta ],

the success probability of the best reconstruction that ignores the release. Every ReRo bound in
:mod:`rerokit.bounds.conversions` takes kappa (or log kappa) as its only input about the prior;
gamma is non-decreasing in kappa, so an *upper* bound on kappa always gives a valid ReRo bound.

Each prior family is a small frozen class with ``log_kappa(eta)`` (natural log, never underflows)
and ``kappa(eta) = exp(log_kappa(eta))`` (may underflow to 0.0 for tiny baselines such as
9.66e-473; use ``log_kappa``/:func:`log10_kappa` then). numpy/scipy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np
from rerokit._validate import check_choice, check_int, check_nonnegative, check_positive, check_probability
from rerokit._validate import check_real, check_real_array
from rerokit.bounds.types import Bound

__all__ = [
    "Prior",
    "Baseline",
    "BaselinePrior",
    "as_prior",
    "resolve_baseline",
    "check_log_kappa",
    "UniformDiscretePrior",
    "DiscretePrior",
    "UniformBallPrior",
    "GaussianPrior",
    "PixelTolerancePrior",
    "kappa_from_samples",
    "log10_kappa",
    "log_binom_sf",
    "log_chi2_cdf",
]

_LN10 = math.log(10.0)


def log10_kappa(log_kappa: float) -> float:
    """log10(kappa) from the natural log ``log_kappa`` (for printing values like 9.66e-473).

    Args:
      log_kappa: natural log of kappa; -inf (kappa = 0, or an overflowed log) is passed through.

    Returns:
      log_kappa / ln 10 as a float (-inf for -inf).

    Raises:
      TypeError: if ``log_kappa`` is not a real number.
      ValueError: if ``log_kappa`` is nan.
    """
    if isinstance(log_kappa, float) and math.isinf(log_kappa):
        return float(log_kappa)  # kappa = 0 (or an overflowed log): -inf stays -inf
    return check_real("log_kappa", log_kappa) / _LN10


def _exact_eta(eta: float | None) -> float:
    """eta for the 0/1 error of discrete priors; None means exact match (eta = 0)."""
    return 0.0 if eta is None else check_nonnegative("eta", eta)


def _required_eta(eta: float | None, prior: str) -> float:
    if eta is None:
        raise ValueError(f"eta (the reconstruction-error threshold, > 0) is required for a {prior}")
    return check_positive("eta", eta)


class _KappaFromLogKappa:
    """Mixin of the priors whose baseline is computed in logs: ``kappa = exp(log_kappa)``."""

    def kappa(self, eta: float | None = None) -> float:
        """kappa = exp(log_kappa(eta)) in [0, 1] (may underflow to 0; use :meth:`log_kappa` then).

        Args:
          eta: as in :meth:`log_kappa` (its Raises apply too).

        Returns:
          kappa as a float.
        """
        return math.exp(self.log_kappa(eta))  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# The Prior protocol and the one place where a prior / kappa / log kappa becomes a baseline
# ---------------------------------------------------------------------------------------------


@runtime_checkable
class Prior(Protocol):
    """What every bound needs from a prior: its baseline kappa(eta) (Balle et al. 2022, Def. 2).

    ``log_kappa(eta=None)`` is the natural log (never underflows); ``kappa(eta=None)`` its value
    (exact for uniform priors: 1/n); ``name`` a short description for reports. ``eta=None``
    means the prior's natural threshold (exact match for discrete priors); priors with a
    continuous error (balls, Gaussians) need an explicit ``eta``.
    """

    @property
    def name(self) -> str:
        """Short description of the prior for reports."""
        ...

    def log_kappa(self, eta: float | None = None) -> float:
        """log kappa_{pi,l}(eta), the natural log of the baseline (never underflows).

        Args:
          eta: the reconstruction-error threshold; None means the prior's natural threshold.

        Returns:
          log kappa (<= 0) as a float; an upper bound where it is not exact.
        """
        ...

    def kappa(self, eta: float | None = None) -> float:
        """kappa_{pi,l}(eta), the baseline success (may underflow to 0; use :meth:`log_kappa` then).

        Args:
          eta: the reconstruction-error threshold; None means the prior's natural threshold.

        Returns:
          kappa in [0, 1].
        """
        ...


@dataclass(frozen=True)
class Baseline:
    """A resolved baseline: ``kappa`` (exactly 1/n for a uniform prior of size n; may underflow
    to 0 for tiny baselines), ``log_kappa`` (natural log, always finite) and the ``prior``."""

    kappa: float
    log_kappa: float
    prior: "Prior"

    @property
    def log10_kappa(self) -> float:
        """log10(kappa), finite even where ``kappa`` underflows to 0."""
        return self.log_kappa / _LN10

    def echo(self) -> dict[str, Any]:
        """JSON-ready description of the prior (for result files and reports)."""
        p = self.prior
        if isinstance(p, UniformDiscretePrior):
            return {"prior_size": p.n}
        return {"prior": p.name}


@dataclass(frozen=True, init=False)
class BaselinePrior:
    """A prior known only through its baseline: ``BaselinePrior(kappa=0.1)`` or ``BaselinePrior(log_kappa=-1087.0)``.

    ``log_kappa`` is for baselines that underflow, e.g. 9.66e-473.

    Args:
      kappa: the baseline success, in (0, 1].
      log_kappa: its natural log (<= 0), keyword-only. Give exactly one of the two.

    Raises:
      TypeError: if the given value is not a real number.
      ValueError: if both or neither are given, or the value is out of range or not finite.
    """

    _log_kappa: float
    _kappa: float

    def __init__(self, kappa: float | None = None, *, log_kappa: float | None = None) -> None:
        if (kappa is None) == (log_kappa is None):
            raise ValueError("give exactly one of kappa (in (0, 1]) or log_kappa (<= 0)")
        if kappa is not None:
            k = check_probability("kappa", kappa)
            lk = math.log(k)
        else:
            lk = check_log_kappa(log_kappa)
            k = math.exp(lk)
        object.__setattr__(self, "_log_kappa", lk)
        object.__setattr__(self, "_kappa", k)

    @property
    def name(self) -> str:
        """Short description for reports (the kappa, or its log10 when kappa underflows)."""
        return f"baseline kappa = {self._kappa:.6g}" if self._kappa > 0 else f"baseline log10 kappa = {log10_kappa(self._log_kappa):.6g}"

    def log_kappa(self, eta: float | None = None) -> float:
        """The stored log kappa, whatever the threshold.

        Args:
          eta: ignored (the baseline is already resolved at its threshold).

        Returns:
          log kappa (<= 0, finite).
        """
        return self._log_kappa

    def kappa(self, eta: float | None = None) -> float:
        """The stored kappa, whatever the threshold.

        Args:
          eta: ignored (the baseline is already resolved at its threshold).

        Returns:
          kappa in [0, 1] (0.0 when given as a log that underflows).
        """
        return self._kappa


def check_log_kappa(log_kappa: Any, name: str = "log_kappa") -> float:
    """Check that log(kappa) is a finite number <= 0 (kappa in (0, 1]).

    Args:
      log_kappa: the value to check.
      name: parameter name used in the error message (default "log_kappa").

    Returns:
      ``log_kappa`` as a float.

    Raises:
      TypeError: if ``log_kappa`` is not a real number.
      ValueError: if ``log_kappa`` is not finite or is > 0.
    """
    from rerokit._validate import check_real

    x = check_real(name, log_kappa)
    if x > 0:
        raise ValueError(f"{name} must be a finite number <= 0 (kappa in (0, 1]), got {log_kappa!r}")
    return x


def as_prior(prior: Any = None, *, kappa: float | None = None, log_kappa: float | None = None) -> Prior:
    """The prior meant by exactly one of ``prior`` / ``kappa`` / ``log_kappa``.

    Args:
      prior: a :class:`Prior` (returned as is) or an int n >= 1 (a uniform prior over n candidates,
        :class:`UniformDiscretePrior`).
      kappa: a baseline in (0, 1], giving a :class:`BaselinePrior`.
      log_kappa: the natural log of a baseline (<= 0), giving a :class:`BaselinePrior`.

    Returns:
      The :class:`Prior`.

    Raises:
      ValueError: if not exactly one of the three is given, or the value is out of range (n < 1,
        kappa not in (0, 1], log_kappa > 0 or not finite).
      TypeError: if ``prior`` is neither an int nor a :class:`Prior` (a bool or a float, say; the
        message says what to pass), or ``kappa``/``log_kappa`` is not a number.
    """
    given = [n for n, v in (("prior", prior), ("kappa", kappa), ("log_kappa", log_kappa)) if v is not None]
    if len(given) != 1:
        raise ValueError(
            "give exactly one of prior (an int prior size n >= 1 or a rerokit prior), kappa (in (0, 1]) or "
            "log_kappa (<= 0)" + (f"; got {', '.join(given)}" if given else "")
        )
    if prior is None:
        return BaselinePrior(kappa, log_kappa=log_kappa)
    if isinstance(prior, bool):
        raise TypeError("prior must be an int prior size n >= 1 or a rerokit prior, got bool")
    if isinstance(prior, (int, np.integer)):
        return UniformDiscretePrior(int(prior))
    if isinstance(prior, Prior):
        return prior
    if isinstance(prior, float):
        raise TypeError(f"prior must be an int prior size or a rerokit prior, got the float {prior!r}; "
                        "for a baseline probability pass kappa=... instead")
    raise TypeError(f"prior must be an int prior size n >= 1 or a rerokit prior (e.g. UniformDiscretePrior), "
                    f"got {type(prior).__name__}")


def resolve_baseline(prior: Any = None, *, kappa: float | None = None, log_kappa: float | None = None,
                     eta: float | None = None) -> Baseline:
    """:class:`Baseline` of exactly one of ``prior``/``kappa``/``log_kappa`` at threshold ``eta``.

    The one place where rerokit turns a prior, a kappa or a log kappa into the baseline every
    bound takes. ``kappa`` of a uniform prior of size n is exactly ``1/n`` (not exp(-log n)).

    Args:
      prior: a :class:`Prior` or an int prior size n >= 1 (see :func:`as_prior`).
      kappa: a baseline in (0, 1].
      log_kappa: the natural log of a baseline (<= 0), for baselines that underflow.
      eta: the reconstruction-error threshold passed to the prior's ``log_kappa``/``kappa``; None
        (default) means the prior's natural threshold (exact match for discrete priors; continuous
        priors need an explicit eta > 0).

    Returns:
      A :class:`Baseline` (kappa, log kappa, prior).

    Raises:
      ValueError: as :func:`as_prior`, or if ``eta`` is invalid for the prior (negative, or missing
        for a continuous prior).
      TypeError: as :func:`as_prior`.
    """
    p = as_prior(prior, kappa=kappa, log_kappa=log_kappa)
    lk = float(p.log_kappa(eta))
    k = float(p.kappa(eta))
    return Baseline(kappa=k, log_kappa=lk, prior=p)


# ---------------------------------------------------------------------------------------------
# Discrete priors, exact matching (l_{0/1})
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UniformDiscretePrior:
    """Uniform prior on ``n`` distinct candidates with the 0/1 error l(z, z') = 1[z != z'].

    kappa(eta) = 1/n for eta in [0, 1) (exact reconstruction) and 1 for eta >= 1 (every guess
    has error <= 1). Balle et al. 2022, Sec. VII-B; Hayes et al. 2023 use n = 10, 100.

    Args:
      n: number of candidates, an integer >= 1.

    Raises:
      TypeError: if ``n`` is not an integer.
      ValueError: if ``n`` < 1 (the message names it ``prior_size``).
    """

    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("prior_size", self.n, minimum=1))

    @property
    def name(self) -> str:
        """Short description for reports."""
        return f"uniform over {self.n} candidates"

    def log_kappa(self, eta: float | None = None) -> float:
        """log kappa = -log n (eta < 1, default exact match) or 0 (eta >= 1).

        Args:
          eta: the 0/1-error threshold, >= 0; None (default) means exact match (eta = 0).

        Returns:
          log kappa as a float.

        Raises:
          ValueError: if ``eta`` is negative or not finite (TypeError if not a number).
        """
        return 0.0 if _exact_eta(eta) >= 1.0 else -math.log(self.n)

    def kappa(self, eta: float | None = None) -> float:
        """kappa = 1/n exactly (eta < 1, default exact match) or 1 (eta >= 1).

        Args:
          eta: as in :meth:`log_kappa` (whose Raises apply too).

        Returns:
          kappa as a float.
        """
        return 1.0 if _exact_eta(eta) >= 1.0 else 1.0 / self.n


@dataclass(frozen=True, init=False)
class DiscretePrior(_KappaFromLogKappa):
    """Prior with probabilities proportional to ``weights`` on distinct candidates, 0/1 error.

    kappa(eta) = max_i w_i / sum_j w_j for eta in [0, 1) (the best oblivious guess is the mode),
    1 for eta >= 1. Weights must be finite, non-negative and not all zero.

    Args:
      weights: non-negative finite weights, a non-empty 1-D sequence with a finite sum > 0 (stored
        normalised, as ``log_weights``).

    Raises:
      TypeError: if ``weights`` is not an array of real numbers.
      ValueError: if it is not 1-D and non-empty, holds a negative or non-finite weight, or sums to
        0 or to inf.
    """

    log_weights: tuple[float, ...]

    def __init__(self, weights: Sequence[float]) -> None:
        w = check_real_array("weights", weights)
        if w.ndim != 1 or w.size == 0:
            raise ValueError("weights must be a non-empty 1-D sequence of finite numbers >= 0")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be finite numbers >= 0 (not all zero)")
        total = float(w.sum())
        if not total > 0 or not math.isfinite(total):
            raise ValueError("weights must be finite numbers >= 0 with a finite sum > 0")
        with np.errstate(divide="ignore"):
            lw = np.log(w) - math.log(total)
        object.__setattr__(self, "log_weights", tuple(float(x) for x in lw))

    @property
    def probabilities(self) -> np.ndarray:
        """The normalised probabilities p_i, shape (n,)."""
        return np.exp(np.asarray(self.log_weights))

    @property
    def n(self) -> int:
        """Number of candidates."""
        return len(self.log_weights)

    @property
    def name(self) -> str:
        """Short description for reports."""
        return f"discrete over {self.n} candidates (max probability {self.kappa():.6g})"

    def log_kappa(self, eta: float | None = None) -> float:
        """log kappa = log max_i p_i (eta < 1, default exact match) or 0 (eta >= 1).

        Args:
          eta: the 0/1-error threshold, as in :meth:`UniformDiscretePrior.log_kappa` (whose Raises apply too).

        Returns:
          log kappa (<= 0) as a float.
        """
        if _exact_eta(eta) >= 1.0:
            return 0.0
        return min(0.0, max(self.log_weights))


# ---------------------------------------------------------------------------------------------
# Continuous priors with l2 error
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UniformBallPrior(_KappaFromLogKappa):
    """Uniform prior U(B_1^d(0)) on the Euclidean unit ball in ``d`` dimensions, l2 error.

    kappa(eta) = sup_{z0} Vol(B_1 cap B_eta(z0)) / Vol(B_1) = min(1, eta)^d (Balle et al. 2022,
    Prop. 6 and its proof). For eta <= 1 the ball B_eta(z0) lies inside B_1 for every
    ||z0|| <= 1 - eta (e.g. the centre), which attains the volume ratio eta^d, and no ball of
    radius eta has more volume; for eta >= 1 the centre's ball covers B_1, so kappa = 1.

    Args:
      d: dimension, an integer >= 1.

    Raises:
      TypeError: if ``d`` is not an integer.
      ValueError: if ``d`` < 1 (the message names it ``dim``).
    """

    d: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", check_int("dim", self.d, minimum=1))

    @property
    def name(self) -> str:
        """Short description for reports."""
        return f"uniform on the unit ball in {self.d} dimensions"

    def log_kappa(self, eta: float | None = None) -> float:
        """log kappa = d * log(min(1, eta)), eta > 0 (required).

        Args:
          eta: the l2 reconstruction-error threshold, > 0 (required).

        Returns:
          log kappa (<= 0) as a float.

        Raises:
          ValueError: if ``eta`` is None, not finite or not > 0 (TypeError if not a number).
        """
        e = _required_eta(eta, "UniformBallPrior")
        return 0.0 if e >= 1.0 else self.d * math.log(e)


def log_chi2_cdf(x: float, df: float) -> float:
    """log P(chi2_df <= x), accurate where the CDF underflows (x << df).

    chi2 CDF = P(df/2, x/2), the regularised lower incomplete gamma function. Where scipy's
    ``gammainc`` is representable it is used directly; below 1e-280 the series
    P(a, y) = y^a e^{-y} / Gamma(a+1) * sum_k y^k / ((a+1)...(a+k)) is summed in log space
    (all terms positive; it converges geometrically there because y < a). Both are rounded
    up by their float error (a relative 1e-11 for ``gammainc``): an upper bound on log kappa.

    Args:
      x: the point, a finite number >= 0.
      df: degrees of freedom, a finite number > 0.

    Returns:
      log P(chi2_df <= x) (<= 0), rounded up; -inf for x = 0.

    Raises:
      TypeError: if an argument is not a real number.
      ValueError: if ``x`` is negative, ``df`` is not > 0, or either is not finite.
    """
    df = check_positive("df", df)
    x = check_nonnegative("x", x)
    if x == 0.0:
        return -math.inf
    from scipy.special import gammainc, gammaln

    a, y = 0.5 * df, 0.5 * x
    v = float(gammainc(a, y))
    if v > 1e-280:
        # rounded up by a relative 1e-11 (kappa feeds upper bounds): scipy's gammainc is
        # accurate to ~1e-14 relative (measured 2e-15 low at a = 1/2, y = 5e-201), plus the
        # rounding of y propagated through d log P / d log y <= a + y
        return min(0.0, math.log(v) + 1e-11 + 8.0 * np.finfo(float).eps * (a + y))
    # series: sum_k t_k, t_0 = 1, t_k = t_{k-1} * y / (a + k)
    s, t, k = 1.0, 1.0, 0
    while True:
        k += 1
        t *= y / (a + k)
        s += t
        if t < 1e-17 * s or k > 100_000:
            break
    lg = float(gammaln(a + 1.0))
    # rounded up (kappa feeds upper bounds): a few ulps of the largest terms of the sum, plus
    # the rounding of y (d log P / d log y <= a + y)
    slack = 8.0 * np.finfo(float).eps * (abs(a * math.log(y)) + y + lg + 1.0 + (a + y))
    return a * math.log(y) - y - lg + math.log(s) + slack


@dataclass(frozen=True)
class GaussianPrior(_KappaFromLogKappa):
    """Isotropic Gaussian prior N(w, s^2 I_d) with l2 error.

    kappa(eta) = P(||Z - w|| <= eta) = P(chi2_d <= (eta / s)^2): the best oblivious guess is the
    mean w (Balle et al. 2022, Prop. 7, first claim of its proof: argmax_{z0} F_eta(z0) = 0).
    Computed exactly in log space (:func:`log_chi2_cdf`). The proof's tail bound
    kappa <= exp(d/2 (1 - eta^2/(s^2 d) + log(eta^2/(s^2 d)))) is available as
    :meth:`log_kappa_tail_bound` (valid for eta^2 <= s^2 d).

    Args:
      d: dimension, an integer >= 1.
      sigma: standard deviation s per coordinate, a finite number > 0.

    Raises:
      TypeError: if ``d`` is not an integer or ``sigma`` not a number.
      ValueError: if ``d`` < 1 or ``sigma`` is not a finite number > 0.
    """

    d: int
    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", check_int("dim", self.d, minimum=1))
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))

    @property
    def name(self) -> str:
        """Short description for reports."""
        return f"Gaussian N(w, {self.sigma:g}^2 I) in {self.d} dimensions"

    def log_kappa(self, eta: float | None = None) -> float:
        """log kappa = log P(chi2_d <= (eta/sigma)^2), eta > 0 (required).

        Rounded up (an upper bound on log kappa); for eta/sigma below 1e-150 the leading term of the
        series is used, above 1e150 the value is 0.

        Args:
          eta: the l2 reconstruction-error threshold, as in :meth:`UniformBallPrior.log_kappa` (whose Raises
            apply too).

        Returns:
          log kappa (<= 0) as a float.
        """
        e = _required_eta(eta, "GaussianPrior")
        r = e / self.sigma
        if r > 1e150:  # (eta/sigma)^2 overflows: P(chi2_d <= x) = 1 to double precision
            return 0.0
        if r < 1e-150:  # x underflows: P(a, y) = y^a e^-y / Gamma(a+1) (1 + O(y)), y < 1e-300
            from scipy.special import gammaln

            a = 0.5 * self.d
            lv = a * (2.0 * math.log(r) - math.log(2.0)) - float(gammaln(a + 1.0))
            return min(0.0, lv + 8.0 * np.finfo(float).eps * (abs(lv) + 2.0 * a * abs(math.log(r)) + 1.0))
        return min(0.0, log_chi2_cdf(r * r, self.d))


    def log_kappa_tail_bound(self, eta: float) -> float:
        """Prop. 7's bound d/2 (1 - r + log r), r = eta^2/(sigma^2 d) <= 1 (else 0) (Balle et al. 2022).

        Args:
          eta: the l2 reconstruction-error threshold, > 0.

        Returns:
          The tail bound on log kappa (<= 0; an upper bound, never below :meth:`log_kappa`'s exact value).

        Raises:
          ValueError: if ``eta`` is not a finite number > 0 (TypeError if not a number).
        """
        e = check_positive("eta", eta)
        r = (e / self.sigma) ** 2 / self.d
        return 0.0 if r >= 1.0 else 0.5 * self.d * (1.0 - r + math.log(r))


# ---------------------------------------------------------------------------------------------
# Per-coordinate tolerance (Hayes et al. 2023, App. I)
# ---------------------------------------------------------------------------------------------


def log_binom_sf(k: int, n: int, log_p: float, log_1mp: float) -> float:
    """log P(Binomial(n, p) >= k), summed in log space (exact where scipy's logsf underflows).

    Rounded up by a few ulps of the largest terms (the value feeds upper bounds on kappa).

    Args:
      k: the threshold count, an integer (k <= 0 gives 0, k > n gives -inf).
      n: number of trials, an integer >= 0.
      log_p: log p, a number <= 0 (pass -inf for p = 0).
      log_1mp: log(1 - p), a number <= 0 (pass -inf for p = 1).

    Returns:
      log P(Binomial(n, p) >= k) in [-inf, 0], never below the exact value.

    Raises:
      TypeError: if ``k`` or ``n`` is not an integer.
      ValueError: if ``n`` < 0, or ``log_p``/``log_1mp`` is not a number <= 0 (nan included).
    """
    from scipy.special import gammaln, logsumexp

    k = check_int("k", k)
    n = check_int("n", n, minimum=0)
    for name, v in (("log_p", log_p), ("log_1mp", log_1mp)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) or math.isnan(v) or v > 0:
            raise ValueError(f"{name} must be a log probability (a number <= 0, -inf allowed), got {v!r}")
    if k <= 0:
        return 0.0
    if k > n:
        return -math.inf
    j = np.arange(k, n + 1, dtype=float)
    with np.errstate(invalid="ignore"):
        lp = j * log_p if log_p != -math.inf else np.where(j == 0, 0.0, -np.inf)
        lq = (n - j) * log_1mp if log_1mp != -math.inf else np.where(j == n, 0.0, -np.inf)
    g_n, g_j, g_nj = gammaln(n + 1.0), gammaln(j + 1.0), gammaln(n - j + 1.0)
    terms = g_n - g_j - g_nj + lp + lq
    # Round up (kappa feeds upper bounds): each term is a sum of five values of size up to
    # log n! ~ n log n, computed with a few ulps each; for d = 1e6 that is ~1e-9 in the log,
    # measured below the exact (mpmath) value by up to 5e-10 before this margin.
    with np.errstate(invalid="ignore"):
        mags = np.where(np.isfinite(terms), g_n + g_j + g_nj + np.abs(lp) + np.abs(lq), 0.0)
    slack = 8.0 * np.finfo(float).eps * (float(np.max(mags)) + 1.0)
    return float(min(0.0, logsumexp(terms) + slack))


def _ceil_count(rho: float, d: int) -> int:
    x = rho * d
    r = round(x)
    if abs(x - r) <= 1e-9 * max(1.0, x):
        return int(r)
    return int(math.ceil(x))


@dataclass(frozen=True)
class PixelTolerancePrior(_KappaFromLogKappa):
    """Independent uniform pixels; at least a fraction rho of the d coordinates lies within delta of the target.

    Hayes et al. 2023, App. I: (1/d) sum_i 1[|z_i - zhat_i| < delta] >= rho.

    Per coordinate the best guess catches the target with probability p:

    * ``levels=None``: pixels uniform on [0, 1]; p = min(1, 2 delta) (guess 1/2).
    * ``levels=L``: pixels uniform on the grid {0, 1/(L-1), ..., 1}; p = m / L with m the largest
      number of grid points in an open interval of length 2 delta: m = min(L, ceil(2 delta (L-1)))
      for the paper's strict ``<`` (``strict=True``) and min(L, floor(2 delta (L-1)) + 1) for
      ``<=``.

    Coordinates are independent and the success count is a sum of Bernoulli(p_i(guess_i)) whose
    upper tail increases in every p_i, so the best oblivious guess maximises each p_i and

        kappa = P(Binomial(d, p) >= ceil(rho d)).

    For rho = 1 this is p^d: with p = 2 * 32/256 (the paper's (2 x 32/256)^{d rho}, i.e.
    ``levels=256, delta=32/255`` or continuous ``delta=32/256``) it gives 9.66e-473 for MNIST
    (d = 784) and 2.96e-1850 for CIFAR-10 (d = 3072), the numbers printed in App. I. For rho < 1
    the paper's expression p^{d rho} is the probability that one *fixed* set of rho d pixels
    matches and is smaller than kappa; this class returns the binomial tail (the true kappa).

    Args:
      d: number of coordinates (pixels), an integer in [1, 1e8].
      delta: per-coordinate tolerance, a finite number > 0 (pixel values in [0, 1]).
      rho: fraction of coordinates that must match, in [0, 1] (default 1: all of them).
      levels: number of grid levels L >= 2 (e.g. 256 for 8-bit images); None (default) for
        continuous pixels on [0, 1].
      strict: True (default) for the paper's strict ``|z_i - zhat_i| < delta``, False for ``<=``
        (matters only on a grid).

    Raises:
      TypeError: if ``d``/``levels`` is not an integer, ``delta``/``rho`` not a number, or ``strict``
        not a bool.
      ValueError: if a value is out of its range.
    """

    d: int
    delta: float
    rho: float = 1.0
    levels: int | None = None
    strict: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", check_int("dim", self.d, minimum=1, maximum=10**8))
        object.__setattr__(self, "delta", check_positive("delta", self.delta))
        object.__setattr__(self, "rho", check_probability("rho", self.rho, low_open=False))
        if self.levels is not None:
            object.__setattr__(self, "levels", check_int("levels", self.levels, minimum=2))
        if not isinstance(self.strict, bool):
            raise TypeError("strict must be a bool")

    @property
    def matching_levels(self) -> int | None:
        """m: grid levels within delta of the best per-coordinate guess (None if continuous)."""
        if self.levels is None:
            return None
        L = self.levels
        r = 2.0 * self.delta * (L - 1)
        ri = round(r)
        is_int = abs(r - ri) <= 1e-9 * max(1.0, r)
        if self.strict:
            m = int(ri) if is_int else int(math.ceil(r))
        else:
            m = (int(ri) if is_int else int(math.floor(r))) + 1
        return max(1, min(L, m))

    def log_p(self) -> tuple[float, float]:
        """(log p, log(1 - p)) of the per-coordinate success of the best guess."""
        if self.levels is None:
            p2 = 2.0 * self.delta
            if p2 >= 1.0:
                return 0.0, -math.inf
            return math.log(p2), math.log1p(-p2)
        m, L = self.matching_levels, self.levels
        assert m is not None
        if m >= L:
            return 0.0, -math.inf
        return math.log(m) - math.log(L), math.log(L - m) - math.log(L)

    @property
    def p(self) -> float:
        """Per-coordinate success probability p of the best guess."""
        return math.exp(self.log_p()[0])

    @property
    def required(self) -> int:
        """ceil(rho d): coordinates that must match (an integer within 1e-9 relative counts as it)."""
        return _ceil_count(self.rho, self.d)

    @property
    def name(self) -> str:
        """Short description for reports."""
        return (f"any {self.d}-pixel image within {self.delta:g} per pixel"
                + ("" if self.rho == 1.0 else f" on a fraction {self.rho:g} of the pixels"))

    def log_kappa(self, eta: Any = None) -> float:
        """log P(Binomial(d, p) >= ceil(rho d)), rounded up (see :func:`log_binom_sf`).

        Args:
          eta: unused (the criterion is (delta, rho)); accepted for the :class:`Prior` protocol.

        Returns:
          log kappa (<= 0) as a float.
        """
        lp, lq = self.log_p()
        return log_binom_sf(self.required, self.d, lp, lq)


# ---------------------------------------------------------------------------------------------
# kappa from samples (Hayes et al. 2023, App. J, Prop. 5)
# ---------------------------------------------------------------------------------------------

_METRICS = ("exact", "l2", "linf", "l1")


def _pairwise_within(x: np.ndarray, radius: float, metric: str, chunk: int = 512) -> np.ndarray:
    """For each row i, #{j : dist(x_i, x_j) <= radius}."""
    n = x.shape[0]
    counts = np.empty(n, dtype=np.int64)
    sq = np.einsum("ij,ij->i", x, x) if metric == "l2" else None
    if metric != "l2":  # (chunk, n, dim) difference tensor: keep it under ~16M elements
        chunk = max(1, min(chunk, 16_000_000 // max(1, n * x.shape[1])))
    for s in range(0, n, chunk):
        blk = x[s : s + chunk]
        if metric == "l2":
            assert sq is not None
            d2 = sq[s : s + chunk, None] + sq[None, :] - 2.0 * blk @ x.T
            # round-off: a squared distance is never below 0; widen by a relative 1e-12 so that
            # a pair at exactly the radius is counted (the count is used as an upper bound).
            tol = 1e-12 * (sq[s : s + chunk, None] + sq[None, :] + radius * radius)
            counts[s : s + chunk] = np.sum(d2 <= radius * radius + tol, axis=1)
        else:
            diff = np.abs(blk[:, None, :] - x[None, :, :])
            dist = diff.max(axis=2) if metric == "linf" else diff.sum(axis=2)
            counts[s : s + chunk] = np.sum(dist <= radius * (1 + 1e-12), axis=1)
    return counts


def kappa_from_samples(
    samples: Any,
    eta: float = 0.0,
    *,
    metric: str = "exact",
    confidence: float = 0.95,
    method: str = "chernoff",
) -> Bound:
    """Upper confidence bound on kappa from N i.i.d. samples of the prior (Hayes et al. 2023, App. J, Prop. 5).

    Let pi-hat be the empirical distribution of the samples and kappa-hat = kappa_{pi-hat}(eta).
    Prop. 5 (proof in App. M.3, multiplicative Chernoff bound applied to the maximiser z* of
    kappa): with probability >= 1 - exp(-N kappa tau^2 / 2), kappa <= kappa-hat / (1 - tau).
    (The extracted statement of Prop. 5 lost the symbol kappa in the exponent; the proof has it.)
    For confidence 1 - beta we invert it without knowing kappa: the failure event is
    kappa-hat < kappa - sqrt(2 kappa log(1/beta) / N), so with probability >= 1 - beta

        kappa <= ((a + sqrt(a^2 + 4 kappa-hat)) / 2)^2,   a = sqrt(2 log(1/beta) / N)

    (``method="chernoff"``). ``method="clopper_pearson"`` uses the exact one-sided binomial
    upper limit for N kappa-hat successes instead (valid for the same reason, never larger).

    The value is an UPPER confidence bound (``direction="upper"``): gamma is non-decreasing in
    kappa, so plugging it into any ReRo bound gives an upper bound on gamma that holds with
    probability >= ``confidence`` over the samples.

    kappa-hat must be >= the empirical mass of the best ball, sup_{z0} pi-hat(B_eta(z0)):

    * ``metric="exact"`` (0/1 error, ``eta`` ignored): the largest multiplicity of a sample value
      (rows compared exactly); this is the exact sup.
    * ``metric="l2" | "linf" | "l1"``: the exact sup over all centres is a hard covering problem,
      so it is bounded by max_i #{j : dist(x_i, x_j) <= 2 eta} / N (every ball of radius eta that
      holds k samples lies within 2 eta of each of them; triangle inequality). The plug-in
      estimate with centres at the samples and radius eta (a lower bound on the sup) is returned
      in ``extras["kappa_hat_plugin"]``.

    Args:
      samples: array (N, ...) of N >= 1 samples of the prior; each sample is flattened to a vector.
        Must hold finite numbers unless ``metric="exact"``.
      eta: reconstruction-error threshold, >= 0 (default 0; checked but unused for "exact").
      metric: "exact" (default), "l2", "linf" or "l1".
      confidence: probability 1 - beta with which the bound holds, in (0, 1) (default 0.95).
      method: "chernoff" (default) or "clopper_pearson".

    Returns:
      A :class:`Bound` with ``value`` the upper confidence bound on kappa (capped at 1),
      ``error`` = value - kappa-hat, ``interval`` (0, value) and ``extras`` kappa_hat,
      kappa_hat_plugin, count (the sample count behind kappa-hat) and log10_kappa.

    Raises:
      TypeError: if ``samples`` is a string or ragged, holds non-numbers for a distance metric, or
        ``metric``/``method`` is not a string.
      ValueError: if ``metric``/``method`` is unknown, ``confidence`` is not in (0, 1), ``eta`` is
        negative or not finite, ``samples`` is empty or 0-d, or it holds nan/inf.
    """
    metric = check_choice("metric", metric, _METRICS)
    method = check_choice("method", method, ("chernoff", "clopper_pearson"))
    conf = check_probability("confidence", confidence, high_open=True)
    if isinstance(samples, (str, bytes)):
        raise TypeError(f"samples must be an array of shape (N, ...), got {type(samples).__name__}")
    try:
        x = np.asarray(samples)
    except Exception as exc:  # noqa: BLE001 - ragged nested sequences
        raise TypeError(f"samples must be an array of shape (N, ...) ({exc})") from None
    if metric != "exact" and x.dtype.kind not in "biuf":
        raise TypeError(f"samples must hold numbers for metric {metric}, got an array of dtype {x.dtype}")
    if x.ndim == 0 or x.shape[0] < 1:
        raise ValueError("samples must be an array with at least one sample (shape (N, ...))")
    n = int(x.shape[0])
    x = x.reshape(n, -1)
    if x.dtype.kind in "fc" and not np.all(np.isfinite(x)):
        raise ValueError("samples must be finite numbers (no nan/inf)")
    if metric == "exact":
        _, counts = np.unique(x, axis=0, return_counts=True)
        k_up = int(counts.max())
        k_plug = k_up
        e = float(check_nonnegative("eta", eta))
    else:
        e = check_nonnegative("eta", eta)
        xf = x.astype(float)
        if not np.all(np.isfinite(xf)):
            raise ValueError("samples must be finite numbers")
        k_up = int(_pairwise_within(xf, 2.0 * e, metric).max())
        k_plug = int(_pairwise_within(xf, e, metric).max())
    beta = 1.0 - conf
    kh = k_up / n
    if method == "chernoff":
        a = math.sqrt(2.0 * math.log(1.0 / beta) / n)
        ub = min(1.0, ((a + math.sqrt(a * a + 4.0 * kh)) / 2.0) ** 2)
    else:
        from scipy.stats import beta as _beta

        ub = 1.0 if k_up >= n else float(_beta.ppf(conf, k_up + 1, n - k_up))
        ub = min(1.0, ub)
    return Bound(
        value=ub,
        error=ub - kh,
        method=f"kappa_from_samples_{method}",
        direction="upper",
        interval=(0.0, ub),
        inputs={"n_samples": n, "eta": e, "metric": metric, "confidence": conf, "method": method},
        extras={
            "kappa_hat": kh,
            "kappa_hat_plugin": k_plug / n,
            "count": k_up,
            "log10_kappa": log10_kappa(math.log(ub)) if ub > 0 else -math.inf,
        },
    )
