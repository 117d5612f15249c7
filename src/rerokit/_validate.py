"""Argument checks shared by the library and the CLI.

Every check raises ``ValueError`` (or ``TypeError`` for a wrong type) whose message names the
parameter and its valid range, e.g. ``noise_multiplier must be a finite number > 0, got nan``.
The CLI prints that message as its one line on stderr and exits with code 2.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = [
    "check_real",
    "check_positive",
    "check_nonnegative",
    "check_probability",
    "check_int",
    "check_choice",
]


def check_real(name: str, value: Any) -> float:
    """Return ``value`` as a finite float, or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


def check_positive(name: str, value: Any) -> float:
    """A finite float > 0."""
    x = _finite(name, value, "> 0")
    if not x > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return x


def check_nonnegative(name: str, value: Any) -> float:
    """A finite float >= 0."""
    x = _finite(name, value, ">= 0")
    if not x >= 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return x


def check_probability(
    name: str, value: Any, *, low_open: bool = True, high_open: bool = False
) -> float:
    """A float in the interval (0, 1] by default; ``low_open``/``high_open`` choose the ends."""
    lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
    rng = f"in {lo}0, 1{hi}"
    x = _finite(name, value, rng)
    ok_lo = x > 0 if low_open else x >= 0
    ok_hi = x < 1 if high_open else x <= 1
    if not (ok_lo and ok_hi):
        raise ValueError(f"{name} must be a number {rng}, got {value!r}")
    return x


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (Python or numpy integer, or an integral float) within [minimum, maximum]."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got bool")
    if isinstance(value, numbers.Integral):
        n = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        n = int(value)
    else:
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if (minimum is not None and n < minimum) or (maximum is not None and n > maximum):
        lo = "" if minimum is None else f">= {minimum}"
        hi = "" if maximum is None else f"<= {maximum}"
        rng = " and ".join(s for s in (lo, hi) if s)
        raise ValueError(f"{name} must be an integer {rng}, got {value!r}")
    return n


def check_choice(name: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    """One of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}")
    return value


def _finite(name: str, value: Any, rng: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number {rng}, got {type(value).__name__}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number {rng}, got {value!r}")
    return x
