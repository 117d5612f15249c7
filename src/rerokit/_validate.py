"""Argument checks shared by the library and the CLI.

Every check raises ``ValueError`` (or ``TypeError`` for a wrong type) whose message names the
parameter and its valid range, e.g. ``noise_multiplier must be a finite number > 0, got nan``.
The CLI prints that message as its one line on stderr and exits with code 2.
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any, Callable, TypeVar

_T = TypeVar("_T")

__all__ = [
    "check_real",
    "check_positive",
    "check_nonnegative",
    "check_probability",
    "check_int",
    "check_choice",
    "check_bool",
    "check_instance",
    "check_real_array",
    "check_distinct",
    "printable",
    "check_epsilon",
    "check_loop_count",
    "MAX_LOOP_COUNT",
]

MAX_LOOP_COUNT = 10**12
"""Largest count of a loop that trains or optimises (steps, epochs, iterations): 1e12 passes of even
a microsecond each take 11 days; larger counts are refused up front instead of running for ever."""


def check_epsilon(name: str, value: Any) -> float:
    """A float >= 0 where +inf is allowed (an epsilon: no guarantee), or raise naming ``name``.

    Args:
      name: the parameter's name, used in the error message.
      value: a real number (numpy scalars included, bools not).

    Returns:
      ``value`` as a float (an integer beyond the float range is +inf: larger than every epsilon).

    Raises:
      TypeError: if ``value`` is not a real number.
      ValueError: if it is nan or negative.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number >= 0 (inf allowed), got {type(value).__name__}")
    try:
        e = float(value)
    except OverflowError:  # an integer beyond the float range: +inf, or below -1.8e308
        e = math.inf if value > 0 else -math.inf
    if math.isnan(e) or e < 0:
        raise ValueError(f"{name} must be a number >= 0 (inf allowed), got {value!r}")
    return e


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters (ESC of terminal escape sequences, BEL, CR, ...) replaced by
    ``?``, so that a string a user gave is echoed to a terminal as the characters it holds and can
    neither move the cursor, recolour nor clear the screen.

    Args:
      text: the string.
      keep_newlines: keep ``\\n`` (multi-line output); default False.

    Returns:
      The cleaned string (the same object when nothing was replaced).
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or (keep_newlines and ch == "\n") else "?" for ch in text)


def check_real(name: str, value: Any) -> float:
    """Return ``value`` as a finite float, or raise naming ``name``.

    Args:
      name: the parameter's name, used in the error message.
      value: the value to check (a real number; numpy scalars included, bools not).

    Returns:
      ``value`` as a finite float.

    Raises:
      TypeError: if ``value`` is not a real number (a bool counts as not a number).
      ValueError: if it is nan or infinite.
    """
    return _finite(name, value)


def check_positive(name: str, value: Any) -> float:
    """A finite float > 0.

    Args:
      name, value: as in :func:`check_real`.

    Returns:
      ``value`` as a float.

    Raises:
      TypeError: if ``value`` is not a real number (or is a bool).
      ValueError: if it is not finite or not > 0.
    """
    return _finite(name, value, "> 0", lambda x: x > 0)


def check_nonnegative(name: str, value: Any) -> float:
    """A finite float >= 0: as :func:`check_positive`, with 0 allowed (a negative value is the ValueError)."""
    return _finite(name, value, ">= 0", lambda x: x >= 0)


def check_probability(
    name: str, value: Any, *, low_open: bool = True, high_open: bool = False
) -> float:
    """A float in the interval (0, 1] by default; ``low_open``/``high_open`` choose the ends.

    Args:
      name: the parameter's name, used in the error message.
      value: the value to check.
      low_open: exclude 0 (default True); False allows 0.
      high_open: exclude 1 (default False); True requires a value < 1.

    Returns:
      ``value`` as a float.

    Raises:
      TypeError: if ``value`` is not a real number (or is a bool).
      ValueError: if it is not finite or outside the chosen interval.
    """
    lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
    rng = f"in {lo}0, 1{hi}"
    x = _finite(name, value, rng)
    ok_lo = x > 0 if low_open else x >= 0
    ok_hi = x < 1 if high_open else x <= 1
    if not (ok_lo and ok_hi):
        raise ValueError(f"{name} must be a number {rng}, got {value!r}")
    return x


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (Python or numpy integer, or an integral float) within [minimum, maximum].

    Args:
      name: the parameter's name, used in the error message.
      value: the value to check.
      minimum: smallest allowed value; None (default) for no lower limit.
      maximum: largest allowed value; None (default) for no upper limit.

    Returns:
      ``value`` as a Python int.

    Raises:
      TypeError: if ``value`` is a bool, or neither an integer nor a finite integral float.
      ValueError: if it lies outside [minimum, maximum].
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got bool")
    if isinstance(value, numbers.Integral):
        n = int(value)
        if abs(n) > _LARGEST_FLOAT_INT:  # every count meets floating-point arithmetic somewhere
            raise ValueError(f"{name} must be an integer of magnitude below 1.8e308 (a float), got one with "
                             f"{len(str(abs(n)))} digits")
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


def check_loop_count(name: str, value: Any, *, minimum: int = 1) -> int:
    """An integer in [minimum, :data:`MAX_LOOP_COUNT`]: the count of a training or optimisation loop.

    Args:
      name: the parameter's name, used in the error message.
      value: the value to check.
      minimum: smallest allowed value (default 1).

    Returns:
      ``value`` as a Python int.

    Raises:
      TypeError, ValueError: as :func:`check_int`; the message gives the range and why it ends at 1e12.
    """
    n = check_int(name, value, minimum=minimum)
    if n > MAX_LOOP_COUNT:
        raise ValueError(f"{name} must be an integer in [{minimum}, 1e12] (a loop of more passes would not finish: "
                         f"1e12 passes of a microsecond take 11 days), got {_short(value)}")
    return n


def _short(value: Any) -> str:
    """``repr(value)``, with an integer of more than 20 digits as its digit count."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) >= 10**20:
        return f"an integer with {len(str(abs(int(value))))} digits"
    return repr(value)


def check_bool(name: str, value: Any) -> bool:
    """A real ``bool``: numbers, strings, arrays and None (which truthiness would read silently)
    are a ``TypeError`` naming ``name``.

    Args:
      name: the parameter's name, used in the error message.
      value: the value to check.

    Returns:
      ``value`` unchanged.

    Raises:
      TypeError: if ``value`` is not True or False.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return value


def _article(type_name: str) -> str:
    """"a" or "an" before a type name as it is read aloud: acronyms by their first letter's name
    (an MLPSpec, an MIAConfig, a DPSGDSettings), words by their first letter (an EngineOptions)."""
    acronym = len(type_name) > 1 and type_name[:2].isupper()
    return "an" if type_name[0] in ("AEFHILMNORSX" if acronym else "AEIOU") else "a"


def check_instance(name: str, value: Any, cls: type[_T], default: Callable[[], _T] | None = None) -> _T:
    """An option or parameter object of type ``cls`` (e.g. ``options: EngineOptions | None``).

    Args:
      name: the parameter's name, used in the error message.
      value: the value to check.
      cls: the type it must have.
      default: when given, ``value`` None means ``default()`` (the documented default object).

    Returns:
      ``value``, or ``default()`` for None.

    Raises:
      TypeError: ``{name} must be a(n) {cls}, got {type}`` for anything else.
    """
    if value is None and default is not None:
        return default()
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be {_article(cls.__name__)} {cls.__name__}, got {type(value).__name__}")
    return value


def check_choice(name: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    """One of ``choices`` (a string when the choices are strings).

    An array or a number is then a ``TypeError`` naming ``name``, not numpy's "truth value of an
    array is ambiguous".

    Args:
      name: the parameter's name, used in the error message.
      value: the value to check.
      choices: the allowed values.

    Returns:
      ``value`` unchanged.

    Raises:
      TypeError: if the choices are strings and ``value`` is not a string.
      ValueError: if ``value`` is not one of ``choices``.
    """
    opts = ", ".join(map(str, choices))
    if all(isinstance(c, str) for c in choices) and not isinstance(value, str):
        raise TypeError(f"{name} must be one of {opts} (a string); got {type(value).__name__}")
    try:
        ok = value in choices
    except Exception:  # noqa: BLE001 - an object whose == is not a plain bool
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {opts}; got {value!r}")
    return value


def check_distinct(name: str, values: Any) -> list:
    """``values`` as a list with no value twice.

    A repeated cell of a sweep would be run twice and share its result file.

    Args:
      name: the parameter's name, used in the error message.
      values: an iterable of hashable values.

    Returns:
      The values as a list, in order.

    Raises:
      ValueError: if a value occurs twice.
    """
    vals = list(values)
    seen: set = set()
    for v in vals:
        if v in seen:
            raise ValueError(f"{name} must not repeat a value, got {v!r} twice")
        seen.add(v)
    return vals


def check_real_array(name: str, value: Any):
    """``value`` (a real number or an array-like of real numbers) as a float numpy array.

    Strings, bytes, booleans and arrays of non-numbers (strings, objects) are a ``TypeError``
    naming ``name``; ``np.asarray("1", dtype=float)`` would silently accept ``"1"``. Finiteness
    and range are left to the caller (some parameters allow inf).

    Args:
      name: the parameter's name, used in the error message.
      value: a real number or an array-like of real numbers (integer or float dtype).

    Returns:
      A float64 numpy array of ``value``'s shape (0-d for a number).

    Raises:
      TypeError: if ``value`` is a string, bytes or a bool, a ragged sequence, or an array whose
        dtype is not integer or float.
    """
    import numpy as np

    if isinstance(value, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{name} must be a real number or an array of real numbers, got {type(value).__name__}")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # noqa: BLE001 - ragged nested sequences etc.
        raise TypeError(f"{name} must be a real number or an array of real numbers ({exc})") from None
    if arr.dtype.kind == "O" and arr.size and all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                                  for v in arr.flat):
        raise ValueError(f"{name} must hold finite numbers, got an integer too large for a float")
    if arr.dtype.kind not in "iuf":
        what = "booleans" if arr.dtype.kind == "b" else f"dtype {arr.dtype}"
        raise TypeError(f"{name} must be a real number or an array of real numbers, got an array of {what}")
    return arr.astype(float)


_LARGEST_FLOAT_INT = int(sys.float_info.max)


def _finite(name: str, value: Any, rng: str = "", ok: Callable[[float], bool] | None = None) -> float:
    """``value`` as a finite float for which ``ok`` holds; ``rng`` (e.g. "> 0") ends the messages' range."""
    rng = f" {rng}" if rng else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number{rng}, got {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:  # an integer beyond the largest float (about 1.8e308)
        raise ValueError(f"{name} must be a finite number{rng}, got an integer too large for a float "
                         f"({len(str(abs(int(value))))} digits)") from None
    if not math.isfinite(x) or (ok is not None and not ok(x)):
        raise ValueError(f"{name} must be a finite number{rng}, got {value!r}")
    return x
