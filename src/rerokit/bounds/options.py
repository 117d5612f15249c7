"""Parameter objects of the DP-SGD bound (:func:`rerokit.bounds.dpsgd.rero_dpsgd`).

Rarely changed knobs travel as frozen dataclasses instead of keywords, in the style of
dp-accounting's and jax_privacy's configuration objects: the defaults are what every caller wants,
and a caller who needs another value names the object it belongs to::

    from rerokit.bounds import Comparisons, MonteCarlo, Numerics
    rero_dpsgd(1.0, 0.01, 1000, 0.1, method=MonteCarlo(samples=10**5, seed=0))
    rero_dpsgd(1.0, 0.01, 1000, 0.1, comparisons=Comparisons(delta=1e-6, membership=True))
    rero_dpsgd(1.0, 0.01, 1000, 0.1, numerics=Numerics(value_discretization_interval=1e-3))

Every field is validated when the object is built: a bad value raises ``ValueError`` (or
``TypeError`` for a wrong type) whose message names the field and its valid range.
Pure Python (never imports numpy or torch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rerokit._validate import check_bool, check_int, check_positive, check_probability

__all__ = ["Numerics", "MonteCarlo", "Comparisons"]



@dataclass(frozen=True)
class Numerics:
    """Numerical settings of the certified privacy-loss (PLD) engine.

    Neither changes what is certified - only how tight the bracket is and what it costs.

    Attributes:
      value_discretization_interval: the PLD grid step h, a finite number > 0; None (default)
        chooses it automatically (rms privacy-loss sd / 40, within [1e-7, 1e-2]). A smaller step
        gives a narrower certified bracket at a higher cost.
      bracket: compute the certified lower end of the exact method (default True). False skips the
        lower end's compositions (the trivial lower end kappa) and the refinements chosen by the
        bracket's width, so its certified upper value can differ from the bracketed run's (usually
        it is the same; measured up to 1e-3 relative either way at tiny levels and small q).

    Raises:
      ValueError: if ``value_discretization_interval`` is not a finite number > 0.
      TypeError: if a field has the wrong type.
    """

    value_discretization_interval: float | None = None
    bracket: bool = True

    def __post_init__(self) -> None:
        if self.value_discretization_interval is not None:
            object.__setattr__(self, "value_discretization_interval", check_positive(
                "Numerics.value_discretization_interval", self.value_discretization_interval))
        check_bool("Numerics.bracket", self.bracket)


@dataclass(frozen=True)
class MonteCarlo:
    """Hayes et al.'s Algorithm 1, the Monte Carlo *estimate* of gamma (``method=MonteCarlo(...)``).

    A point estimate with a 95% confidence interval, not a guarantee (see
    :mod:`rerokit.bounds.dpsgd_mc`); ``method="mc"`` is ``MonteCarlo()``.

    Attributes:
      samples: the number N of samples, an integer in [1, 1e9] (default 1e6); must be at least
        1/kappa.
      seed: the seed of numpy's generator, an integer >= 0; None (default) draws a fresh one (the
        seed used is recorded in the bound's ``extras``).
      chunk_elements: the memory budget, about this many normal draws per chunk, an integer in
        [1, 2^31] (default 2^21).

    Raises:
      ValueError: if a field is out of range.
      TypeError: if a field is not an integer.
    """

    samples: int = 1_000_000
    seed: int | None = None
    chunk_elements: int = 1 << 21

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples", check_int("MonteCarlo.samples", self.samples, minimum=1, maximum=10**9))
        if self.seed is not None:
            object.__setattr__(self, "seed", check_int("MonteCarlo.seed", self.seed, minimum=0))
        object.__setattr__(self, "chunk_elements", check_int("MonteCarlo.chunk_elements", self.chunk_elements,
                                                             minimum=1, maximum=1 << 31))


@dataclass(frozen=True)
class Comparisons:
    """What :func:`rerokit.bounds.dpsgd.rero_dpsgd` reports beside gamma, in the bound's ``extras``.

    ``comparisons=True`` (the default of ``rero_dpsgd``) is ``Comparisons()``; ``comparisons=False``
    is ``Comparisons(rdp_and_epsilon=False)``.

    Attributes:
      rdp_and_epsilon: add the RDP-based gamma (``rdp_gamma``, ``rdp_order``; Balle et al. 2022 Thm 2
        on the exact integer-order RDP curve) and the certified (epsilon, delta) of the schedule
        (``epsilon``, ``delta``); default True.
      delta: the delta of that epsilon, in (0, 1) (default 1e-5).
      membership: add ``extras["membership"]``, the membership-inference risks read off the same
        composed PLD (certified brackets, whatever the method); default False.

    Raises:
      ValueError: if ``delta`` is not in (0, 1).
      TypeError: if a field has the wrong type.
    """

    rdp_and_epsilon: bool = True
    delta: float = 1e-5
    membership: bool = False

    def __post_init__(self) -> None:
        check_bool("Comparisons.rdp_and_epsilon", self.rdp_and_epsilon)
        object.__setattr__(self, "delta", check_probability("Comparisons.delta", self.delta, high_open=True))
        check_bool("Comparisons.membership", self.membership)

    @classmethod
    def of(cls, comparisons: Any) -> "Comparisons":
        """A :class:`Comparisons` from ``True`` / ``False`` or a :class:`Comparisons` (returned as is).

        Args:
          comparisons: True (``Comparisons()``), False (``Comparisons(rdp_and_epsilon=False)``) or a
            :class:`Comparisons`.

        Returns:
          The :class:`Comparisons`.

        Raises:
          TypeError: if ``comparisons`` is neither.
        """
        if isinstance(comparisons, Comparisons):
            return comparisons
        if isinstance(comparisons, bool):
            return cls(rdp_and_epsilon=comparisons)
        raise TypeError(f"comparisons must be True, False or a rerokit.bounds.Comparisons, "
                        f"got {type(comparisons).__name__}")
