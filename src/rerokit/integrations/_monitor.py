"""The framework-free core of the training callbacks: the run's risk at each optimizer step, and when to stop.

:class:`RiskMonitor` knows the DP-SGD run either from an Opacus accountant (its ``history``, kept
by Opacus' optimizer hook) or from explicit settings (noise multiplier sigma, sampling rate q,
sampler) and the trainer's count of *optimizer* steps. It answers three questions:

* :meth:`RiskMonitor.metrics` - the certified risks after T steps: gamma for the chosen prior
  (Hayes et al. 2023, "Bounding Training Data Reconstruction in DP-SGD", Thm 2), the largest TPR
  of any membership test at 1% FPR and epsilon at delta (the same privacy-loss distribution,
  :func:`rerokit.reconstruction_risk`);
* :meth:`RiskMonitor.should_stop` - whether one more step at the current (sigma, q) would exceed
  ``max_gamma`` / ``max_tpr`` / ``max_epsilon``. The step budget is solved once per (sigma, q)
  with :func:`rerokit.bounds.solve.calibrate_monotone` (every risk is non-decreasing in T), so the
  check costs nothing per step and the finished run never exceeds a limit;
* :meth:`RiskMonitor.finish` - the final numbers (and the HTML risk card when asked).

Never imports torch: the framework adapters (:mod:`rerokit.integrations.transformers`,
:mod:`rerokit.integrations.lightning`) do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rerokit._validate import check_choice, check_positive, check_probability
from rerokit.bounds.schedule import SAMPLERS, Schedule

__all__ = ["RiskMonitor", "RiskLimits", "MONITOR_FPR", "METRIC_PREFIX", "SAMPLERS"]

MONITOR_FPR = 0.01
"""The false-positive rate at which the callbacks report the membership TPR bound (1%)."""

METRIC_PREFIX = "privacy/"
"""Prefix of every logged metric name (``privacy/gamma``, ``privacy/tpr_at_fpr_1pct``, ``privacy/epsilon``)."""



# Largest step budget searched when the trainer does not say how many steps it will run.
_MAX_BUDGET = 10_000_000


@dataclass(frozen=True)
class RiskLimits:
    """Limits at which training stops (None: no limit).

    Attributes:
      max_gamma: reconstruction success bound gamma not to exceed, in (0, 1).
      max_tpr: membership TPR bound at 1% FPR not to exceed, in (0, 1).
      max_epsilon: epsilon at the monitor's delta not to exceed, > 0.
    """

    max_gamma: float | None = None
    max_tpr: float | None = None
    max_epsilon: float | None = None

    def __post_init__(self) -> None:
        if self.max_gamma is not None:
            object.__setattr__(self, "max_gamma", check_probability("max_gamma", self.max_gamma, high_open=True))
        if self.max_tpr is not None:
            object.__setattr__(self, "max_tpr", check_probability("max_tpr", self.max_tpr, high_open=True))
        if self.max_epsilon is not None:
            object.__setattr__(self, "max_epsilon", check_positive("max_epsilon", self.max_epsilon))

    @property
    def any(self) -> bool:
        """Whether any limit is set."""
        return any(v is not None for v in (self.max_gamma, self.max_tpr, self.max_epsilon))

    def worst_ratio(self, m: dict[str, float]) -> float:
        """max over the set limits of value / limit (<= 1: every limit met)."""
        r = 0.0
        for key, lim in (("gamma", self.max_gamma), ("tpr_at_fpr_1pct", self.max_tpr), ("epsilon", self.max_epsilon)):
            if lim is not None:
                r = max(r, min(m[key] / lim, 1e300))
        return r

    def exceeded(self, m: dict[str, float]) -> list[str]:
        """Names of the limits that ``m`` exceeds."""
        out = []
        for key, name, lim in (("gamma", "max_gamma", self.max_gamma), ("tpr_at_fpr_1pct", "max_tpr", self.max_tpr),
                               ("epsilon", "max_epsilon", self.max_epsilon)):
            if lim is not None and m[key] > lim:
                out.append(name)
        return out


def _is_accountant(x: Any) -> bool:
    return hasattr(x, "history") and isinstance(getattr(x, "history"), list)


def find_accountant(run: Any) -> Any:
    """The Opacus accountant behind ``run`` (an accountant, a ``PrivacyEngine``, or an Opacus
    ``DPOptimizer``, possibly wrapped by a trainer), or None."""
    if run is None:
        return None
    if _is_accountant(run):
        return run
    acc = getattr(run, "accountant", None)
    if _is_accountant(acc):
        return acc
    return _accountant_of_optimizer(run)


def _accountant_of_optimizer(opt: Any) -> Any:
    """The accountant whose step hook an Opacus ``DPOptimizer`` calls (``attach_step_hook`` of
    ``PrivacyEngine.make_private``); wrappers exposing ``.optimizer`` (accelerate, Lightning) are
    unwrapped. None when there is none."""
    import inspect

    for _ in range(4):
        hook = getattr(opt, "step_hook", None)
        if callable(hook):
            try:
                owner = inspect.getclosurevars(hook).nonlocals.get("self")
            except (TypeError, ValueError):
                owner = None
            return owner if _is_accountant(owner) else None
        opt = getattr(opt, "optimizer", None)
        if opt is None:
            return None
    return None


class RiskMonitor:
    """The certified risk of a DP-SGD run as it trains, and its stopping rule (see the module docstring).

    Args:
      run: an Opacus accountant (:class:`rerokit.opacus.RiskAccountant` or any accountant with a
        ``history``) or a ``PrivacyEngine``; or None to give the settings instead.
      noise_multiplier: sigma > 0 of every step (with ``sample_rate``, instead of ``run``).
      sample_rate: q in (0, 1] (the expected batch size over the dataset size).
      sampler: how batches are drawn: ``"poisson"`` (Opacus' ``DPDataLoader``, the default of
        ``make_private``), ``"shuffle"`` (fixed-size shuffled batches) or ``"full_batch"``; the
        certified numbers are those of that sampler (:mod:`rerokit.bounds.certify`).
      prior: the adversary's prior for gamma: an int n (n equally likely candidates) or a rerokit prior.
      delta: delta of the reported epsilon, in (0, 1).
      limits: :class:`RiskLimits` at which to stop.
      card: path of the risk card written by :meth:`finish`: HTML, or with a ``.md`` suffix the
        Privacy section of a model card (``rerokit report --model-card``); None: none.

    Raises:
      ValueError: if the run is given twice or not at all (``allow_late=False``), a setting is out of
        range, or the sampler is not one of :data:`SAMPLERS`.
    """

    def __init__(self, run: Any = None, *, noise_multiplier: float | None = None, sample_rate: float | None = None,
                 sampler: str = "poisson", prior: Any = 10, delta: float = 1e-5, limits: RiskLimits | None = None,
                 card: str | Path | None = None, allow_late: bool = False):
        from rerokit.bounds.priors import resolve_baseline

        self.accountant = find_accountant(run)
        if run is not None and self.accountant is None:
            raise TypeError(f"run must be an Opacus accountant (with a .history) or a PrivacyEngine, got "
                            f"{type(run).__name__}")
        given = noise_multiplier is not None or sample_rate is not None
        if self.accountant is not None and given:
            raise ValueError("give the run once: an Opacus accountant/PrivacyEngine, or noise_multiplier= and "
                             "sample_rate=, not both")
        self.sampler = check_choice("sampler", sampler, SAMPLERS)
        self.settings: tuple[float, float] | None = None
        if given:
            if noise_multiplier is None or sample_rate is None:
                raise ValueError("give both noise_multiplier= and sample_rate= (or an Opacus accountant)")
            self.settings = (check_positive("noise_multiplier", noise_multiplier),
                             check_probability("sample_rate", sample_rate))
        elif self.accountant is None and not allow_late:
            raise ValueError("give the run: an Opacus accountant or PrivacyEngine (run=...), or noise_multiplier= "
                             "and sample_rate= of the DP-SGD optimizer")
        self.prior = prior
        self.baseline = resolve_baseline(prior)
        self.delta = check_probability("delta", delta, high_open=True)
        self.limits = limits if limits is not None else RiskLimits()
        self.card = None if card is None else Path(card)
        self._metrics: dict[Any, dict[str, float]] = {}
        self._budget: tuple[Any, int | None] | None = None  # (key of the (prefix, sigma, q) it was solved for, k)
        self.stopped_early = False
        self.stop_reason: str | None = None

    def bind(self, run: Any) -> bool:
        """Attach an accountant found late (on a Lightning module, or behind the trainer's Opacus
        optimizer); True if the run is now known."""
        if self.accountant is None and self.settings is None:
            self.accountant = find_accountant(run)
        return self.accountant is not None or self.settings is not None

    @property
    def ready(self) -> bool:
        """Whether the run is known (an accountant or settings)."""
        return self.accountant is not None or self.settings is not None

    def steps(self, optimizer_steps: int) -> int:
        """Steps of the run so far: the accountant's count, else the trainer's optimizer steps."""
        if self.accountant is not None:
            return sum(int(n) for _, _, n in self.accountant.history)
        return int(optimizer_steps)

    def _segments(self, optimizer_steps: int) -> list[tuple[float, float, int]]:
        if self.accountant is not None:
            return [(float(s), float(q), int(n)) for s, q, n in self.accountant.history if int(n) > 0]
        if self.settings is None:
            raise ValueError("the run is unknown: no Opacus accountant and no noise_multiplier/sample_rate")
        T = int(optimizer_steps)
        return [(self.settings[0], self.settings[1], T)] if T > 0 else []

    def _risk_of(self, segments: list[tuple[float, float, int]]) -> dict[str, float]:
        from rerokit.risk import RiskOptions, reconstruction_risk

        if any(s == 0.0 for s, _, _ in segments):
            return {"gamma": 1.0, "tpr_at_fpr_1pct": 1.0, "epsilon": math.inf}
        r = reconstruction_risk(Schedule.from_segments(segments), log_kappa=self.baseline.log_kappa,
                                delta=self.delta, options=RiskOptions(fprs=(MONITOR_FPR,)), sampler=self.sampler)
        return {"gamma": float(r.gamma), "tpr_at_fpr_1pct": float(r.membership.tpr_at_fpr[MONITOR_FPR]),
                "epsilon": float(r.epsilon)}

    def metrics(self, optimizer_steps: int) -> dict[str, float]:
        """Certified risks after the run's steps so far (cached per history).

        Args:
          optimizer_steps: the trainer's optimizer steps (used without an accountant).

        Returns:
          ``{"steps", "gamma", "tpr_at_fpr_1pct", "epsilon", "kappa"}``; before the first step gamma
          is the baseline kappa, TPR equals the FPR and epsilon is 0.
        """
        segs = self._segments(optimizer_steps)
        key = tuple(segs)
        if key not in self._metrics:
            if not segs:
                m = {"gamma": self.baseline.kappa, "tpr_at_fpr_1pct": MONITOR_FPR, "epsilon": 0.0}
            else:
                m = self._risk_of(segs)
            self._metrics[key] = {"steps": float(sum(n for _, _, n in segs)), **m, "kappa": self.baseline.kappa}
        return self._metrics[key]

    def log_metrics(self, optimizer_steps: int) -> dict[str, float]:
        """:meth:`metrics` with :data:`METRIC_PREFIX` names, for a tracker's ``log``."""
        return {METRIC_PREFIX + k: v for k, v in self.metrics(optimizer_steps).items() if k != "kappa"}

    def _current_setting(self, segs: list[tuple[float, float, int]]) -> tuple[float, float] | None:
        if self.settings is not None:
            return self.settings
        return (segs[-1][0], segs[-1][1]) if segs else None

    def _solve_budget(self, prefix: list[tuple[float, float, int]], sigma: float, q: float,
                      cap: int) -> int | None:
        """Largest k <= cap such that prefix + k steps of (sigma, q) meets every limit; None if all of cap do."""
        from rerokit.bounds.solve import AllFeasible, NoFeasibleValue, SearchRange, calibrate_monotone

        lim = self.limits

        def worst(k: float) -> float:
            return lim.worst_ratio(self._risk_of([*prefix, (sigma, q, int(k))]))

        if cap < 1:
            return None
        try:
            r = calibrate_monotone(worst, 1.0, feasible="below", search=SearchRange(1.0, float(cap), 1.0),
                                   integer=True, growth=16.0, transform="log")
        except NoFeasibleValue:
            return 0
        except AllFeasible:
            return None
        return None if r.at_limit else int(r.x)

    def should_stop(self, optimizer_steps: int, max_steps: int | None = None) -> bool:
        """Whether training must stop now: one more step at the current (sigma, q) would exceed a limit.

        The budget of steps at the current setting is solved once (and again when the accountant's
        setting changes); after a stop, :attr:`stopped_early` is True and :attr:`stop_reason` names
        the limit.

        Args:
          optimizer_steps: the trainer's optimizer steps so far.
          max_steps: the steps the trainer plans in all (bounds the search; None: unknown).

        Returns:
          True to stop.
        """
        if not self.limits.any or not self.ready:
            return False
        segs = self._segments(optimizer_steps)
        setting = self._current_setting(segs)
        if setting is None:  # an accountant before its first step: nothing known to check yet
            return False
        done = self.steps(optimizer_steps)
        if self.accountant is None:
            prefix, in_run = [], done
        else:  # the accountant's last run of equal settings is the one the budget counts
            prefix = segs[:-1] if segs and (segs[-1][0], segs[-1][1]) == setting else segs
            in_run = done - sum(n for _, _, n in prefix)
        key = (tuple(prefix), setting)
        if self._budget is None or self._budget[0] != key:
            cap = _MAX_BUDGET if max_steps is None else max(int(max_steps) - done + in_run, 0)
            self._budget = (key, self._solve_budget(prefix, setting[0], setting[1], cap))
        k = self._budget[1]
        if k is not None and in_run >= k:
            if not self.stopped_early:  # name the limit once (one more evaluation)
                m = self._risk_of([*prefix, (setting[0], setting[1], in_run + 1)])
                self.stop_reason = ", ".join(self.limits.exceeded(m)) or "limit"
                self.stopped_early = True
            return True
        return False

    def finish(self, optimizer_steps: int) -> dict[str, Any]:
        """The final numbers of the run (and the HTML card at :attr:`card` when set).

        Args:
          optimizer_steps: the trainer's optimizer steps.

        Returns:
          ``{"steps", "gamma", "tpr_at_fpr_1pct", "epsilon", "kappa", "delta", "stopped_early",
          "stop_reason", "card"}``.
        """
        m = dict(self.metrics(optimizer_steps))
        out: dict[str, Any] = {**m, "steps": int(m["steps"]), "delta": self.delta,
                               "stopped_early": self.stopped_early, "stop_reason": self.stop_reason, "card": None}
        segs = self._segments(optimizer_steps)
        if self.card is not None and segs:
            from rerokit.report.build import build_report
            from rerokit.report.settings import ReportSettings

            sched = Schedule.from_segments(segs).with_sampling(self.sampler)
            rep = build_report(sched, delta=self.delta, what_if=self.card.suffix != ".md",
                               settings=ReportSettings(source="training callback"))
            if self.card.suffix == ".md":  # a model card (README.md): its Privacy section and metadata
                from rerokit.report.model_card import write_model_card

                out["card"] = write_model_card(rep.to_dict(), self.card)
            else:
                out["card"] = rep.write_html(self.card)
        return out
