"""The DP-SGD trade-off curve as one certified object: membership, attribute and reconstruction risk.

For DP-SGD with noise multiplier sigma, Poisson sampling rate q and T steps, let
nu = N(0, sigma^2)^T (the run *without* the target) and mu = prod_t [(1-q) N(0, sigma^2) +
q N(1, sigma^2)] (the run *with* it), the pair of Hayes et al. 2023, Thm 2. Its trade-off curve
(Dong, Roth & Su 2022, Def. 2.1) is

    beta(alpha) = inf { 1 - mu(E) : nu(E) <= alpha },    TPR(alpha) = 1 - beta(alpha),

the smallest type-II error of any membership test with false-positive rate alpha (H0: not a
member, H1: member). Kulynych, Gomez, Kaissis, Hayes, Balle et al. (NeurIPS 2025, "Unifying
re-identification, attribute inference, and data reconstruction risks", Sec. 3-4) read every
risk off this one curve:

* membership inference: TPR at FPR alpha <= 1 - beta(alpha); advantage sup(TPR - FPR) =
  sup_alpha (1 - alpha - beta(alpha)) = TV(mu, nu) = delta(0), where delta(eps) =
  sup_E mu(E) - e^eps nu(E) is the hockey-stick divergence (privacy profile);
* Bayes-optimal membership accuracy for a prior pi of membership: (1 - pi) +
  sup_alpha [pi (1 - beta(alpha)) - (1 - pi) alpha] = (1 - pi) + pi delta(log((1 - pi)/pi))
  (the profile at a possibly negative eps; Kulynych et al. 2025, Prop. D.1);
* attribute inference with k equally likely values: success <= 1 - beta(1/k);
* reconstruction with baseline kappa: success <= 1 - beta(kappa) = gamma of Hayes et al.
  (:func:`rerokit.bounds.dpsgd.rero_dpsgd`, same computation, same numbers).

Certification (``method="exact"``). :func:`rerokit.bounds.dpsgd.dpsgd_pld` is built once; every
query is a batch of O(n + m log n) work on its composed arrays.

* Upper end of the power (TPR; lower end of beta): the dominating discrete pair (connect-the-dots
  split of every loss bucket, pessimistic tails, window and round-off allowances) has a
  hockey-stick curve above the true one at *every* eps; by the Neyman-Pearson / conjugate
  duality TPR(alpha) = inf_eps (e^eps alpha + delta(eps)), so its power is an upper bound at
  every alpha, not only at grid points (:func:`rerokit.bounds.dpsgd.np_upper_many`). Where the
  PLD's infinity mass / round-off floor dominates (tiny alpha) the RDP bound of Balle et al. 2022
  Thm 2 (mu(E) <= (nu(E) e^{eps_a})^{(a-1)/a} for every E) replaces it when smaller, exactly as in
  ``rero_dpsgd``; alpha = 0 gives TPR = 0 exactly (mu << nu).
* Lower end of the power: actual threshold tests on the bucket statistic S (a function of the
  output), randomised between adjacent thresholds, with level bounded above and power bounded
  below by the composed bucket masses minus their window/round-off allowances
  (:func:`rerokit.bounds.dpsgd.np_lower_many`); at levels <= 1e-6 also the max test "some step's
  output is large" (:mod:`rerokit.bounds.pld.maxtest`, closed-form level and power), through
  :meth:`rerokit.bounds.pld.SchedulePLD.power_lower`, in both adjacencies.
* ``error`` = upper - lower is the numerical error; the truth lies in the bracket.
* Small noise (one example per step): the closed forms of :mod:`rerokit.bounds.dpsgd_tinysigma` - the
  max test's (level, power) points below, the never-sampled bound 1 - (1 - alpha) prod (1 - q_i)^T_i
  above, and their conjugates for the profile delta(eps) (advantage, Bayes accuracy), for both
  adjacencies - answer wherever they are within 1e-6, as in ``rero_dpsgd`` (the same floats: one value
  for gamma); :func:`dpsgd_tradeoff` then defers the PLD to the first query that needs it. Where a PLD
  direction cannot be discretised (``PLDTooWide``, e.g. the statistic's window at sigma = 1e-4), the
  query gets the envelope below as its upper end and these closed forms (or alpha) as its lower end -
  certified, if wider. The PLD's upper end of the power is capped by the same never-sampled supremum
  as in ``rero_dpsgd`` (:func:`rerokit.bounds.dpsgd_tinysigma.supremum_capped`).

For sigma outside :data:`rerokit.bounds.dpsgd.SIGMA_EXACT_RANGE` (and for schedules too long
for the exact PLD: more than ``MAX_EXACT_STEPS`` steps, or a grid beyond its size limits) the
closed-form envelope is used (``method="envelope"``):
TPR(alpha) <= min(Phi(Phi^-1(alpha) + mu_full), 1 - (1 - alpha) P) with
mu_full = sqrt(sum T_i / sigma_i^2) and P = prod (1 - q_i)^T_i, valid at every alpha; the
lower end is alpha. With q = 1 everywhere, ``method="closed-form"`` gives the exact Gaussian-DP
curve TPR(alpha) = Phi(Phi^-1(alpha) + mu), beta(alpha) = Phi(Phi^-1(1 - alpha) - mu)
(Dong et al. 2022, Eq. 6), rounded outwards.

Two adjacencies.

``adjacency="remove"`` (default) is the pair above (Hayes et al.; H1 = member). Its curve f is
not symmetric for q < 1: f^-1 (the inverse function) is the curve of the reversed pair (nu
against mu), the "add" direction.

``adjacency="add_remove"`` is the symmetrised f-DP curve for add-or-remove adjacency (Dong, Roth
& Su 2022, Def. F.1 / Prop. F.2): the lower convex envelope of min(f, f^-1), i.e. in TPR terms
the concave envelope of max(TPR_R, TPR_A). Its privacy profile is max(delta_R, delta_A) at every
eps (a line of slope -e^eps lies below both curves iff its intercept is below both), so

    TPR_sym(alpha) = inf_eps [ e^eps alpha + max(delta_R(eps), delta_A(eps)) ],

computed from the dominating REMOVE and ADD discrete PLDs (both composed by ``dpsgd_pld``) as
a minimum over all vertices of the piecewise-linear (in e^eps) max: grid points and crossings.
Why the bracket is certified: (i) a curve and its profile determine each other by this conjugacy
and each is monotone in the other; (ii) if beta_lo <= f <= beta_hi pointwise then
beta_lo^-1 <= f^-1 <= beta_hi^-1, and min(., .) and the lower convex envelope are monotone, so
Symm(beta_lo) <= Symm(f) <= Symm(beta_hi); (iii) upper end of the power: the dominating PLDs'
profiles are >= delta_R, delta_A at every eps, so the computed infimum is >= TPR_sym (and
restricting the infimum to some eps only raises it); (iv) lower end: TPR_sym is concave and above
TPR_R and TPR_A, so it lies above every certified threshold-test point of either direction (the
A-direction tests are the complements of the R-direction ones) and above every chord between an
R-point and an A-point; we take the chord at the touching levels of the optimal supporting line.
For sigma outside the exact range the add_remove envelope is min(Phi(Phi^-1(alpha) + mu_full),
1 - P + alpha), concave and above both directions' never-sampled bounds. With q = 1 everywhere
the pair is symmetric and add_remove is the remove curve. Limitation: for q < 1 the add_remove
upper end has no RDP refinement where the PLD's floor dominates (``floored``; alpha below
~1e-10 in typical settings), so it stays at that floor (~1e-12) there - valid, but loose.

riskcal 1.5.1 (``get_beta_for_dpsgd``) reports this symmetrised curve. Its TPR therefore
exceeds the certified upper end of the *remove* curve at large alpha (sigma = 1, q = 0.01,
T = 1000, alpha = 0.5: riskcal 0.6586 vs remove bracket [0.65687, 0.65688]) - symmetrisation,
not an error; for alpha <= alpha_bar (where -1 is in the subdifferential of f) both curves
coincide. riskcal is not certified, and for q < 1 we measured it *below* the certified lower end
of the symmetrised curve at every alpha tested (e.g. q = 0.004, sigma = 0.8, T = 5000,
alpha = 0.001: riskcal 0.00553, certified [0.0060419, 0.0060425]; at alpha = 1e-6 it is even
below alpha, e.g. 8e-14 for sigma = 1, q = 0.01, T = 1000), while dp-accounting's own pessimistic
PLD read directly by Neyman-Pearson lies inside our remove bracket: the deficit is in riskcal's
reading of the PLD, not in the PLD. At q = 1 riskcal agrees with our bracket.

Pure numpy; scipy only inside the closed-form/envelope paths. Never imports torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

import numpy as np
from rerokit._validate import check_choice, check_int, check_probability, check_real
from rerokit.bounds import dpsgd as dp
from rerokit.bounds.pld import Bracket, SchedulePLD
from rerokit.bounds.dpsgd_tinysigma import (
    closed_form_power,
    closed_form_profile,
    closed_form_sym_power,
    log_sym_envelope,
    supremum_capped,
)
from rerokit.bounds.dpsgd_tinysigma_epsilon import closed_form_epsilon
from rerokit.bounds.priors import resolve_baseline
from rerokit.bounds.types import Bound

__all__ = [
    "TradeoffCurve",
    "dpsgd_tradeoff",
    "Bracket",
    "CurvePoints",
    "tradeoff_grid",
    "ADJACENCIES",
]

ADJACENCIES = ("remove", "add_remove")
_METHODS = ("exact", "closed-form")
_EPS = float(np.finfo(float).eps)
MEMBERSHIP_FPRS = (1e-3, 1e-2, 1e-1)


# --------------------------------------------------------------------------- results


class CurvePoints(NamedTuple):
    """Points of a trade-off curve for plotting: alpha (FPR) and the certified beta bracket."""

    alpha: np.ndarray
    beta_lower: np.ndarray
    beta_upper: np.ndarray


def tradeoff_grid(n_points: int = 100, alpha_min: float = 1e-6) -> np.ndarray:
    """alpha grid for plotting: n//2 points log-spaced on [alpha_min, 0.1), the rest linear on [0.1, 1].

    Args:
      n_points: number of points, an integer in [4, 1e7] (default 100).
      alpha_min: smallest alpha, in (0, 0.1) (default 1e-6).

    Returns:
      Increasing float array of ``n_points`` values in (0, 1].

    Raises:
      ValueError: if ``n_points`` or ``alpha_min`` is out of range.
      TypeError: if ``n_points`` is not an integer or ``alpha_min`` not a number.
    """
    n = check_int("n_points", n_points, minimum=4, maximum=10_000_000)
    a = check_probability("alpha_min", alpha_min)
    if not a < 0.1:
        raise ValueError(f"alpha_min must be a number in (0, 0.1), got {alpha_min!r}")
    n_log = n // 2
    log_part = np.logspace(math.log10(a), -1.0, n_log, endpoint=False)
    return np.concatenate((log_part, np.linspace(0.1, 1.0, n - n_log)))


# --------------------------------------------------------------------------- validation


def _alphas(name: str, value: Any) -> tuple[np.ndarray, bool]:
    """(flat float array in [0, 1], is_scalar) from a number or an array-like of numbers."""
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return np.array([check_probability(name, value, low_open=False)]), True
    try:
        a = np.asarray(value)
    except Exception as exc:  # ragged nested sequences
        raise TypeError(f"{name} must be a number or an array of numbers in [0, 1]") from exc
    if a.ndim == 0:
        return np.array([check_probability(name, a.item(), low_open=False)]), True
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a number or an array of numbers in [0, 1], got dtype {a.dtype}")
    a = a.astype(float).ravel()
    bad = np.nonzero(~((a >= 0.0) & (a <= 1.0)))[0]
    if bad.size:
        raise ValueError(f"{name} must contain numbers in [0, 1], got {a[bad[0]]!r} at index {int(bad[0])}")
    return a, False


def _log_alphas(name: str, value: Any) -> tuple[np.ndarray, bool]:
    """(flat array of finite logs <= 0, is_scalar)."""
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        x = check_real(name, value)
        if x > 0:
            raise ValueError(f"{name} must be a finite number <= 0, got {value!r}")
        return np.array([x]), True
    a = np.asarray(value)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a number or an array of numbers <= 0, got dtype {a.dtype}")
    a = a.astype(float).ravel()
    bad = np.nonzero(~(np.isfinite(a) & (a <= 0.0)))[0]
    if bad.size:
        raise ValueError(f"{name} must contain finite numbers <= 0, got {a[bad[0]]!r} at index {int(bad[0])}")
    return a, a.ndim == 0


# --------------------------------------------------------------------------- PLD helpers


def _gdp_profile(mu: float, eps: float) -> tuple[float, float]:
    """Bracket of the mu-GDP profile delta(eps) at any real eps: rerokit.bounds.gaussian's exact
    delta (Balle & Wang 2018, Thm 8; rounded up) for eps >= 0, and for eps = -t < 0 the identity
    delta(-t) = 1 - e^{-t} (1 - delta(t)) of a symmetric pair (sup_E P(E) - e^{-t} Q(E) over
    complements). The bracket of delta(t) is :func:`~rerokit.bounds.gaussian.gaussian_delta_bracket`'s."""
    from rerokit.bounds.gaussian import gaussian_delta_bracket

    if math.isinf(mu):
        return 1.0, 1.0
    t = abs(eps)
    lo, hi = gaussian_delta_bracket(t, mu) if mu > 0 else (0.0, 0.0)
    lo = max(0.0, min(lo, hi - 128.0 * _EPS))  # never narrower than before
    if eps < 0:
        w = math.exp(-t)
        hi, lo = min(1.0, 1.0 - w * (1.0 - hi) + 4.0 * _EPS), max(0.0, 1.0 - w * (1.0 - lo) - 4.0 * _EPS)
    return lo, hi


def _log_never(segments: Sequence[tuple[float, float, int]], group_size: int = 1) -> float:
    """log P, P = prod (1 - q_i)^{k T_i}: the probability that no example of the target group is ever sampled."""
    return sum(group_size * T * math.log1p(-q) if q < 1.0 else -math.inf for _, q, T in segments)


def _never_profile(segments: Sequence[tuple[float, float, int]], eps: float, adjacency: str,
                   group_size: int = 1) -> float:
    """Upper bound on delta(eps) from mu = P nu + (1 - P) (other), P = never-sampled probability:
    remove sup mu(E) - e^eps nu(E) <= (1 - P) + (P - e^eps)_+; add sup nu(E) - e^eps mu(E) <=
    (1 - e^eps P)_+; add_remove: the larger of the two."""
    P = math.exp(_log_never(segments, group_size))
    s = math.exp(eps) if eps < 700 else math.inf
    rem = (1.0 - P) + max(0.0, P - s)
    if adjacency == "remove":
        return rem
    return max(rem, max(0.0, 1.0 - s * P) if P > 0 else 1.0)


def _ld(x: float) -> float:
    """One-ulp-down rounding helper for lower ends that are exact up to float rounding."""
    return float(np.nextafter(x, -np.inf)) if x > 0 else 0.0


# --------------------------------------------------------------------------- the curve


@dataclass(frozen=True)
class _Deferred:
    """A PLD build postponed to first use (:meth:`TradeoffCurve._built`)."""

    segments: tuple[tuple[float, float, int], ...]
    value_discretization_interval: float | None

    def __call__(self) -> SchedulePLD:
        return dp.dpsgd_pld(self.segments, self.value_discretization_interval, lower=True, add_direction=True,
                            eager=False)


@dataclass(frozen=True)
class TradeoffCurve:
    """The certified trade-off curve of one DP-SGD schedule; build it with :func:`dpsgd_tradeoff`.

    Attributes:
      segments: the schedule, (sigma, q, T) triples.
      adjacency: "remove" (Hayes et al. pair; default) or "add_remove" (symmetrised curve).
      method: "exact" (certified PLD bracket; at q = 1 the exact Gaussian-DP closed form, without a
        PLD), "closed-form" (q = 1, Gaussian DP) or
        "envelope" (automatic where the exact PLD cannot be used: sigma outside its range, more
        than ``MAX_EXACT_STEPS`` steps, or a PLD beyond its size limits).
      value_discretization_interval: the PLD grid step h ("exact" only, else None).
      group_size: k, the number of examples that move together (the unit of privacy; default 1).
    """

    segments: tuple[tuple[float, float, int], ...]
    adjacency: str = "remove"
    method: str = "exact"
    value_discretization_interval: float | None = None
    _pld: Any = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)
    group_size: int = 1

    # ----------------------------------------------------------------- construction

    @classmethod
    def from_pld(cls, segments: Sequence[tuple[float, float, int]], pld: SchedulePLD | None, adjacency: str = "remove",
                 *, group_size: int | None = None) -> TradeoffCurve:
        """Wrap an already composed :class:`~rerokit.bounds.pld.SchedulePLD` of ``segments`` (no second PLD build).

        Args:
          segments: the validated (sigma, q, T) segments the PLD was built from.
          pld: the composed PLD, built with ``lower=True`` (the threshold-test statistic) and, for
            ``adjacency="add_remove"``, ``add_direction=True``; None gives the envelope curve.
          adjacency: "remove" (default) or "add_remove".
          group_size: k of the schedule; None (default) takes the PLD's (1 for ``pld=None``).

        Returns:
          The :class:`TradeoffCurve` (method "exact", or "envelope" for ``pld=None``).

        Raises:
          ValueError: if ``adjacency`` is unknown, or the PLD lacks the statistic / the ADD direction
            that the adjacency needs.
          TypeError: if ``adjacency`` is not a string.
        """
        adjacency = check_choice("adjacency", adjacency, ADJACENCIES)
        segs = tuple(tuple(s) for s in segments)
        k = group_size if group_size is not None else (pld.group_size if pld is not None else 1)
        if pld is None:
            return cls(segs, adjacency, "envelope", None, None, group_size=k)
        if not pld.lower:
            raise ValueError("the PLD must be built with lower=True (threshold-test statistic)")
        if adjacency == "add_remove" and not pld.add_direction:
            raise ValueError("adjacency='add_remove' needs the PLD built with add_direction=True")
        return cls(segs, adjacency, "exact", pld.h, pld, group_size=k)

    @property
    def mu_gdp(self) -> float:
        """k sqrt(sum T_i / sigma_i^2): the Gaussian-DP parameter of the same schedule at q = 1."""
        inv = sum(T / (s * s) if s > 1e-150 else math.inf for s, _, T in self.segments)
        return self.group_size * math.sqrt(inv) if math.isfinite(inv) else math.inf

    @property
    def _closed_form(self) -> bool:
        """The exact Gaussian-DP curve answers: method "closed-form", or "exact" at q = 1 (no PLD)."""
        return self.method == "closed-form" or (self.method == "exact" and self._pld is None)

    def epsilon(self, delta: float) -> float:
        """Certified upper bound on epsilon at ``delta`` under add-or-remove adjacency.

        From both directions' dominating PLDs (method "exact"; at small noise the closed forms of
        :func:`rerokit.bounds.dpsgd_tinysigma_epsilon.closed_form_epsilon` where they are within 1e-6, as
        :func:`rerokit.bounds.dpsgd.epsilon_dpsgd`), else the exact epsilon of the
        same schedule at q = 1 (Gaussian DP with :attr:`mu_gdp`; subsampling never increases it).

        Args:
          delta: in (0, 1).

        Returns:
          epsilon >= 0 (inf where even the PLD's error terms exceed delta, or mu overflows).

        Raises:
          ValueError: if ``delta`` is not in (0, 1).
        """
        d = check_probability("delta", delta, high_open=True)
        closed = closed_form_epsilon(self.segments, d) if self.group_size == 1 and self.method == "exact" else None
        if closed is not None:  # small noise: the closed forms, as epsilon_dpsgd (one value)
            return closed
        if self._pld is not None and (isinstance(self._pld, _Deferred) or self._pld.add_direction):
            try:
                return self._built().epsilon(d)
            except dp.PLDTooWide:  # (the Gaussian-DP epsilon below is certified too)
                self._cache["too_wide"] = True
        from rerokit.bounds.gaussian import gaussian_epsilon

        mu = self.mu_gdp
        return math.inf if not math.isfinite(mu) or mu > 1e150 else gaussian_epsilon(d, mu)

    # ----------------------------------------------------------------- power (TPR)

    def _power(self, lks: np.ndarray, alpha: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lower, upper, floored) of the power at levels ``alpha`` = exp(lks) (given exactly when
        known: the trivial lower end alpha must not be rounded up), all lks finite and <= 0."""
        if lks.size == 0:
            e = np.empty(0)
            return e, e, np.zeros(0, dtype=bool)
        no = np.zeros(lks.shape, dtype=bool)
        alpha = np.exp(lks) if alpha is None else alpha
        if self._closed_form:
            from rerokit.bounds.conversions import log_gdp_power

            mu = self.mu_gdp
            up = np.array([dp.round_up_exp(log_gdp_power(mu, float(x))) for x in lks])
            lo = np.array([_ld(math.exp(log_gdp_power(mu, float(x), upward=False))) for x in lks])
            return np.maximum(lo, np.minimum(alpha, up)), up, no
        if self.method == "envelope":
            lo, up = self._wide_power(lks, alpha, None)
            return lo, up, no
        # small noise: the closed forms (rerokit.bounds.dpsgd_tinysigma) answer where narrow, as in rero_dpsgd;
        # they are certified everywhere, so they also answer (wider) where the PLD cannot be discretised
        lo_c = up_c = None
        rest = np.ones(lks.shape, dtype=bool)
        if self.group_size == 1:
            cf = closed_form_power if self.adjacency == "remove" else closed_form_sym_power
            lo_c, up_c, narrow = cf(self.segments, lks)
            rest = ~narrow
        # (fresh arrays: lo and up must not alias each other or alpha)
        lo, up = (np.array(lo_c), np.array(up_c)) if lo_c is not None else (np.array(alpha), np.array(alpha))
        fl = no.copy()
        if not rest.any():
            return lo, up, fl
        try:
            if self.adjacency == "remove":
                r = dp.exact_power_many(self._built(), self.segments, lks[rest])
                _, value, lower, _ = supremum_capped(self.segments, lks[rest], r.log_value, r.value, r.lower,
                                                    group_size=self.group_size)
                lo[rest], up[rest], fl[rest] = lower, value, r.floored
            else:
                lo[rest], up[rest], fl[rest] = self._sym_power(lks[rest], alpha[rest])
        except dp.PLDTooWide:  # (a grid beyond its size limits, found when a direction is first composed)
            self._cache["too_wide"] = True
            lo[rest], up[rest] = self._wide_power(lks[rest], alpha[rest], lo_c[rest] if lo_c is not None else None)
            fl[rest] = False
        return lo, up, fl

    def _built(self) -> SchedulePLD:
        """The composed PLD; where :func:`dpsgd_tradeoff` deferred it (small noise, where the closed forms
        answer most queries) it is built on first use, once; PLDTooWide (remembered) if it cannot be."""
        p = self._pld
        if not isinstance(p, _Deferred):
            if self._too_wide:
                raise dp.PLDTooWide("a direction of this schedule's PLD is too wide to discretise")
            return p
        if "pld" not in self._cache:
            if self._too_wide:
                raise dp.PLDTooWide("this schedule's PLD is too wide to discretise")
            try:
                self._cache["pld"] = p()
            except dp.PLDTooWide:
                self._cache["too_wide"] = True
                raise
        return self._cache["pld"]

    @property
    def _too_wide(self) -> bool:
        """Whether a PLD direction was found too wide to discretise (then every query uses closed forms)."""
        return bool(self._cache.get("too_wide", False))

    def _wide_power(self, lks: np.ndarray, alpha: np.ndarray, max_test: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Certified power bracket where the PLD cannot be discretised: the envelope of the "envelope"
        method above, the closed forms' lower end (certified tests, :mod:`rerokit.bounds.dpsgd_tinysigma`)
        or alpha below."""
        env = dp.envelope_log_gamma if self.adjacency == "remove" else log_sym_envelope
        up = np.array([dp.round_up_exp(env(self.segments, float(x), self.group_size)) for x in lks])
        lo = np.minimum(alpha, up) if max_test is None else np.minimum(np.maximum(alpha, max_test), up)
        return lo, up

    def _sym_tables(self) -> tuple:
        """Vertices (eps, max profile) of max(delta_R, delta_A) and the slopes between them (cached)."""
        if "sym" in self._cache:
            return self._cache["sym"]
        pld = self._built()
        cR, cA = pld.upper, pld.add
        lo_lab = min(cR.offset, cA.offset) - 1
        hi_lab = max(cR.offset + cR.pmf.size, cA.offset + cA.pmf.size)
        grid = np.arange(lo_lab, hi_lab + 1) * pld.h
        mr, ma = cR.hockey_stick(grid), cA.hockey_stick(grid)
        # crossings of the two profiles inside a grid interval (both linear in s = e^eps there)
        d = mr - ma
        j = np.nonzero(d[:-1] * d[1:] < 0)[0]
        t = d[j] / (d[j] - d[j + 1])
        ex = grid[j] + np.log1p(np.expm1(pld.h) * t)
        # the profiles at the computed crossings themselves (each a proven upper bound at that eps;
        # the chords between grid points are the same up to their rounding)
        mx = np.maximum(cR.hockey_stick(ex), cA.hockey_stick(ex)) if j.size else np.zeros(0)
        eps = np.concatenate((grid, ex))
        mrc = np.concatenate((mr, mx))
        mac = np.concatenate((ma, mx))
        order = np.argsort(eps, kind="stable")
        eps, mrc, mac = eps[order], mrc[order], mac[order]
        m = np.maximum(mrc, mac)
        # slope d max(delta_R, delta_A) / ds on (eps_c, eps_{c+1}) = -(null mass above) of the
        # active profile: exact, no cancellation; non-decreasing (the max is convex in s)
        mid = 0.5 * (eps[:-1] + eps[1:])
        right_r = np.where(mrc[:-1] == mac[:-1], mrc[1:] >= mac[1:], mrc[:-1] > mac[:-1])
        slope = -np.exp(np.where(right_r, cR.log_null_mass_above(mid), cA.log_null_mass_above(mid)))
        slope = np.minimum.accumulate(slope[::-1])[::-1]
        self._cache["sym"] = (eps, m, slope, cR, cA)
        return self._cache["sym"]

    def _sym_power(self, lks: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Power bracket of the symmetrised (add-or-remove) curve; see the module docstring."""
        pld = self._built()
        eps, m, slope, cR, cA = self._sym_tables()
        c0 = np.searchsorted(slope, -alpha, side="left")
        best = np.full(lks.shape, np.inf)
        arg = np.zeros(lks.shape, dtype=int)
        for off in (-1, 0, 1):  # any vertex gives a valid bound; the neighbours absorb rounding
            c = np.clip(c0 + off, 0, eps.size - 1)
            z = eps[c] + lks  # rounded: u |z|; numpy's exp within 4 ulps (8u); the product and sum stepped up
            with np.errstate(over="ignore"):
                e = np.exp(np.minimum(z, 700.0)) * (1.0 + 8.0 * _EPS + _EPS * np.abs(z))
            v = np.nextafter(np.nextafter(e, np.inf) + m[c], np.inf)
            better = v < best
            best = np.where(better, v, best)
            arg = np.where(better, c, arg)
        upper = np.where(best < 1.0, best, 1.0)  # (at z > 700 the sum is >= e^700 > 1 anyway)
        # lower end: direct threshold tests of both directions, and chords between the two
        # directions at the touching levels of the optimal supporting line (slope e^eps*)
        tests = pld.tests
        rev = tests.reversed()  # A direction: alternative nu, null mu, tests S <= s

        def r_lo(a: np.ndarray) -> np.ndarray:
            # every certified R-direction test: the statistic's and, at small levels, the max test
            a = np.minimum(a, 1.0)
            pos = a > 0
            out = np.zeros(a.shape)
            if pos.any():
                out[pos] = pld.power_lower(np.log(a[pos]))
            return out

        def a_lo(a: np.ndarray) -> np.ndarray:
            return rev.power_lower_at(a)

        lower = np.maximum(r_lo(alpha), a_lo(alpha))
        e_star = eps[arg]
        a1s = [np.exp(cR.log_null_mass_above(e_star, s)) for s in (True, False)]
        a2s = [np.exp(cA.log_null_mass_above(e_star, s)) for s in (True, False)]
        y1s = [r_lo(a) for a in a1s]
        y2s = [a_lo(a) for a in a2s]
        for a1, y1 in zip(a1s, y1s):
            for a2, y2 in zip(a2s, y2s):
                ok = (np.minimum(a1, a2) <= alpha) & (alpha <= np.maximum(a1, a2)) & (a1 != a2)
                with np.errstate(divide="ignore", invalid="ignore"):
                    chord = y1 + (y2 - y1) * (alpha - a1) / (a2 - a1)
                lower = np.where(ok, np.maximum(lower, chord - 4.0 * _EPS), lower)
        lower = np.minimum(np.maximum(lower, alpha), upper)
        floor = max(pld.upper.error, pld.add.error)
        return lower, upper, floor > 0.1 * upper

    def _query(self, fpr: Any, log_fpr: Any, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, Any]:
        if (fpr is None) == (log_fpr is None):
            raise ValueError(f"give exactly one of {name} (in [0, 1]) or log_{name} (<= 0)")
        if fpr is not None:
            a, scalar = _alphas(name, fpr)
            shape = np.shape(fpr)
            lo = np.zeros(a.shape)
            up = np.zeros(a.shape)
            fl = np.zeros(a.shape, dtype=bool)
            pos = a > 0  # alpha = 0: power 0 exactly (mu << nu; the RDP bound is 0 there)
            with np.errstate(divide="ignore"):
                lks = np.log(a[pos])
            lo[pos], up[pos], fl[pos] = self._power(lks, a[pos])
            return lo, up, fl, scalar, shape
        lks, scalar = _log_alphas("log_" + name, log_fpr)
        lo, up, fl = self._power(lks)
        return lo, up, fl, scalar, np.shape(log_fpr)

    def tpr_at_fpr(self, fpr: Any = None, *, log_fpr: Any = None) -> Bracket:
        """Certified bracket of the largest TPR (power) of any membership test at FPR ``fpr``.

        Args:
          fpr: false-positive rate(s) alpha in [0, 1]: a number or an array (vectorised: one
            pass over the composed PLD for the whole batch).
          log_fpr: natural log(s) of alpha (finite, <= 0), for levels that underflow; give exactly one
            of the two.

        Returns:
          :class:`Bracket` with floats for a scalar query, arrays of the input's shape otherwise.
          ``upper`` is never below the true 1 - beta(alpha), ``lower`` never above it.

        Raises:
          ValueError: if both or neither of ``fpr``/``log_fpr`` are given, or a value is out of range.
          TypeError: if a value is not a number / an array of numbers.
        """
        lo, up, fl, scalar, shape = self._query(fpr, log_fpr, "fpr")
        if scalar:
            return Bracket(float(lo[0]), float(up[0]), bool(fl[0]))
        return Bracket(lo.reshape(shape), up.reshape(shape), fl.reshape(shape))

    def beta(self, alpha: Any = None, *, log_alpha: Any = None) -> Bracket:
        """Certified bracket of the trade-off curve beta(alpha) = 1 - TPR(alpha) (rounded outwards).

        Args:
          alpha: type-I error(s) in [0, 1] (number or array).
          log_alpha: natural log(s) of alpha (finite, <= 0), for levels that underflow; give exactly
            one of ``alpha`` / ``log_alpha``.

        Returns:
          :class:`Bracket` of beta: lower = 1 - TPR upper, upper = 1 - TPR lower (floats for a scalar
          query, arrays of the input's shape otherwise).

        Raises:
          ValueError: if both or neither are given, or a value is out of range.
          TypeError: if a value is not a number / an array of numbers.
        """
        lo, up, fl, scalar, shape = self._query(alpha, log_alpha, "alpha")
        b_lo, b_hi = _one_minus(up, down=True), _one_minus(lo, down=False)
        if scalar:
            return Bracket(float(b_lo[0]), float(b_hi[0]), bool(fl[0]))
        return Bracket(b_lo.reshape(shape), b_hi.reshape(shape), fl.reshape(shape))

    def curve(self, n_points: int = 100, alpha_min: float = 1e-6) -> CurvePoints:
        """(alpha, beta_lower, beta_upper) on :func:`tradeoff_grid` (log part + linear part), for plots.

        Args:
          n_points: number of grid points, an integer >= 4 (default 100).
          alpha_min: smallest alpha of the log-spaced part, in (0, 0.1) (default 1e-6).

        Returns:
          :class:`CurvePoints` of three arrays of length ``n_points``.

        Raises:
          ValueError: as :func:`tradeoff_grid`.
        """
        a = tradeoff_grid(n_points, alpha_min)
        b = self.beta(a)
        return CurvePoints(a, b.lower, b.upper)

    # ----------------------------------------------------------------- derived risks

    def _inputs(self, **kw: Any) -> dict[str, Any]:
        d: dict[str, Any] = {"adjacency": self.adjacency}
        if len(self.segments) == 1:
            s, q, T = self.segments[0]
            d.update(noise_multiplier=s, sample_rate=q, steps=T)
        else:
            d["segments"] = [list(x) for x in self.segments]
        d.update(kw)
        return d

    def _bound(self, lo: float, hi: float, **kw: Any) -> Bound:
        lo = min(lo, hi)
        return Bound(hi, max(0.0, hi - lo), self.method, "upper", (lo, hi), self._inputs(**kw), {})

    def reconstruction_success(
        self, kappa: float | None = None, *, log_kappa: float | None = None, prior: Any = None
    ) -> Bound:
        """Reconstruction success bound gamma = 1 - beta(kappa) at baseline kappa (Hayes et al. 2023, Thm 2).

        For ``adjacency="remove"`` and ``method="exact"`` the same computation and numbers as
        :func:`rerokit.bounds.dpsgd.rero_dpsgd` (value and interval).

        Args:
          kappa: baseline success in (0, 1]. Give exactly one of ``kappa`` / ``log_kappa`` / ``prior``.
          log_kappa: natural log of kappa (<= 0), for tiny baselines.
          prior: an int n (uniform over n candidates) or a rerokit prior.

        Returns:
          :class:`Bound` (value = certified upper end, interval = certified bracket; ``extras``
          floored).

        Raises:
          ValueError: if not exactly one valid baseline is given.
          TypeError: if the baseline has the wrong type.
        """
        base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa)
        lk, kap = base.log_kappa, base.kappa
        lo, up, fl = self._power(np.array([lk]), np.array([kap]))
        b = self._bound(float(lo[0]), float(up[0]), kappa=kap, log_kappa=lk)
        b.extras["floored"] = bool(fl[0])
        return b

    def attribute_inference_success(self, k: int) -> Bound:
        """Success bound of attribute inference with ``k`` equally likely values: 1 - beta(1/k).

        Kulynych et al. 2025: the reconstruction case with baseline kappa = 1/k.

        Args:
          k: number of equally likely attribute values, an integer >= 1.

        Returns:
          :class:`Bound` of the success probability (value = certified upper end, interval =
          certified bracket; ``extras`` floored).

        Raises:
          ValueError: if ``k`` < 1.
          TypeError: if ``k`` is not an integer.
        """
        k = check_int("k", k, minimum=1)
        lo, up, fl = self._power(np.array([-math.log(k)]), np.array([1.0 / k]))
        b = self._bound(float(lo[0]), float(up[0]), k=k)
        b.extras["floored"] = bool(fl[0])
        return b

    def advantage(self) -> Bound:
        """Membership advantage sup_alpha (TPR - FPR) = TV(mu, nu) = delta(0) (Kulynych et al. 2025).

        Upper end: the dominating PLDs' delta(0) with allowances (the smaller of the REMOVE and
        ADD directions: TV is symmetric). Lower end: the best threshold test on the bucket
        statistic, max_s mu(S >= s) - nu(S >= s) with window/round-off slack.

        Returns:
          :class:`Bound` of the advantage in [0, 1].
        """
        if self.method != "exact" or self._closed_form:
            return self._closed_profile(0.0, "advantage")
        tiny = self._tiny_profile(0.0)  # (TV is symmetric: the remove pair's delta(0) in both adjacencies)
        if tiny is not None and tiny[2]:
            return self._bound(tiny[0], tiny[1])
        zero = np.zeros(1)
        try:
            pld = self._built()
            hi = float(pld.upper.hockey_stick(zero)[0])
            if pld.add is not None:
                hi = min(hi, float(pld.add.hockey_stick(zero)[0]))
            p_lo, q_hi = pld.tests.points()
        except dp.PLDTooWide:
            self._cache["too_wide"] = True
            lo, hi = self._wide_profile(0.0, tiny)
            return self._bound(lo, hi)
        # the subtraction rounds to nearest: one step down keeps the lower end below the exact difference
        lo = max(0.0, float(np.nextafter(np.max(p_lo - q_hi), -np.inf)))
        return self._bound(lo, min(1.0, float(np.nextafter(hi, 2.0))))

    def _tiny_profile(self, eps: float) -> tuple[float, float, bool] | None:
        """:func:`rerokit.bounds.dpsgd_tinysigma.closed_form_profile` of this curve (one example per step), else None."""
        if self.group_size != 1:
            return None
        return closed_form_profile(self.segments, eps, self.adjacency)

    def _wide_profile(self, eps: float, tiny: tuple[float, float, bool] | None) -> tuple[float, float]:
        """Certified delta(eps) bracket where the PLD cannot be discretised: the "envelope" method's
        (Gaussian-DP profile of the q = 1 schedule and the never-sampled bound), raised to the closed
        forms' lower end and lowered to their upper end where given."""
        lo, hi = _gdp_profile(self.mu_gdp, eps)
        hi = min(hi, _never_profile(self.segments, eps, self.adjacency, self.group_size) + 4.0 * _EPS)
        lo = -math.expm1(eps) if eps < 0 else 0.0
        if tiny is not None:
            lo, hi = max(lo, tiny[0]), min(hi, tiny[1])
        return min(lo, hi), hi

    def bayes_accuracy(self, prior_membership: float = 0.5) -> Bound:
        """Bayes-optimal membership accuracy (1 - pi) + pi delta(log((1 - pi)/pi)) (Kulynych et al. 2025, Prop. D.1).

        delta is the profile of the curve (max of both directions for ``add_remove``).

        Args:
          prior_membership: prior probability pi in (0, 1) that the target is a member (default 0.5).

        Returns:
          :class:`Bound` of the accuracy in [max(pi, 1 - pi), 1] (value = certified upper end,
          interval = certified bracket).

        Raises:
          ValueError: if ``prior_membership`` is not in (0, 1).
          TypeError: if it is not a number.
        """
        pi = check_probability("prior_membership", prior_membership, high_open=True)
        eps = math.log1p(-pi) - math.log(pi)
        trivial = max(pi, 1.0 - pi)
        if eps > 700.0:  # pi < 1e-304: e^eps overflows, and (1 - pi) + pi delta rounds to 1 - pi = 1
            return self._bound(trivial, 1.0, prior_membership=pi)
        if self.method != "exact" or self._closed_form:
            d = self._closed_profile(eps, "bayes")
            lo = max(trivial, (1.0 - pi) + pi * d.interval[0])
            hi = min(1.0, (1.0 - pi) + pi * d.value + 4.0 * _EPS)
            return self._bound(lo, hi, prior_membership=pi)
        tiny = self._tiny_profile(eps)
        e = np.array([eps])
        try:
            if tiny is not None and tiny[2]:
                delta_lo, delta_hi = tiny[0], tiny[1]
            else:
                pld = self._built()
                delta_hi = float(pld.upper.hockey_stick(e)[0])
                p_lo, q_hi = pld.tests.points()
                s = math.exp(eps)
                delta_lo = float(np.max(p_lo - s * q_hi))
                if self.adjacency == "add_remove":
                    delta_hi = max(delta_hi, float(pld.add.hockey_stick(e)[0]))
                    # complements of the same tests: level mu(S < s) <= 1 - p_lo, power nu(S < s) >= 1 - q_hi
                    delta_lo = max(delta_lo, float(np.max((1.0 - q_hi) - s * (1.0 - p_lo))))
        except dp.PLDTooWide:
            self._cache["too_wide"] = True
            delta_lo, delta_hi = self._wide_profile(eps, tiny)
        hi = min(1.0, (1.0 - pi) + pi * delta_hi + 4.0 * _EPS)
        lo = max(trivial, (1.0 - pi) + pi * delta_lo - 4.0 * _EPS)
        return self._bound(lo, hi, prior_membership=pi)

    def _closed_profile(self, eps: float, what: str) -> Bound:
        """delta(eps) bracket for "closed-form" (exact GDP) and "envelope" curves."""
        lo, hi = _gdp_profile(self.mu_gdp, eps)
        if self.method == "envelope":  # min with the never-sampled bound; lower end trivial
            hi = min(hi, _never_profile(self.segments, eps, self.adjacency, self.group_size) + 4.0 * _EPS)
            lo = -math.expm1(eps) if eps < 0 else 0.0
        if what == "advantage":
            return self._bound(lo, hi)
        return Bound(hi, hi - lo, self.method, "upper", (lo, hi), {}, {})

    def membership_summary(self, fprs: Sequence[float] = MEMBERSHIP_FPRS, prior_membership: float = 0.5) -> dict[str, Any]:
        """JSON-ready membership risks: advantage, TPR at a few FPRs, Bayes accuracy.

        Upper ends as values, certified brackets beside them. Used by ``rerokit bound dpsgd --json``.

        Args:
          fprs: false-positive rates in [0, 1] at which to report the TPR (default 1e-3, 1e-2, 1e-1).
          prior_membership: prior pi in (0, 1) for the Bayes accuracy (default 0.5).

        Returns:
          A dict with adjacency, method, advantage (+ ``advantage_interval``), ``tpr_at_fpr`` (a list
          of ``{"fpr", "tpr", "interval"}``: upper end and certified bracket per FPR), bayes_accuracy
          (+ ``bayes_accuracy_interval``) and prior_membership.

        Raises:
          ValueError: if an FPR is not in [0, 1] or ``prior_membership`` not in (0, 1).
        """
        adv = self.advantage()
        tpr = self.tpr_at_fpr(np.asarray(fprs, dtype=float))
        acc = self.bayes_accuracy(prior_membership)
        out: dict[str, Any] = {
            "adjacency": self.adjacency,
            "method": self.method,
            "advantage": adv.value,
            "advantage_interval": list(adv.interval),
            # a list of objects, not keys with dots (`jq '.membership.tpr_at_fpr[] | select(.fpr == 0.01)'`)
            "tpr_at_fpr": [{"fpr": float(a), "tpr": float(hi), "interval": [float(lo), float(hi)]}
                           for a, lo, hi in zip(fprs, tpr.lower, tpr.upper)],
        }
        out["bayes_accuracy"] = acc.value
        out["bayes_accuracy_interval"] = list(acc.interval)
        out["prior_membership"] = float(prior_membership)
        return out


def _one_minus(x: np.ndarray, *, down: bool) -> np.ndarray:
    """1 - x rounded down (``down``) or up: nudged by one ulp where the subtraction was inexact."""
    y = 1.0 - x
    inexact = (1.0 - y) != x
    nudged = np.nextafter(y, -np.inf if down else np.inf)
    return np.clip(np.where(inexact, nudged, y), 0.0, 1.0)


def dpsgd_tradeoff(
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    *,
    segments: Any = None,
    adjacency: str = "remove",
    method: str = "exact",
    value_discretization_interval: float | None = None,
    group_size: int = 1,
) -> TradeoffCurve:
    """Build the certified trade-off curve of a DP-SGD schedule once (one composed PLD).

    The PLD's directions are composed on first use (a remove-adjacency query never composes the
    ADD direction).

    Args:
      noise_multiplier: sigma > 0 (with ``sample_rate`` and ``steps``, or give ``segments``).
      sample_rate: Poisson sampling rate q in (0, 1].
      steps: number of steps T >= 1.
      segments: heterogeneous schedule, a list of (sigma, q, T) or a dp-accounting DpEvent
        (as :func:`rerokit.bounds.dpsgd.rero_dpsgd`).
      adjacency: "remove" (default; nu = without, mu = with the target) or "add_remove" (the
        symmetrised curve of add-or-remove adjacency, Dong et al. 2022 Def. F.1).
      method: "exact" (certified PLD bracket; closed-form envelope automatically for sigma
        outside SIGMA_EXACT_RANGE, more than MAX_EXACT_STEPS steps, or a PLD beyond its size
        limits) or "closed-form" (q = 1 only: exact Gaussian-DP curve).
      value_discretization_interval: PLD grid step h (default as ``rero_dpsgd``).
      group_size: k >= 1 examples that move together (the unit of privacy; default 1).

    Returns:
      A frozen :class:`TradeoffCurve`. The PLD is built with both directions (as ``rero_dpsgd``
      with its default ``comparisons=True``), so that ``reconstruction_success`` reproduces
      ``rero_dpsgd`` exactly; at small noise, where the closed forms bracket the advantage within 1e-6,
      only on the first query that needs it (module docstring).

    Raises:
      ValueError: if the schedule is invalid (see :func:`rerokit.bounds.dpsgd.normalize_segments`),
        ``adjacency``/``method`` is unknown, ``method="closed-form"`` is asked for q < 1, or
        ``value_discretization_interval`` is not > 0.
      TypeError: if a value has the wrong type.
    """
    segs = dp.normalize_segments(noise_multiplier, sample_rate, steps, segments)
    adjacency = check_choice("adjacency", adjacency, ADJACENCIES)
    method = check_choice("method", method, _METHODS)
    k = dp.check_group_size(group_size)
    if method == "closed-form":
        dp.check_full_batch(segs)
        return TradeoffCurve(segs, adjacency, "closed-form", None, None, group_size=k)
    if dp.outside_exact_range(segs):
        return TradeoffCurve(segs, adjacency, "envelope", None, None, group_size=k)
    if all(q == 1.0 for _, q, _ in segs):  # q = 1: the exact method is the Gaussian-DP closed form, no PLD
        return TradeoffCurve(segs, adjacency, "exact", None, None, group_size=k)
    if k == 1 and closed_form_profile(segs, 0.0)[2]:
        # small noise: the closed forms answer the membership queries (and most others); the PLD, seconds
        # to build there, is built on first use only (``method`` stays "exact": every answer is a certified
        # bracket, from closed forms, the PLD, or - where it cannot be discretised - both envelopes)
        h = None if value_discretization_interval is None else dp.check_positive(
            "value_discretization_interval", value_discretization_interval)
        if h is not None and h > 1.0:  # (dpsgd_pld's rule, checked now rather than at the deferred build)
            raise ValueError(f"value_discretization_interval must be a number in (0, 1], got {value_discretization_interval!r}")
        return TradeoffCurve(segs, adjacency, "exact", h, _Deferred(tuple(tuple(x) for x in segs), h))
    try:
        pld = dp.dpsgd_pld(segs, value_discretization_interval, lower=True, add_direction=True, group_size=k,
                           eager=False)
    except dp.PLDTooWide:
        return TradeoffCurve(segs, adjacency, "envelope", None, None, group_size=k)
    return TradeoffCurve.from_pld(segs, pld, adjacency)
