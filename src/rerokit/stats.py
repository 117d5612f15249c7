"""Small statistics helpers shared by bounds, attacks and experiments (numpy/scipy only)."""

from __future__ import annotations

from scipy import stats as _st

from rerokit._validate import check_int, check_probability

__all__ = ["clopper_pearson", "clopper_pearson_lower"]


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact two-sided Clopper-Pearson interval for a binomial proportion (Clopper & Pearson 1934).

    Args:
      successes: k, the number of successes (0 <= k <= n).
      trials: n, the number of independent trials (n >= 1).
      confidence: two-sided confidence level in (0, 1) (default 0.95); each tail gets half of
        1 - confidence.

    Returns:
      ``(low, high)`` with P(low <= p <= high) >= ``confidence`` for every p (low = 0 for k = 0,
      high = 1 for k = n).

    Raises:
      TypeError: if a count is not an integer or ``confidence`` not a number.
      ValueError: if ``trials`` < 1, ``successes`` is not in [0, trials], or ``confidence`` is not in
        (0, 1).
    """
    k, n, c = _checked(successes, trials, confidence)
    a = 1.0 - c
    low = 0.0 if k == 0 else float(_st.beta.ppf(a / 2, k, n - k + 1))
    high = 1.0 if k == n else float(_st.beta.ppf(1 - a / 2, k + 1, n - k))
    return low, high


def clopper_pearson_lower(successes: int, trials: int, confidence: float = 0.95) -> float:
    """Exact one-sided Clopper-Pearson lower confidence end for a binomial proportion.

    It is the ``1 - confidence`` quantile of Beta(k, n - k + 1) (0 when k = 0), i.e. the p at which
    P(X >= k) = 1 - confidence (Clopper & Pearson 1934). Used for audit lower bounds
    (rerokit.bounds.empirical), where only the lower end matters, so all of 1 - confidence goes to
    one side.

    Args:
      successes, trials: as in :func:`clopper_pearson`.
      confidence: one-sided confidence level in (0, 1) (default 0.95).

    Returns:
      ``low`` with P(low <= p) >= ``confidence`` for every p.

    Raises:
      TypeError, ValueError: as :func:`clopper_pearson`.
    """
    k, n, c = _checked(successes, trials, confidence)
    return 0.0 if k == 0 else float(_st.beta.ppf(1.0 - c, k, n - k + 1))


def _checked(successes: int, trials: int, confidence: float) -> tuple[int, int, float]:
    """(k, n, confidence) checked: n >= 1, 0 <= k <= n, confidence in (0, 1)."""
    n = check_int("trials", trials, minimum=1)
    k = check_int("successes", successes, minimum=0, maximum=n)
    return k, n, check_probability("confidence", confidence, high_open=True)
