"""Reading the commands' JSON back (:mod:`rerokit.report.results`): each key by name, a missing one a
ValueError naming it, numbers checked."""

from __future__ import annotations

import math
from typing import Any, Mapping

__all__ = ["LN10", "json_object", "json_key", "json_number", "json_pair", "json_numbers"]

LN10 = math.log(10.0)


LN10 = math.log(10.0)


def json_object(d: Any, where: str) -> Mapping[str, Any]:
    """``d`` when it is a JSON object, else a TypeError naming ``where``."""
    if not isinstance(d, Mapping):
        raise TypeError(f"{where}: expected a JSON object, got {type(d).__name__}")
    return d


def json_key(d: Mapping[str, Any], key: str, where: str) -> Any:
    """``d[key]``, or a ValueError naming the key (a JSON object that is not the command's output)."""
    if key not in json_object(d, where):
        raise ValueError(f"{where}: missing {key!r}")
    return d[key]


def json_number(v: Any, key: str = "value", where: str = "result") -> float | int | None:
    """A number as the CLI's JSON holds it (a float, an int, None for NaN, the strings "inf" / "-inf" for
    infinities, read back as floats); a TypeError naming ``key`` for anything else."""
    if isinstance(v, str) and v in ("inf", "-inf"):
        return float(v)
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
        raise TypeError(f"{where}: {key!r} must be a number, got {v!r}")
    return v


def json_pair(v: Any, key: str, where: str) -> tuple[float, float]:
    """A bracket ``[lower, upper]`` as a tuple (ValueError naming ``key`` for anything else)."""
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise ValueError(f"{where}: {key!r} must be a pair [lower, upper], got {v!r}")
    return (json_number(v[0], key, where), json_number(v[1], key, where))


def json_numbers(d: Mapping[str, Any], keys: tuple[str, ...], where: str) -> dict[str, Any]:
    """``{k: d[k]}`` for every key, each a number (:func:`json_number`); a ValueError naming the first missing one."""
    return {k: json_number(json_key(d, k, where), k, where) for k in keys}
