"""Typed view of what :func:`rerokit.bounds.dpsgd.rero_dpsgd` reports beside gamma.

The bound's ``extras`` dict stays what ``Bound.to_dict()`` (and ``rerokit bound dpsgd --json``)
writes; readers in other modules (the certifier, the calibrators, the CLI) read these typed fields
instead of string keys, so a renamed or missing key fails here, in one place, with its name.
Pure Python (never imports numpy or torch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rerokit.bounds.types import Bound

__all__ = ["DpsgdDetails", "DpsgdComparisonValues", "MonteCarloEstimate"]


@dataclass(frozen=True)
class DpsgdComparisonValues:
    """The comparisons of the same schedule (``Comparisons(rdp_and_epsilon=True)``).

    Attributes:
      rdp_gamma: the RDP-based bound on gamma (Balle et al. 2022 Thm 2), None where the engine does
        not compute it (a group of examples).
      rdp_order: the RDP order that gave it (None with it).
      epsilon: the certified epsilon at ``delta`` (add-or-remove adjacency); may be inf.
      delta: its delta, in (0, 1).
    """

    rdp_gamma: float | None
    rdp_order: float | None
    epsilon: float
    delta: float


@dataclass(frozen=True)
class MonteCarloEstimate:
    """The Monte Carlo run of ``method="mc"`` (Hayes et al. Alg. 1).

    Attributes:
      seed: the seed used (drawn when none was given), an integer >= 0.
      samples: the number of samples N.
      standard_error: the CLT standard error of the estimate.
    """

    seed: int
    samples: int
    standard_error: float


@dataclass(frozen=True)
class DpsgdDetails:
    """What a DP-SGD bound (:func:`rerokit.bounds.dpsgd.rero_dpsgd`) reports beside its value.

    Build it with :meth:`of`. Every field is None where the bound's method does not report it.

    Attributes:
      method: the bound's method: "exact", "closed-form", "envelope" or "mc".
      log_gamma: the natural log of the reported gamma (readable where gamma underflows).
      lower: the certified lower end (exact, envelope).
      value_discretization_interval: the PLD grid step used (exact; None for the closed form).
      threshold_epsilon: the privacy-loss threshold of the optimal test (exact).
      floored: True where the PLD's infinity mass / round-off floor dominates (exact).
      note: why the value is what it is, in words (floors, envelopes, the closed form).
      mu_gdp: the Gaussian-DP mu of a full-batch schedule (closed form; exact at q = 1).
      comparisons: the :class:`DpsgdComparisonValues`, None when not asked for.
      membership: the membership-inference risks (the JSON object of
        :meth:`rerokit.bounds.tradeoff.TradeoffCurve.membership_summary`), None when not asked for.
      monte_carlo: the :class:`MonteCarloEstimate` of ``method="mc"``, else None.
    """

    method: str
    log_gamma: float | None = None
    lower: float | None = None
    value_discretization_interval: float | None = None
    threshold_epsilon: float | None = None
    floored: bool | None = None
    note: str | None = None
    mu_gdp: float | None = None
    comparisons: DpsgdComparisonValues | None = None
    membership: dict[str, Any] | None = None
    monte_carlo: MonteCarloEstimate | None = None

    @classmethod
    def of(cls, bound: Bound) -> "DpsgdDetails":
        """The typed view of ``bound.extras``.

        Args:
          bound: a :class:`~rerokit.bounds.types.Bound` returned by ``rero_dpsgd`` (or
          :func:`rerokit.bounds.certify.certified_rero`).

        Returns:
          The :class:`DpsgdDetails`.

        Raises:
          TypeError: if ``bound`` is not a :class:`~rerokit.bounds.types.Bound`.
          KeyError: naming the key, if the extras lack one that the method always reports.
        """
        if not isinstance(bound, Bound):
            raise TypeError(f"bound must be a rerokit Bound, got {type(bound).__name__}")
        x = bound.extras
        comparisons = None
        if "epsilon" in x:
            comparisons = DpsgdComparisonValues(x.get("rdp_gamma"), x.get("rdp_order"), x["epsilon"], x["delta"])
        mc = None
        if bound.method == "mc":
            mc = MonteCarloEstimate(x["seed"], x["mc_samples"], x["se"])
        return cls(
            method=bound.method, log_gamma=x.get("log_gamma"), lower=x.get("lower"),
            value_discretization_interval=x.get("value_discretization_interval"),
            threshold_epsilon=x.get("threshold_epsilon"), floored=x.get("floored"), note=x.get("note"),
            mu_gdp=x.get("mu_gdp"), comparisons=comparisons, membership=x.get("membership"), monte_carlo=mc,
        )
