"""More metrics of the uninformed adversary's analytic attack: expected PSNR, the law of the sample NCC, NMI.

The attack law. The optimal analytic gradient-inversion attack of "From Mean to Extreme: Formal DP
Bounds on the Success of Real-World Data Reconstruction Attacks" (Sec. 3.3, Eq. 20; its earlier
version "Bounding Reconstruction Attack Success of Adversaries Without Data Priors") returns
X_hat = X + s Z with Z ~ N(0, I_N) and s^2 = sigma^2 ||X||^2 / k (k matched releases averaged,
:func:`rerokit.bounds.uninformed.averaged_variance`). Everything below is the *exact law of that
one (unbiased) attack*, labelled "attack law": it is not a bound on every attacker (a shrunken
estimate has a smaller MSE; see :mod:`rerokit.bounds.uninformed`).

* :func:`expected_psnr` - E[PSNR] = 10 log10(R^2 N / s^2) - (10 / ln 10) (psi(N/2) + ln 2), from
  MSE ~ (s^2 / N) chi^2_N (Thm 2) and E[ln chi^2_N] = psi(N/2) + ln 2 (psi the digamma function);
  R the data range. Decreasing in ||X||, so its value at the smallest norm r is the largest over
  the records.
* :func:`psnr_of_expected_mse` - 10 log10(R^2 / E[MSE]), the expression of the earlier version's
  Prop. 2 ("the expected value of the PSNR is bounded by"). **Deviation:** its proof applies Jensen's
  inequality to the concave logarithm, which gives E[log MSE] <= log E[MSE], i.e.
  E[PSNR] >= 10 log10(R^2 / E[MSE]): the expression is a *lower* bound on the attack's expected
  PSNR, below the exact value by (10 / ln 10) (ln(N/2) - psi(N/2)) dB (5.52 dB at N = 1,
  about 4.34 / N dB for large N), not an upper bound.
* :func:`ncc_distribution` - the law of the *sample* NCC (Pearson correlation over the N
  coordinates) between X and X_hat (the subject of the earlier version's Prop. A.1; the closed
  form here is derived from first principles and checked against simulation in the tests): with
  lambda = sqrt(N Var(x)) / s (Var the population variance of X's coordinates) and nu = N - 2,
  NCC = T / sqrt(T^2 + nu) with T ~ noncentral t(nu, lambda) (project the noise on the centred
  target and its orthogonal complement in the (N-1)-dimensional centred subspace). For N = 2 the
  sample NCC is +-1 with P(+1) = Phi(lambda). It concentrates, as N grows, at the value of Riess et al. 2024,
  Prop. 6 (:func:`rerokit.bounds.uninformed.ncc_value`). ``sf(c)`` = P(NCC >= c) reads the attack's
  NCC as a reconstruction-robustness statement (success: NCC >= c).
* :func:`normalized_mutual_information` - the measured metric NMI(A, B) = (H(A) + H(B)) / H(A, B)
  (Studholme, Hill & Hawkes 1999; the earlier version's Def. C.1) from a joint histogram: 1 for
  independent data, 2 for a one-to-one relation.

Pure numpy/scipy (no torch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

from rerokit._validate import check_int, check_positive, check_real_array
from rerokit.bounds.uninformed import averaged_variance

__all__ = [
    "expected_psnr",
    "psnr_of_expected_mse",
    "psnr_jensen_gap",
    "NccLaw",
    "ncc_distribution",
    "normalized_mutual_information",
]

_TEN_OVER_LN10 = 10.0 / math.log(10.0)


def _psnr_parts(noise_multiplier: float, norm: float, dim: int, data_range: float, releases: int) -> tuple[int, float]:
    """(N, 10 log10(R^2 / s^2)) with s^2 = sigma^2 ||X||^2 / k, checked."""
    n = check_int("dim", dim, minimum=1)
    r = check_positive("data_range", data_range)
    s2 = averaged_variance(noise_multiplier, norm, releases)
    if not (s2 > 0 and math.isfinite(s2)):
        raise ValueError(f"noise_multiplier^2 norm^2 / releases must be a finite number > 0, got {s2!r}")
    return n, _TEN_OVER_LN10 * (2.0 * math.log(r) - math.log(s2))


def psnr_jensen_gap(dim: int) -> float:
    """(10 / ln 10) (ln(N/2) - psi(N/2)) dB: E[PSNR] of the attack minus 10 log10(R^2 / E[MSE]) (>= 0).

    Args:
      dim: N, an integer >= 1.

    Returns:
      The gap in dB (5.52 at N = 1, about 4.34 / N for large N).

    Raises:
      ValueError, TypeError: if ``dim`` is not an integer >= 1.
    """
    n = check_int("dim", dim, minimum=1)
    return _TEN_OVER_LN10 * (math.log(n / 2.0) - float(special.digamma(n / 2.0)))


def expected_psnr(noise_multiplier: float, norm: float, dim: int, data_range: float, releases: int = 1) -> float:
    """E[PSNR] of the optimal analytic attack (attack law): 10 log10(R^2 N / s^2) - (10 / ln 10)(psi(N/2) + ln 2).

    PSNR = 10 log10(R^2 / MSE) with MSE ~ (s^2 / N) chi^2_N, s^2 = sigma^2 ||X||^2 / k ("From Mean to
    Extreme", Thm 2 and Prop. 7). Exact for that attack; decreasing in ``norm``.

    Args:
      noise_multiplier: sigma > 0.
      norm: ||X||_2 > 0 of the target (the smallest non-zero norm r gives the largest value over a dataset).
      dim: N, an integer >= 1.
      data_range: R > 0, the data range in the PSNR (max - min of the data).
      releases: k matched releases averaged, an integer >= 1 (default 1).

    Returns:
      The expected PSNR in dB.

    Raises:
      ValueError: if an argument is out of range or not finite (or s^2 under/overflows).
      TypeError: if an argument has the wrong type.
    """
    n, base = _psnr_parts(noise_multiplier, norm, dim, data_range, releases)
    return base + psnr_jensen_gap(n)


def psnr_of_expected_mse(noise_multiplier: float, norm: float, data_range: float, releases: int = 1) -> float:
    """10 log10(R^2 / E[MSE]) with E[MSE] = sigma^2 ||X||^2 / k: the printed Prop. 2 expression (a LOWER bound).

    See the module docstring: Jensen's inequality makes this a lower bound on the attack's E[PSNR]
    (:func:`expected_psnr` is the exact value), not the upper bound the earlier version states.

    Args:
      noise_multiplier, norm, data_range, releases: as in :func:`expected_psnr`.

    Returns:
      The expression in dB.

    Raises:
      ValueError, TypeError: as :func:`expected_psnr`.
    """
    return _psnr_parts(noise_multiplier, norm, 1, data_range, releases)[1]


@dataclass(frozen=True)
class NccLaw:
    """The law of the sample NCC between X and the attack's X_hat (attack law; see the module docstring).

    Attributes:
      dim: N >= 2.
      noncentrality: lambda = sqrt(N Var(x)) / s (s^2 = sigma^2 ||X||^2 / k).
    """

    dim: int
    noncentrality: float

    @property
    def dof(self) -> int:
        """nu = N - 2, the degrees of freedom of the noncentral t."""
        return self.dim - 2

    def _t_of(self, c: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(c >= 1, np.inf, np.where(c <= -1, -np.inf, c * math.sqrt(self.dof) / np.sqrt(1 - c * c)))

    def cdf(self, c: float | np.ndarray) -> float | np.ndarray:
        """P(NCC <= c) for c in [-1, 1] (numbers or an array)."""
        a = _ncc_values(c)
        if self.dim == 2:
            p_plus = stats.norm.cdf(self.noncentrality)
            out = np.where(a >= 1, 1.0, np.where(a >= -1, 1.0 - p_plus, 0.0))
        else:
            out = stats.nct.cdf(self._t_of(a), self.dof, self.noncentrality)
        return float(out) if np.ndim(c) == 0 else out

    def sf(self, c: float | np.ndarray) -> float | np.ndarray:
        """P(NCC >= c): the attack's success probability when success means an NCC of at least c."""
        a = _ncc_values(c)
        if self.dim == 2:
            p_plus = stats.norm.cdf(self.noncentrality)
            out = np.where(a <= -1, 1.0, np.where(a <= 1, p_plus, 0.0))
        else:
            out = stats.nct.sf(self._t_of(a), self.dof, self.noncentrality)
        return float(out) if np.ndim(c) == 0 else out

    def mean(self) -> float:
        """E[NCC] = E[(lambda + U) / sqrt((lambda + U)^2 + W)], U ~ N(0, 1), W ~ chi^2_{N-2} independent.

        Numerical: Gauss-Hermite nodes in U times Gauss-Legendre nodes in the quantile of W (the
        integrand is bounded by 1 and smooth; accurate to ~1e-8 for every N). Exact for N = 2:
        2 Phi(lambda) - 1.
        """
        if self.dim == 2:
            return float(2.0 * stats.norm.cdf(self.noncentrality) - 1.0)
        u, wu = np.polynomial.hermite_e.hermegauss(96)  # weight exp(-u^2 / 2)
        wu = wu / math.sqrt(2.0 * math.pi)
        p, wp = np.polynomial.legendre.leggauss(200)
        w = stats.chi2.ppf((p + 1.0) / 2.0, self.dof)
        a = (self.noncentrality + u)[:, None]
        return float(wu @ (a / np.sqrt(a * a + w[None, :])) @ (wp / 2.0))

    def sample(self, size: int, seed: int) -> np.ndarray:
        """``size`` draws of the NCC (seeded), for plots and checks."""
        rng = np.random.default_rng(check_int("seed", seed, minimum=0))
        m = check_int("size", size, minimum=1)
        u = rng.standard_normal(m) + self.noncentrality
        if self.dim == 2:
            return np.sign(u)
        w = rng.chisquare(self.dof, m)
        return u / np.sqrt(u * u + w)


def _ncc_values(c: Any) -> np.ndarray:
    a = check_real_array("c", c)
    if np.any(np.isnan(a)):
        raise ValueError("c must be numbers (NCC thresholds), not nan")
    return a


def ncc_distribution(noise_multiplier: float, norm: float, var_x: float, dim: int, releases: int = 1) -> NccLaw:
    """The law of the sample NCC(X, X_hat) of the optimal analytic attack (attack law).

    NCC = T / sqrt(T^2 + N - 2), T ~ noncentral t(N - 2, lambda), lambda = sqrt(N Var(x)) / s,
    s^2 = sigma^2 ||X||^2 / k; see the module docstring (the subject of the earlier version's Prop. A.1).

    Args:
      noise_multiplier: sigma > 0.
      norm: ||X||_2 > 0 of the target.
      var_x: Var(x) > 0, the population variance (1/N) of the target's N coordinates
        (<= ||X||^2 / N).
      dim: N, an integer >= 2 (the sample NCC needs two coordinates).
      releases: k matched releases averaged, an integer >= 1 (default 1).

    Returns:
      An :class:`NccLaw` with ``cdf``, ``sf``, ``mean`` and ``sample``.

    Raises:
      ValueError: if an argument is out of range or not finite, or ``var_x`` exceeds ||X||^2 / N.
      TypeError: if an argument has the wrong type.
    """
    n = check_int("dim", dim, minimum=2)
    v = check_positive("var_x", var_x)
    nx = check_positive("norm", norm)
    if v > nx * nx / n * (1 + 1e-12):
        raise ValueError(f"var_x must be <= norm^2 / dim = {nx * nx / n!r} (a population variance), got {var_x!r}")
    s2 = averaged_variance(noise_multiplier, nx, releases)
    lam = math.sqrt(n * v / s2)
    if not math.isfinite(lam):
        raise ValueError(f"dim * var_x / (noise_multiplier^2 norm^2 / releases) must be finite, got {lam!r}")
    return NccLaw(n, lam)


def normalized_mutual_information(a: Any, b: Any, *, bins: int = 100) -> float:
    """NMI(A, B) = (H(A) + H(B)) / H(A, B) from the joint histogram of two equally shaped arrays (measured metric).

    Studholme, Hill & Hawkes 1999 (as the earlier version's Def. C.1 and scikit-image's
    ``normalized_mutual_information``): entries are paired position by position, binned into
    ``bins`` x ``bins`` equal-width cells over each array's range, and the entropies of the
    empirical marginals and joint are taken (any log base: the ratio does not depend on it).
    1 when the histograms are independent, 2 when one determines the other bin for bin.

    Args:
      a: the image (any shape, >= 2 entries, finite numbers).
      b: its reconstruction, the same shape.
      bins: bins per axis, an integer >= 2 (default 100).

    Returns:
      NMI in [1, 2]; 2.0 when both arrays are constant (one joint cell: H(A, B) = 0, perfectly
      predictable), and 1.0 when exactly one is constant (it carries no information about the other).

    Raises:
      ValueError: if the shapes differ, there are fewer than 2 entries, or a value is not finite.
      TypeError: if an input is not numeric or ``bins`` not an integer.
    """
    x = check_real_array("a", a).ravel()
    y = check_real_array("b", b).ravel()
    k = check_int("bins", bins, minimum=2)
    if np.shape(a) != np.shape(b):
        raise ValueError(f"a and b must have the same shape, got {np.shape(a)} and {np.shape(b)}")
    if x.size < 2:
        raise ValueError("a and b must hold at least 2 entries")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("a and b must be finite numbers")
    joint, _, _ = np.histogram2d(x, y, bins=k)
    p = joint / joint.sum()

    def entropy(q: np.ndarray) -> float:
        q = q[q > 0]
        return float(-np.sum(q * np.log(q)))

    h_ab = entropy(p.ravel())
    h_a, h_b = entropy(p.sum(axis=1)), entropy(p.sum(axis=0))
    if h_ab == 0.0:
        return 2.0
    return (h_a + h_b) / h_ab
