"""The values of a sweep option (epsilons, sample rates, prior sizes, ...): each checked, at least one, no repeats."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from rerokit._validate import check_distinct


def sweep_values(name: str, values: Iterable[Any], check: Callable[[str, Any], Any]) -> list:
    """``values`` each checked by ``check(name, value)``, non-empty and distinct.

    Args:
      name: the option's name (used in every message).
      values: the sweep's values.
      check: a ``rerokit._validate`` check, e.g. ``check_positive`` (or a partial of ``check_int``).

    Returns:
      The checked values, in order.

    Raises:
      ValueError: a value fails ``check``, there is none, or one repeats.
      TypeError: a value has the wrong type.
    """
    out = [check(name, v) for v in values]
    if not out:
        raise ValueError(f"{name} must hold at least one value")
    check_distinct(name, out)
    return out


def check_prior_size(name: str, value: Any) -> int:
    """A uniform prior size: an integer >= 2 (for :func:`sweep_values`)."""
    from rerokit._validate import check_int

    return check_int(name, value, minimum=2)
