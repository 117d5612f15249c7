"""Shared result type of every attack in rerokit (numpy/scipy only, no torch).

An attack run over ``trials`` independent trials gives one metric (a success rate, or a mean
reconstruction error) with its 95% interval, the seed that makes the run reproducible and the
settings that produced it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from rerokit._validate import check_int, check_probability

__all__ = ["AttackResult"]


@dataclass(frozen=True)
class AttackResult:
    """``metric`` (e.g. ``"success"`` or ``"mse"``) estimated by ``value`` over ``trials`` trials.

    ``interval`` is the two-sided ``confidence`` interval: exact Clopper-Pearson for a success
    rate (:meth:`from_successes`), Student-t on the mean for a real-valued error
    (:meth:`from_values`). ``seed`` and ``settings`` reproduce the run; ``extras`` holds
    secondary numbers (e.g. the bound the success is compared against).
    """

    metric: str
    value: float
    interval: tuple[float, float]
    trials: int
    seed: int | None
    settings: dict[str, Any] = field(default_factory=dict)
    confidence: float = 0.95
    extras: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_successes(
        cls,
        successes: Sequence[bool] | np.ndarray,
        *,
        seed: int | None,
        settings: dict[str, Any] | None = None,
        metric: str = "success",
        confidence: float = 0.95,
        extras: dict[str, Any] | None = None,
    ) -> "AttackResult":
        """Success rate k/n of 0/1 outcomes with the exact two-sided Clopper-Pearson interval.

        Args:
          successes: per-trial outcomes (anything numpy converts to bool), n >= 1 of them.
          seed: the seed that reproduces the run, or None.
          settings: the settings of the run (copied; default empty).
          metric: the metric's name (default "success").
          confidence: two-sided confidence level in (0, 1) (default 0.95).
          extras: secondary numbers (copied; default empty).

        Returns:
          The :class:`AttackResult` with value k/n and the Clopper-Pearson interval.

        Raises:
          ValueError: if there is no outcome or ``confidence`` is not in (0, 1).
          TypeError: if ``confidence`` is not a number.
        """
        from rerokit.stats import clopper_pearson

        s = np.asarray(successes, dtype=bool).reshape(-1)
        n = check_int("trials", s.size, minimum=1)
        k = int(s.sum())
        lo, hi = clopper_pearson(k, n, confidence)
        return cls(metric, k / n, (lo, hi), n, seed, dict(settings or {}), confidence, dict(extras or {}))

    @classmethod
    def from_values(
        cls,
        values: Sequence[float] | np.ndarray,
        *,
        seed: int | None,
        metric: str,
        settings: dict[str, Any] | None = None,
        confidence: float = 0.95,
        extras: dict[str, Any] | None = None,
        support: tuple[float, float] | None = None,
    ) -> "AttackResult":
        """Mean of real-valued per-trial metrics with a Student-t interval on the mean.

        The interval is degenerate, ``(mean, mean)``, for a single trial or zero spread, and is
        intersected with ``support`` (e.g. ``(0, 1)`` for per-trial probabilities, ``(0, inf)`` for an
        MSE).

        Args:
          values: per-trial metric values, finite, n >= 1 of them.
          seed: the seed that reproduces the run, or None.
          metric: the metric's name (e.g. "mse").
          settings: the settings of the run (copied; default empty).
          confidence: two-sided confidence level in (0, 1) (default 0.95).
          extras: secondary numbers (copied; default empty).
          support: ``(low, high)`` range of the metric to clip the interval to; None (default) for none.

        Returns:
          The :class:`AttackResult` with value the mean and the t interval.

        Raises:
          ValueError: if there is no value, a value is not finite, or ``confidence`` is not in (0, 1).
          TypeError: if ``confidence`` is not a number.
        """
        from scipy import stats as st

        v = np.asarray(values, dtype=float).reshape(-1)
        n = check_int("trials", v.size, minimum=1)
        c = check_probability("confidence", confidence, high_open=True)
        if not np.all(np.isfinite(v)):
            raise ValueError(f"values of {metric} must be finite, got {int((~np.isfinite(v)).sum())} non-finite")
        m = float(v.mean())
        if n == 1 or float(v.std(ddof=1)) == 0.0:
            lo = hi = m
        else:
            half = float(st.t.ppf(0.5 + c / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
            lo, hi = m - half, m + half
        if support is not None:
            lo, hi = max(lo, float(support[0])), min(hi, float(support[1]))
        return cls(metric, m, (lo, hi), n, seed, dict(settings or {}), c, dict(extras or {}))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``{metric: value, ci_low, ci_high, trials, seed, settings, ...}``."""
        d: dict[str, Any] = {
            self.metric: float(self.value),
            "ci_low": float(self.interval[0]),
            "ci_high": float(self.interval[1]),
            "confidence": float(self.confidence),
            "trials": int(self.trials),
            "seed": self.seed,
        }
        d.update(self.extras)
        d["settings"] = dict(self.settings)
        return d
