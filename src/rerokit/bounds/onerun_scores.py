"""From one run's canary scores to guesses and the one-run bound, with a valid choice of how many guesses.

The auditor scores each of the m canary slots against each of its k candidates (higher = more
likely the one in the run), guesses the best-scoring candidate of the g slots with the largest
margin between their best and second-best score, and abstains on the rest. For membership
(k = 2, present/absent) give one score per slot (higher = more likely present): the slots are
centred at the median score and the candidates are (absent: -s, present: +s), so the g guesses
are the g/2-ish most extreme scores on either side.

How many guesses (Steinke et al. 2023, Sec. 6; Mahloujifar et al. 2025, Sec. 5): the bound
holds for a number fixed before the secrets are seen. ``selection="bonferroni"`` evaluates every
count of ``guess_counts`` at level (1 - confidence) / len(guess_counts) and reports the best (a
union bound over the counts tried); ``"split"`` picks the count on a random half of the slots
(seeded) and bounds the other half only, at the full level (the chosen count depends only on
the first half's secrets, which are independent of the second half's). One count is
"pre-registered" and costs nothing.

Pure numpy; never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
from rerokit._validate import check_choice, check_int
from rerokit.bounds.onerun import DpsgdHypothesis, OneRunBound, one_run_bound

__all__ = ["GuessCount", "ScoreAudit", "count_correct", "default_guess_counts", "audit_scores", "SELECTIONS",
           "simplex", "canary_directions", "gaussian_canary_llr"]

SELECTIONS = ("bonferroni", "split")


@dataclass(frozen=True)
class GuessCount:
    """One number of guesses tried: g guesses, c correct, and its epsilon_lower at the level used."""

    guesses: int
    correct: int
    epsilon_lower: float
    mu_lower: float


@dataclass(frozen=True)
class ScoreAudit:
    """Result of :func:`audit_scores`: the reported bound and every count tried.

    Attributes:
      bound: the reported :class:`OneRunBound` (its ``selection`` says how it was chosen).
      tried: every guess count tried, with its counts and bounds.
      accuracy_all: fraction of all m slots whose best-scoring candidate is the secret (for the
        report; not itself a bound).
    """

    bound: OneRunBound
    tried: tuple[GuessCount, ...]
    accuracy_all: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"bound": self.bound.to_dict(), "tried": [dict(t.__dict__) for t in self.tried],
                "accuracy_all": self.accuracy_all}


def simplex(k: int) -> np.ndarray:
    """The k vertices of a regular simplex centred at 0 with unit norm, in R^(k-1) (k = 2: +-1).

    Among k unit vectors these have the largest smallest pairwise distance, sqrt(2k / (k - 1)):
    the best geometry for k gradient canaries of one slot under replace-one adjacency.

    Returns:
      (k, k - 1) array.
    """
    k = check_int("k", k, minimum=2)
    from rerokit._resources import check_memory

    check_memory("k", 3 * 8.0 * k * k, f"the {k} vertices of a simplex in R^{k - 1}")
    e = np.eye(k) - 1.0 / k
    u, _, _ = np.linalg.svd(e)
    v = e @ u[:, : k - 1]
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def canary_directions(game: str, options: int) -> np.ndarray:
    """Unit directions of one slot's candidate gradient canaries, (k', d) on the slot's d coordinates.

    membership: one direction e_1 (present) against absence (k' = 1, d = 1); reconstruction with
    k options: :func:`simplex` (k = 2: antipodal +-e_1).
    """
    if game == "membership":
        return np.ones((1, 1))
    return simplex(options)


def gaussian_canary_llr(x: np.ndarray, directions: np.ndarray, sample_rate: float, noise_multiplier: float) -> np.ndarray:
    """Per-step log-likelihood ratio of each candidate canary against no canary (Neyman-Pearson optimal).

    The residual on a slot's coordinates, in units of the clipping norm C, is x = b v_a + sigma z
    with b ~ Bernoulli(q) and z standard normal, so its likelihood ratio against x = sigma z is
    1 - q + q exp((<x, v_a> - |v_a|^2 / 2) / sigma^2) (q = 1: the exponent itself, in logs).
    Summed over the steps it is the score of candidate a (the log-likelihood statistic of Hayes et
    al. 2023, App. G, for a subsampled Gaussian).

    Args:
      x: (m, d) residuals of m slots at one step, in units of C.
      directions: (k', d) unit directions (:func:`canary_directions`).
      sample_rate: q in (0, 1].
      noise_multiplier: sigma > 0 (the claimed one: any fixed scoring rule is a valid guesser).

    Returns:
      (m, k') log-likelihood ratios.
    """
    a = (np.asarray(x, float) @ directions.T - 0.5 * (directions**2).sum(1)) / noise_multiplier**2
    if sample_rate >= 1.0:
        return a
    return np.logaddexp(np.log1p(-sample_rate), a + np.log(sample_rate))


def _as_candidates(scores: Any) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim == 1:
        c = s - np.median(s) if s.size else s
        s = np.stack([-c, c], axis=1)
    if s.ndim != 2 or s.shape[1] < 2 or s.shape[0] < 1:
        raise ValueError(f"scores must be (m,) membership scores or an (m, k) array with k >= 2, got shape {np.shape(scores)}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite numbers")
    return s


def count_correct(scores: Any, secrets: Any, guesses: int) -> int:
    """Correct guesses among the ``guesses`` slots of largest margin (best minus second-best score).

    Args:
      scores: (m,) membership scores or (m, k) candidate scores.
      secrets: (m,) the true candidate of each slot (membership: 1 = present, 0 = absent).
      guesses: g in [0, m].

    Returns:
      c, the number of those g slots whose best-scoring candidate is the secret (ties in the
      margin broken by slot index, ties between candidates by the lower index).
    """
    s = _as_candidates(scores)
    g = check_int("guesses", guesses, minimum=0, maximum=s.shape[0])
    return int(_cumulative_correct(s, secrets)[g])


def _cumulative_correct(s: np.ndarray, secrets: Any) -> np.ndarray:
    """(m + 1,) correct guesses among the g most confident slots, for every g = 0..m (one sort)."""
    sec = np.asarray(secrets).astype(int).ravel()
    if sec.shape != (s.shape[0],) or sec.min(initial=0) < 0 or sec.max(initial=0) >= s.shape[1]:
        raise ValueError(f"secrets must be {s.shape[0]} integers in [0, {s.shape[1] - 1}]")
    top2 = np.sort(s, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    order = np.argsort(-margin, kind="stable")
    right = s[order].argmax(1) == sec[order]
    return np.concatenate([[0], np.cumsum(right)])


def default_guess_counts(m: int) -> tuple[int, ...]:
    """The counts tried by default: 0.5%, 1%, 2%, 5%, 10%, 20%, 50% and 100% of the m slots (distinct, >= 1)."""
    fr = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
    return tuple(sorted({max(1, int(round(f * m))) for f in fr}))


def audit_scores(
    scores: Any,
    secrets: Any,
    *,
    guess_counts: Sequence[int] | None = None,
    selection: str = "bonferroni",
    seed: int = 0,
    options: int | None = None,
    bound_kw: dict[str, Any] | None = None,
) -> ScoreAudit:
    """The one-run bound from canary scores, choosing the number of guesses validly.

    Args:
      scores: (m,) membership scores or (m, k) candidate scores.
      secrets: (m,) true candidates (membership: 1 = present).
      guess_counts: counts of guesses to try (default :func:`default_guess_counts`); one count =
        pre-registered.
      selection: "bonferroni" (default) or "split" (see the module docstring).
      seed: seed of the split.
      options: k for the bound (default: the number of score columns; membership gives 2).
      bound_kw: further keyword arguments of :func:`rerokit.bounds.onerun.one_run_bound`
        (method, delta, confidence, dpsgd, adjacency).

    Returns:
      :class:`ScoreAudit`.

    Raises:
      ValueError: bad shapes, counts out of [1, m], unknown selection.
    """
    s = _as_candidates(scores)
    m, k = s.shape
    sec = np.asarray(secrets).astype(int).ravel()
    selection = check_choice("selection", selection, SELECTIONS)
    kw = dict(bound_kw or {})
    kw.setdefault("options", options or k)
    if isinstance(kw.get("dpsgd"), (tuple, list)):
        kw["dpsgd"] = DpsgdHypothesis(*kw["dpsgd"])
    counts = tuple(guess_counts) if guess_counts is not None else default_guess_counts(m)
    if not counts:
        raise ValueError("guess_counts must hold at least one count")
    accuracy_all = float(_cumulative_correct(s, sec)[m]) / m
    if selection == "split" and len(counts) > 1:
        rng = np.random.default_rng(check_int("seed", seed, minimum=0))
        perm = rng.permutation(m)
        a, b = perm[: m // 2], perm[m // 2:]
        sub = lambda g, n: max(1, min(n, int(round(g * n / m))))  # noqa: E731 - same fraction on a half
        tried = []
        for g in dict.fromkeys(counts):
            ga = sub(g, a.size)
            c = count_correct(s[a], sec[a], ga)
            r = one_run_bound(a.size, ga, c, **kw)
            tried.append(GuessCount(ga, c, r.epsilon_lower, r.mu_lower))
        best = max(range(len(tried)), key=lambda i: (tried[i].mu_lower, -i))
        gb = sub(counts[best], b.size)
        cb = count_correct(s[b], sec[b], gb)
        bound = one_run_bound(b.size, gb, cb, **kw)
        bound = replace(bound, selection=f"split: {gb} guesses chosen on a random half (seed {seed}) of the slots, "
                                         f"bound on the other {b.size}")
        return ScoreAudit(bound, tuple(tried), accuracy_all)
    counts = tuple(check_int("guess_counts", g, minimum=1, maximum=m) for g in dict.fromkeys(counts))
    # every count at level (1 - confidence) / n: all n statements hold together (union bound), so
    # the count may be chosen by any rule; the cheap mu-GDP family ranks them, the full family
    # (e.g. the run's DP-SGD curves) is then evaluated for the chosen count only
    quick = {key: v for key, v in kw.items() if key != "dpsgd"}
    cum = _cumulative_correct(s, sec)
    tried = []
    for g in counts:
        c = int(cum[g])
        r = one_run_bound(m, g, c, thresholds_tried=len(counts), **quick)
        tried.append(GuessCount(g, c, r.epsilon_lower, r.mu_lower))
    best = max(range(len(tried)), key=lambda i: (tried[i].mu_lower, -i))
    bound = one_run_bound(m, tried[best].guesses, tried[best].correct, thresholds_tried=len(counts), **kw)
    return ScoreAudit(bound, tuple(tried), accuracy_all)
