"""Shared result type of every bound in rerokit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Bound"]


@dataclass(frozen=True)
class Bound:
    """A number rerokit guarantees (``direction="upper"``/``"lower"``) or estimates.

    ``value`` is already on the safe side of any numerical approximation: an upper bound is
    never below the true value, a lower bound never above it. ``error`` says by how much the
    value may exceed (upper) or fall short of (lower) the exact quantity because of the
    numerics; for Monte Carlo estimates (``direction="estimate"``) it is the half-width of the
    confidence interval and ``interval`` holds the interval itself.
    """

    value: float
    error: float
    method: str
    direction: Literal["upper", "lower", "estimate"] = "upper"
    interval: tuple[float, float] | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    def __float__(self) -> float:
        return float(self.value)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (snake_case keys)."""
        d = {
            "value": float(self.value),
            "error": float(self.error),
            "method": self.method,
            "direction": self.direction,
            "inputs": dict(self.inputs),
        }
        if self.interval is not None:
            d["interval"] = [float(self.interval[0]), float(self.interval[1])]
        if self.extras:
            d["extras"] = dict(self.extras)
        return d
