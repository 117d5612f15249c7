"""Privacy auditing in one training run: lower bounds from the guesses made about many canaries.

The game (one run, m canary slots). Each slot i holds one of k candidate canaries, drawn
uniformly and independently (k = 2 with "absent/present" is the membership game of Steinke,
Nasr & Jagielski 2023; k >= 2 distinct candidates is the reconstruction game of Mahloujifar,
Melis & Chaudhuri 2025). The mechanism is trained once; the auditor then guesses the secret of
g slots (abstaining on the other m - g) and c guesses are correct. A privacy claim forbids too
many correct guesses; a claim under which c or more correct is less likely than 1 - confidence
is rejected.

Two analyses:

* ``method="fdp"``: Mahloujifar, Melis & Chaudhuri (ICML 2025, "Auditing f-differential
  privacy in one run", Thm 3.1 and the recursion of their Algorithm 3 with abstentions). For a
  claim given by a trade-off curve f, let B^-1 be its inverse blow-up function (the smallest
  false-positive rate at which a test reaches power y: B^-1(y) = inf{alpha : 1 - f(alpha) >= y}).
  With tau = 1 - confidence, start r_c = tau c / m, h_c = tau (g - c) / m and for i = c-1, ..., 0

      h_i = max(h_{i+1}, (k - 1) B^-1(r_{i+1})),   r_i = min(1, r_{i+1} + i / (g - i) (h_i - h_{i+1})).

  If r_0 + h_0 > g / m, then P[at least c correct] < tau under the claim: the claim is
  rejected at confidence ``confidence``. (The recursion stops as soon as h stops growing: r and
  h are then fixed.) Clamping r at 1 only makes rejection rarer.
* ``method="steinke"``: Steinke, Nasr & Jagielski (NeurIPS 2023, "Privacy auditing with one
  (1) training run", Thm 5.2 with abstentions): under (eps, delta)-DP,
  P[W >= c] <= beta + 2 m delta alpha with p = e^eps / (1 + e^eps),
  beta = P[Binomial(g, p) >= c] and alpha = max_{1 <= i <= c} (P[Binomial(g, p) >= c - i] - beta) / i.
  Membership (k = 2) only.

Hypothesis families (ordered: each claim implies the weaker ones). ``mu_lower`` is the largest
mu for which mu-GDP (trade-off G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu), Dong, Roth & Su 2022)
is rejected; for the DP-SGD family (curves of :func:`rerokit.bounds.tradeoff.dpsgd_tradeoff`
indexed by the noise multiplier at the run's sampling rate q and steps T) the boundary
``noise_multiplier_rejected`` is the smallest sigma whose curve is rejected. ``epsilon_lower``
is the epsilon at delta of the boundary hypothesis (the convention of Mahloujifar et al. 2025
and jax_privacy): the run is not mu_lower-GDP / does not have the privacy curve of that sigma.
For ``steinke`` the family is (eps, delta)-DP itself. Each reported number is a lower bound that
holds with probability >= confidence: a boundary beyond the truth requires the true hypothesis
to be rejected.

Adjacency. k = 2 membership (present/absent) is add-or-remove: the DP-SGD curve is the
symmetrised add/remove curve (``adjacency="add_remove"``). Every game with k distinct candidates
(reconstruction, including k = 2 such as two antipodal gradient canaries) replaces one record by
another: ``"replace_one"``. For DP-SGD with q = 1 replacing a record moves the clipped-gradient
sum by at most 2C, so the curve is exactly G_mu with mu = 2 sqrt(T) / sigma; for q < 1 the claim
is the group-privacy composition of two add/remove curves, TPR(alpha) <= T(T(alpha))
(Dong, Roth & Su 2022, Thm 2.14), a valid but possibly loose curve; its reported epsilon is the
add/remove epsilon of the same sigma, which is smaller (so never overstates the lower bound).

Certified side. The DP-SGD curves are read from the upper end of the certified power bracket
(``TradeoffCurve.tpr_at_fpr(...).upper``) on a fine grid of false-positive rates, turned into a
lower bound of B^-1 that is valid between grid points (the largest grid point whose power upper
bound is still below y): rounding can only make rejection rarer, never reject an honest run.

Choosing how many guesses to make. The bound is valid for a number of guesses fixed before the
secrets are seen. Trying several and reporting the best is valid with a Bonferroni correction:
``thresholds_tried=n`` runs every test at (1 - confidence) / n. :func:`audit_scores` does that
or a split (choose on a random half, bound on the other).

Reference implementations compared (read, not copied): the recursion is the one of
jax_privacy's ``auditing`` module (k = 2, Gaussian family parametrised by (eps, delta)) and of
facebookresearch/PrivacyGuard's FDP analysis node (k options, a grid of noise levels). Here the
boundary is searched continuously (to 1e-4 relative, rounded to the rejected side), and a count
that rejects nothing gives mu_lower = epsilon_lower = 0 (PrivacyGuard's grid clamp returns a
positive epsilon even for 0 correct guesses). Tests recompute the recursion in mpmath and check
the type-I error by simulation.

Pure numpy/scipy; never imports torch.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from rerokit._validate import check_choice, check_int, check_positive, check_probability
from rerokit.bounds.solve import AllFeasible, NoFeasibleValue, SearchRange, calibrate_monotone

__all__ = [
    "DpsgdHypothesis",
    "ClaimCheck",
    "OneRunBound",
    "one_run_bound",
    "fdp_rejects",
    "steinke_p_value",
    "gdp_inverse_blowup",
    "dpsgd_inverse_blowup",
    "METHODS",
    "ADJACENCIES",
]

METHODS = ("fdp", "steinke")
ADJACENCIES = ("add_remove", "replace_one")
_MU_RANGE = (1e-4, 60.0)
_SIGMA_RANGE = (1e-3, 1e4)
_SAFETY = 1.0 - 1e-9  # float rounding of Phi(Phi^-1(y) - mu): err towards a smaller B^-1 (fewer rejections)


# --------------------------------------------------------------------------- hypotheses


@dataclass(frozen=True)
class DpsgdHypothesis:
    """The run's DP-SGD schedule: Poisson rate ``sample_rate`` (q), ``steps`` (T), and the claimed
    noise multiplier (sigma; None when only the family at this (q, T) is wanted)."""

    sample_rate: float
    steps: int
    noise_multiplier: float | None = None

    def __post_init__(self) -> None:
        check_probability("sample_rate", self.sample_rate)
        check_int("steps", self.steps, minimum=1)
        if self.noise_multiplier is not None:
            check_positive("noise_multiplier", self.noise_multiplier)


def gdp_inverse_blowup(mu: float) -> Callable[[float], float]:
    """B^-1(y) = Phi(Phi^-1(y) - mu) of mu-GDP (Dong, Roth & Su 2022, Eq. 6), rounded down.

    Args:
      mu: mu >= 0.

    Returns:
      A function y -> B^-1(y) on [0, 1].
    """
    from scipy.special import ndtr, ndtri

    from rerokit._validate import check_epsilon

    m = check_epsilon("mu", mu)  # inf allowed (no guarantee); an int beyond the float range is inf

    def inv(y: float) -> float:
        if y <= 0.0:
            return 0.0
        if y >= 1.0:
            return 1.0
        return float(ndtr(ndtri(y) - m)) * _SAFETY

    return inv


def _grid() -> np.ndarray:
    log_part = np.logspace(-16, -2, 12000, endpoint=False)
    return np.concatenate(([0.0], log_part, np.linspace(1e-2, 1.0, 8001)))


def _inverse_from_power(alpha: np.ndarray, tpr_upper: np.ndarray) -> Callable[[float], float]:
    """Lower bound of B^-1 from an upper bound of the power on a grid, valid between grid points.

    U_j = min_{i >= j} tpr_upper_i bounds the true power at alpha_j (the power is non-decreasing),
    so TPR(alpha) < y for every alpha <= alpha_j with U_j < y: B^-1(y) >= that alpha_j.
    """
    u = np.minimum.accumulate(np.asarray(tpr_upper, float)[::-1])[::-1]
    a_list, u_list = alpha.tolist(), u.tolist()

    def inv(y: float) -> float:
        j = bisect.bisect_left(u_list, y) - 1
        return a_list[j] if j >= 0 else 0.0

    return inv


def dpsgd_inverse_blowup(
    noise_multiplier: float, sample_rate: float, steps: int, adjacency: str = "add_remove"
) -> Callable[[float], float]:
    """Certified lower bound of the inverse blow-up B^-1 of DP-SGD's trade-off curve.

    Args:
      noise_multiplier: sigma > 0.
      sample_rate: Poisson rate q in (0, 1].
      steps: T >= 1.
      adjacency: "add_remove" (symmetrised add/remove curve) or "replace_one" (q = 1: G_mu with
        mu = 2 sqrt(T)/sigma; q < 1: group-privacy composition T(T(alpha)) of the add/remove curve).

    Returns:
      y -> a lower bound of B^-1(y) (the permissive side: fewer rejections).

    Raises:
      ValueError, TypeError: on invalid arguments.
    """
    s = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sample_rate", sample_rate)
    t = check_int("steps", steps, minimum=1)
    adjacency = check_choice("adjacency", adjacency, ADJACENCIES)
    factor = 2.0 if adjacency == "replace_one" else 1.0
    if q == 1.0:
        return gdp_inverse_blowup(factor * math.sqrt(t) / s)
    from rerokit.bounds.tradeoff import dpsgd_tradeoff

    curve = dpsgd_tradeoff(s, q, t, adjacency="add_remove")
    alpha = _grid()
    tpr = np.asarray(curve.tpr_at_fpr(alpha).upper, float)
    if adjacency == "replace_one":
        # T(T(alpha)) <= T_hi(T_hi(alpha)); T_hi at a non-grid point is bounded by the next grid value
        idx = np.searchsorted(alpha, np.minimum(tpr, 1.0), side="left")
        suffix_min = np.minimum.accumulate(tpr[::-1])[::-1]
        tpr = suffix_min[np.minimum(idx, alpha.size - 1)]
    return _inverse_from_power(alpha, tpr)


# --------------------------------------------------------------------------- the two tests


def fdp_rejects(inverse_blowup: Callable[[float], float], canaries: int, guesses: int, correct: int,
                options: int = 2, significance: float = 0.05) -> bool:
    """Whether c correct out of g guesses on m canaries rejects an f-DP claim (Mahloujifar et al. 2025).

    Args:
      inverse_blowup: y -> (a lower bound of) the claim's inverse blow-up function B^-1(y).
      canaries: m >= 1.
      guesses: g in [0, m].
      correct: c in [0, g].
      options: k >= 2 candidates per slot.
      significance: tau = 1 - confidence in (0, 1).

    Returns:
      True when P[at least c correct] < tau under the claim (Thm 3.1 via the recursion of
      Algorithm 3; see the module docstring).
    """
    m, g, c, k, tau = canaries, guesses, correct, options, significance
    r = tau * c / m
    h = tau * (g - c) / m
    for i in range(c - 1, -1, -1):
        h_new = max(h, (k - 1) * inverse_blowup(r))
        if h_new <= h:
            break  # h and r can no longer change
        r = min(1.0, r + i / (g - i) * (h_new - h))
        h = h_new
    return r + h > g / m


def steinke_p_value(canaries: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """Upper bound on P[at least c correct] under (eps, delta)-DP (Steinke, Nasr & Jagielski 2023, Thm 5.2).

    Args:
      canaries: m >= 1.
      guesses: g (the guesser abstains on the other m - g canaries).
      correct: c in [0, g].
      epsilon: eps >= 0.
      delta: delta in [0, 1).

    Returns:
      min(1, beta + 2 m delta alpha), beta = P[Bin(g, p) >= c], p = e^eps / (1 + e^eps),
      alpha = max_{1 <= i <= c} (P[Bin(g, p) >= c - i] - beta) / i.
    """
    from scipy.stats import binom

    from rerokit._validate import check_epsilon

    canaries = check_int("canaries", canaries, minimum=1)
    guesses = check_int("guesses", guesses, minimum=0, maximum=canaries)
    correct = check_int("correct", correct, minimum=0, maximum=guesses)
    epsilon = check_epsilon("epsilon", epsilon)
    delta = check_probability("delta", delta, low_open=False, high_open=True)
    p = 1.0 / (1.0 + math.exp(-min(epsilon, 800.0)))
    beta = float(binom.sf(correct - 1, guesses, p))
    if delta == 0.0 or correct == 0:
        return min(1.0, beta)
    i = np.arange(1, correct + 1)
    alpha = float(np.max((binom.sf(correct - i - 1, guesses, p) - beta) / i))
    return min(1.0, beta + 2.0 * canaries * delta * max(alpha, 0.0))


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ClaimCheck:
    """The run's own certified claim tested against the guesses.

    Attributes:
      description: the claim in words (e.g. "DP-SGD sigma=1, q=1, T=100 (add_remove)").
      rejected: whether the guesses reject it at the stated confidence.
      correct_upper: certified upper tail: under the claim, more than this many correct out of
        the same number of guesses happens with probability < 1 - confidence (for the report).
      epsilon: the claim's certified epsilon at delta (None for the replace-one group-privacy
        curve at q < 1, whose epsilon is not computed).
      mu: the claim's mu when it is mu-GDP (q = 1), else None.
    """

    description: str
    rejected: bool
    correct_upper: int
    epsilon: float | None
    mu: float | None


@dataclass(frozen=True)
class OneRunBound:
    """Lower bounds from one run's canary guesses.

    Attributes:
      method: "fdp" (Mahloujifar et al. 2025) or "steinke" (Steinke et al. 2023).
      canaries, guesses, correct, options: m, g, c, k of the game.
      adjacency: "add_remove" or "replace_one".
      confidence: each statement holds with at least this probability.
      significance: the level each test ran at: (1 - confidence) / thresholds_tried (Bonferroni).
      thresholds_tried: how many guess counts were tried (1 = pre-registered).
      delta: the delta of ``epsilon_lower``.
      mu_lower: the run is not mu-GDP for any mu <= mu_lower (0: no evidence).
      epsilon_lower: epsilon at delta of the boundary hypothesis (0: no evidence).
      family: "gdp", "dpsgd" or "dp" (the family ``epsilon_lower`` is read from).
      noise_multiplier_rejected: DP-SGD family: curves with sigma >= this are rejected (None
        when no DP-SGD schedule was given or none is rejected).
      at_limit: the boundary hit the end of the searched range (the bound is then at least it).
      claim: the test of the run's own claim, when a noise multiplier was given.
      selection: how the number of guesses was chosen, in words.
    """

    method: str
    canaries: int
    guesses: int
    correct: int
    options: int
    adjacency: str
    confidence: float
    significance: float
    thresholds_tried: int
    delta: float
    mu_lower: float
    epsilon_lower: float
    family: str
    noise_multiplier_rejected: float | None = None
    at_limit: bool = False
    claim: ClaimCheck | None = None
    selection: str = "pre-registered number of guesses"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the claim as a nested dict)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "claim"}
        out["claim"] = None if self.claim is None else dict(self.claim.__dict__)
        return out


# --------------------------------------------------------------------------- searches


def _boundary(rejects: Callable[[float], bool], *, increasing: bool, lo: float, hi: float) -> tuple[float | None, bool]:
    """Boundary of the rejected set of a monotone family parameter (None: nothing rejected).

    ``increasing``: the parameter grows with privacy (sigma: large values rejected), else it
    grows with leakage (mu: small values rejected). Returns (boundary, at_limit).
    """
    fn = lambda x: 0.0 if rejects(x) else 1.0  # noqa: E731 - 0 = rejected (feasible)
    feasible = "above" if increasing else "below"
    start = math.sqrt(lo * hi)
    try:
        r = calibrate_monotone(fn, 0.5, feasible=feasible, search=SearchRange(lo, hi, start), rtol=1e-4,
                               transform="identity")
    except NoFeasibleValue:
        return None, False
    except AllFeasible:
        return (lo if increasing else hi), True
    return r.x, r.at_limit


def _largest_not_rejected(rejects_c: Callable[[int], bool], guesses: int) -> int:
    """Largest c in [0, g] not rejected (rejection is monotone in c)."""
    if not rejects_c(guesses):
        return guesses
    lo, hi = 0, guesses  # lo not rejected (c = 0 never is), hi rejected
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if rejects_c(mid):
            hi = mid
        else:
            lo = mid
    return lo


def _gdp_epsilon(mu: float, delta: float) -> float:
    from rerokit.bounds.gaussian import gaussian_epsilon

    return 0.0 if mu <= 0 else gaussian_epsilon(delta, mu) * (1 - 1e-9)


def _steinke_eps(m: int, g: int, c: int, delta: float, tau: float) -> tuple[float, bool]:
    rej = lambda e: steinke_p_value(m, g, c, e, delta) <= tau  # noqa: E731
    b, lim = _boundary(rej, increasing=False, lo=1e-6, hi=50.0)
    return (0.0 if b is None else b), lim


# --------------------------------------------------------------------------- entry point


def one_run_bound(
    canaries: int,
    guesses: int,
    correct: int,
    *,
    options: int = 2,
    method: str = "fdp",
    delta: float = 1e-5,
    confidence: float = 0.95,
    dpsgd: DpsgdHypothesis | Sequence[Any] | None = None,
    adjacency: str | None = None,
    thresholds_tried: int = 1,
) -> OneRunBound:
    """Lower bounds on the privacy of one training run from its canary guesses (count level).

    Args:
      canaries: m >= 1 canary slots.
      guesses: g in [0, m] guesses made (abstentions on the rest).
      correct: c in [0, g] correct guesses.
      options: k >= 2 candidates per slot (2 with membership = present/absent).
      method: "fdp" (Mahloujifar, Melis & Chaudhuri 2025, Thm 3.1) or "steinke" (Steinke, Nasr &
        Jagielski 2023, Thm 5.2; k = 2 add/remove only).
      delta: delta in (0, 1) of ``epsilon_lower``.
      confidence: in (0, 1) (default 0.95).
      dpsgd: the run's schedule (:class:`DpsgdHypothesis` or (sample_rate, steps[, noise_multiplier])):
        the family becomes its DP-SGD curves; with a noise multiplier the claim is tested too.
      adjacency: "add_remove" or "replace_one" (default: add_remove for k = 2, replace_one for k > 2).
      thresholds_tried: number of guess counts tried before reporting this one (Bonferroni), >= 1.

    Returns:
      :class:`OneRunBound`. No evidence (e.g. c = 0) gives mu_lower = epsilon_lower = 0.

    Raises:
      ValueError: counts out of range, k > 2 with add_remove or with steinke, unknown names.
      TypeError: wrong types.
    """
    m = check_int("canaries", canaries, minimum=1)
    g = check_int("guesses", guesses, minimum=0)
    if g > m:
        raise ValueError(f"guesses must be an integer in [0, canaries] = [0, {m}], got {g}")
    c = check_int("correct", correct, minimum=0)
    if c > g:
        raise ValueError(f"correct must be an integer in [0, guesses] = [0, {g}], got {c}")
    k = check_int("options", options, minimum=2)
    method = check_choice("method", method, METHODS)
    d = check_probability("delta", delta, high_open=True)
    conf = check_probability("confidence", confidence, high_open=True)
    n_thr = check_int("thresholds_tried", thresholds_tried, minimum=1)
    adjacency = check_choice("adjacency", adjacency or ("add_remove" if k == 2 else "replace_one"), ADJACENCIES)
    if k > 2 and adjacency == "add_remove":
        raise ValueError("adjacency must be 'replace_one' for options > 2 (k distinct candidates per slot)")
    if method == "steinke" and (k != 2 or adjacency != "add_remove"):
        raise ValueError("method='steinke' supports options=2 with adjacency='add_remove' only; use method='fdp'")
    if dpsgd is not None and not isinstance(dpsgd, DpsgdHypothesis):
        dpsgd = DpsgdHypothesis(*dpsgd)
    tau = round(1.0 - conf, 12) / n_thr
    common = dict(method=method, canaries=m, guesses=g, correct=c, options=k, adjacency=adjacency,
                  confidence=conf, significance=tau, thresholds_tried=n_thr, delta=d)
    selection = "pre-registered number of guesses" if n_thr == 1 else f"best of {n_thr} guess counts (Bonferroni)"
    if method == "steinke":
        return _steinke_bound(common, dpsgd, selection)

    def rej_mu(mu: float) -> bool:
        return fdp_rejects(gdp_inverse_blowup(mu), m, g, c, k, tau)

    mu_b, mu_lim = _boundary(rej_mu, increasing=False, lo=_MU_RANGE[0], hi=_MU_RANGE[1])
    mu_lower = 0.0 if mu_b is None else mu_b
    if dpsgd is None:
        return OneRunBound(**common, mu_lower=mu_lower, epsilon_lower=_gdp_epsilon(mu_lower, d), family="gdp",
                           at_limit=mu_lim, selection=selection)
    q, t = dpsgd.sample_rate, dpsgd.steps

    def rej_sigma(s: float) -> bool:
        return fdp_rejects(dpsgd_inverse_blowup(s, q, t, adjacency), m, g, c, k, tau)

    if q == 1.0:  # the family is G_mu with mu = f sqrt(T) / sigma: the same tests as the mu-GDP search
        factor = 2.0 if adjacency == "replace_one" else 1.0
        sig_b, sig_lim = (None if mu_b is None else factor * math.sqrt(t) / mu_b), mu_lim
    else:
        sig_b, sig_lim = _boundary(rej_sigma, increasing=True, lo=_SIGMA_RANGE[0], hi=_SIGMA_RANGE[1])
    eps_lower = 0.0 if sig_b is None else _dpsgd_epsilon(sig_b, q, t, d, adjacency, lower=True)
    claim = None
    if dpsgd.noise_multiplier is not None:
        s = dpsgd.noise_multiplier
        inv = dpsgd_inverse_blowup(s, q, t, adjacency)
        claim = ClaimCheck(
            description=f"DP-SGD sigma={s:g}, q={q:g}, T={t} ({adjacency})",
            rejected=fdp_rejects(inv, m, g, c, k, tau),
            correct_upper=_largest_not_rejected(lambda cc: fdp_rejects(inv, m, g, cc, k, tau), g),
            epsilon=_dpsgd_epsilon(s, q, t, d, adjacency, lower=False),
            mu=(2.0 if adjacency == "replace_one" else 1.0) * math.sqrt(t) / s if q == 1.0 else None,
        )
    return OneRunBound(**common, mu_lower=mu_lower, epsilon_lower=eps_lower, family="dpsgd",
                       noise_multiplier_rejected=sig_b, at_limit=mu_lim or sig_lim, claim=claim, selection=selection)


def _dpsgd_epsilon(sigma: float, q: float, t: int, delta: float, adjacency: str, *, lower: bool) -> float | None:
    """epsilon at delta of the DP-SGD hypothesis sigma (replace_one at q = 1: G_{2 sqrt(T)/sigma}).

    ``lower``: for a reported lower bound; replace_one at q < 1 then uses the add/remove epsilon
    (smaller than the group-privacy curve's). The certified (upper) epsilon exceeds the exact one
    by the PLD discretisation only (~1e-3).
    """
    if q == 1.0:
        mu = (2.0 if adjacency == "replace_one" else 1.0) * math.sqrt(t) / sigma
        return _gdp_epsilon(mu, delta)
    from rerokit.bounds.dpsgd import epsilon_dpsgd

    eps = epsilon_dpsgd(sigma, q, t, delta)
    if adjacency == "replace_one" and not lower:
        return None  # no certified epsilon of the group-privacy curve is computed here
    return eps


def _steinke_bound(common: dict, dpsgd: DpsgdHypothesis | None, selection: str) -> OneRunBound:
    m, g, c, d, tau = common["canaries"], common["guesses"], common["correct"], common["delta"], common["significance"]
    eps, lim = _steinke_eps(m, g, c, d, tau)
    from rerokit.bounds.gaussian import gdp_mu

    mu_lower = gdp_mu(eps, d) if eps > 0 else 0.0
    claim = None
    if dpsgd is not None and dpsgd.noise_multiplier is not None:
        s, q, t = dpsgd.noise_multiplier, dpsgd.sample_rate, dpsgd.steps
        e_claim = _dpsgd_epsilon(s, q, t, d, "add_remove", lower=False)
        rej = lambda cc: steinke_p_value(m, g, cc, e_claim, d) <= tau  # noqa: E731
        claim = ClaimCheck(f"({e_claim:.4g}, {d:g})-DP of DP-SGD sigma={s:g}, q={q:g}, T={t}", rej(c),
                           _largest_not_rejected(rej, g), e_claim, math.sqrt(t) / s if q == 1.0 else None)
    return OneRunBound(**common, mu_lower=mu_lower, epsilon_lower=eps, family="dp", at_limit=lim, claim=claim,
                       selection=selection)
