"""How the report writes numbers, and sentences whose numbers keep their identity.

Precision (documented, the same in the terminal, the HTML card and its ``data-key`` spans):

* :func:`fmt` - :data:`SIGNIFICANT` = 4 significant digits (``0.1942``, ``1.828``, ``9.66e-05``;
  exponent form below 1e-4 and from 1e6), ``inf`` for infinity, ``0`` for zero;
* :func:`fmt_log10` - a number given by its log10 (baselines that underflow, e.g. kappa of
  "any 28x28 image within 32/256 per pixel"): 3 significant digits, ``9.66e-473``;
* :func:`fmt_bracket` - certified brackets with :data:`BRACKET_DIGITS` = 6 significant digits,
  enough to show their width; :func:`fmt_bracket_log10` the same from log10 ends (brackets below
  double range).

A value shown with :func:`fmt` equals the JSON value rounded to 4 significant digits; the HTML
card also carries the full value in ``data-value`` (``repr`` of the float).

A :data:`Sentence` is a tuple of plain strings and :class:`Num` s; the terminal prints its
:func:`plain` text, the HTML card wraps every :class:`Num` with a key in
``<span data-key=... data-value=...>``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence, Union

__all__ = ["SIGNIFICANT", "BRACKET_DIGITS", "Num", "Lead", "Sentence", "fmt", "fmt_log10", "fmt_bracket",
           "fmt_bracket_log10", "plain", "num", "odds", "chance", "key_part", "tpr_point"]

SIGNIFICANT = 4
BRACKET_DIGITS = 6


def fmt(x: Any, digits: int = SIGNIFICANT) -> str:
    """A number with ``digits`` significant digits (see the module docstring).

    Args:
      x: a real number (or None / a string, returned as "n/a" / itself).
      digits: significant digits.

    Returns:
      The formatted text.
    """
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    v = float(x)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    if isinstance(x, int) and abs(x) < 10**15:
        return str(x)
    a = abs(v)
    if 1e-4 <= a < 1e6:
        s = f"{v:.{digits}g}"
        if "e" in s:  # e.g. 1.235e+05 for 123456.7 at 4 digits: write it out instead
            s = f"{v:.{max(0, digits - 1 - int(math.floor(math.log10(a))))}f}"
        return s
    m, e = f"{v:.{digits - 1}e}".split("e")
    if "." in m:
        m = m.rstrip("0").rstrip(".")
    return f"{m}e{e}"


def fmt_log10(log10_value: float, digits: int = 3) -> str:
    """The number 10**log10_value written without underflow, e.g. ``-472.0135`` -> ``9.66e-473``.

    Args:
      log10_value: its base-10 logarithm (finite, or -inf for 0).
      digits: significant digits of the mantissa.

    Returns:
      The formatted text (plain :func:`fmt` when the number is representable as a normal float).
    """
    if log10_value == -math.inf:
        return "0"
    if log10_value > -300:
        return fmt(10.0**log10_value, digits)
    e = math.floor(log10_value)
    m = 10.0 ** (log10_value - e)
    ms = f"{m:.{digits - 1}f}"
    if float(ms) >= 10.0:  # rounding carried into the next power
        e += 1
        ms = f"{m / 10:.{digits - 1}f}"
    ms = ms.rstrip("0").rstrip(".") if "." in ms else ms
    return f"{ms}e-{abs(e):02d}" if e < 0 else f"{ms}e+{e:02d}"


def fmt_bracket_log10(log10_interval: Sequence[float] | None, digits: int = BRACKET_DIGITS) -> str:
    """``[lower, upper]`` of a bracket given by its log10 ends (gamma below double range, e.g. at
    pixel-tolerance baselines), each written by :func:`fmt_log10`: ``[6.17586e-422, 1.07576e-421]``.

    Args:
      log10_interval: (log10 lower, log10 upper) (-inf for a lower end 0), or None.
      digits: significant digits (default :data:`BRACKET_DIGITS`).

    Returns:
      The text, or "" for None.
    """
    if log10_interval is None:
        return ""
    lo, hi = log10_interval
    return f"[{fmt_log10(lo, digits)}, {fmt_log10(hi, digits)}]"


def fmt_bracket(interval: Sequence[float] | None, digits: int = BRACKET_DIGITS) -> str:
    """``[lower, upper]`` with ``digits`` significant digits.

    Args:
      interval: (lower, upper), or None.
      digits: significant digits (default :data:`BRACKET_DIGITS`).

    Returns:
      The text, or "" for None.
    """
    if interval is None:
        return ""
    lo, hi = interval
    return f"[{fmt(lo, digits)}, {fmt(hi, digits)}]"


@dataclass(frozen=True)
class Num:
    """A number inside a sentence: its ``key`` (``data-key`` in HTML; None: not a key number),
    its ``value`` (JSON value) and the ``text`` shown."""

    key: str | None
    value: Any
    text: str
    log10: float | None = None


class Lead(str):
    """The leading words of a sentence (its subject, e.g. "Informed adversary: "), shown bold."""


Sentence = tuple[Union[str, Num], ...]


def num(key: str | None, value: Any, *, log10: float | None = None, digits: int = SIGNIFICANT) -> Num:
    """A :class:`Num` formatted with :func:`fmt` (or :func:`fmt_log10` when ``log10`` is given
    and the value underflows).

    Args:
      key: its ``data-key`` (None: not a key number).
      value: the JSON value.
      log10: its log10, used for the text when the value is 0 or below 1e-300.
      digits: significant digits.

    Returns:
      The :class:`Num`.
    """
    if log10 is not None and (value == 0 or (isinstance(value, float) and abs(value) < 1e-300)):
        return Num(key, value, fmt_log10(log10), log10)
    return Num(key, value, fmt(value, digits), log10)


def plain(sentence: Sentence | str) -> str:
    """The sentence's text (numbers as shown).

    Args:
      sentence: a :data:`Sentence` or a plain string.

    Returns:
      The text.
    """
    if isinstance(sentence, str):
        return sentence
    return "".join(p if isinstance(p, str) else p.text for p in sentence)


def _one_in(log10_p: float, *, upper: bool) -> str:
    """``"1 in N"`` for a probability 10**log10_p < 1/100; N rounded so that 1/N stays an upper
    bound (``upper``: N rounded down) or to the nearest (an exact chance)."""
    n_log = -log10_p
    if n_log < 6:
        n = 10.0**n_log
        n = math.floor(n * (1 + 1e-12)) if upper else round(n)
        return f"1 in {n:,}"
    e = math.floor(n_log)
    m = 10.0 ** (n_log - e)
    m = math.floor(m * 100 * (1 + 1e-12)) / 100 if upper else round(m, 2)
    if m >= 10:
        m, e = m / 10, e + 1
    return f"1 in {m:g}e{e}"


def odds(p: float, log10: float | None = None) -> str:
    """An upper bound on a probability as odds people read (Nanayakkara et al., USENIX Security
    2023: frequencies beat decimals): ``"37 in 100"``, or ``"1 in 2.31e33"`` below 1/100.

    The count is rounded *up* (and N of "1 in N" down), so the text never understates the bound.

    Args:
      p: the probability bound in [0, 1].
      log10: its log10, used when ``p`` underflows.

    Returns:
      The text.
    """
    if log10 is not None and (p == 0 or p < 1e-300):
        return _one_in(log10, upper=True) if log10 > -math.inf else "0 in 100"
    if p >= 0.01:
        return f"{min(100, math.ceil(100 * p - 1e-9))} in 100"
    if p <= 0:
        return "0 in 100"
    return _one_in(math.log10(p), upper=True)


def chance(kappa: float, log10: float | None = None) -> str:
    """An exact probability (a blind guess's) as odds: ``"10"`` (of 100) or ``"1 in 3.4e38"``.

    Args:
      kappa: the probability in (0, 1].
      log10: its log10, used when ``kappa`` underflows.

    Returns:
      ``"<k> in 100"`` (k to two significant digits when not whole) or ``"1 in N"`` below 1/100.
    """
    if log10 is not None and (kappa == 0 or kappa < 1e-300):
        return _one_in(log10, upper=False)
    if kappa >= 0.01:
        k = 100 * kappa
        return f"{round(k) if abs(k - round(k)) < 1e-9 else float(f'{k:.2g}'):g} in 100"
    return _one_in(math.log10(kappa), upper=False)


def key_part(x: float) -> str:
    """A number as part of a JSON key without dots: ``0.01`` -> ``"0p01"``, ``1e-05`` -> ``"1em05"``."""
    return f"{float(x):g}".replace(".", "p").replace("-", "m").replace("+", "")


def tpr_point(m: dict[str, Any], fpr: float) -> dict[str, Any] | None:
    """The ``{"fpr", "tpr", "interval"}`` object of a membership dict's ``tpr_at_fpr`` list at ``fpr``."""
    for pt in m.get("tpr_at_fpr") or ():
        if isinstance(pt, dict) and pt.get("fpr") == fpr:
            return pt
    return None
