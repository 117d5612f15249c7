"""The one terminal renderer of rerokit: a verdict in plain words first, then tables (rich).

Every human-readable output of the CLI goes through :func:`render` (``rerokit.cli._common.emit``
calls it): the verdict lines of the command (what the numbers mean), then one table of
quantities with their value, certified bracket or confidence interval, method and kind
(certified bound / estimate), then any further tables and notes. Numbers are formatted by
:mod:`rerokit.report.format` (4 significant digits; brackets 6).

A command without its own verdict function gets :func:`generic_rows`: its JSON-ready dict as a
table, with internal field names explained (:data:`FIELD_HELP`) or hidden (:data:`HIDDEN_FIELDS`).

Colour only when the output is a terminal (rich's detection; ``NO_COLOR`` respected); when
writing to a pipe or a file the text is plain and the width :data:`PIPE_WIDTH` columns (or
``COLUMNS``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Sequence, Union

from rerokit.report.format import Lead, Num, Sentence, fmt, plain

__all__ = ["Row", "Table", "Summary", "render", "generic_rows", "FIELD_HELP", "HIDDEN_FIELDS", "PIPE_WIDTH", "NARROW_WIDTH"]

PIPE_WIDTH = 120
"""Text width when stdout is not a terminal (tables are not wrapped at 80 columns in files)."""

NARROW_WIDTH = 100
"""Below this width the main table leaves out its Method column so that the others stay whole."""

HIDDEN_FIELDS = frozenset({
    "rerokit_version", "direction", "floored", "threshold_epsilon", "value_discretization_interval",
    "log10_gamma", "log10_kappa", "lower", "upper", "interval", "error",
})
"""Internal fields left out of the generic table (still in ``--json``): the bound's direction is
in the row's wording, brackets are shown beside the values, the PLD grid and threshold are
implementation details."""

FIELD_HELP: dict[str, str] = {
    "gamma": "reconstruction success bound (gamma)",
    "kappa": "baseline: success of a blind guess (kappa)",
    "advantage": "advantage over the blind guess",
    "epsilon": "epsilon (DP guarantee)",
    "delta": "delta (DP guarantee)",
    "mu_gdp": "mu (Gaussian DP)",
    "mean_target_clipped_fraction": "share of steps where the target's gradient was clipped",
    "ci_low": "95% interval, lower end",
    "ci_high": "95% interval, upper end",
    "success": "measured attack success",
    "trials": "trials",
    "seed": "seed",
    "noise_multiplier": "noise multiplier sigma",
    "sample_rate": "sampling rate q",
    "sampling_rate": "sampling rate q",
    "steps": "steps T",
    "prior_size": "prior size (candidates)",
    "clip": "clipping norm C",
    "rdp_gamma": "gamma from RDP (looser comparison)",
    "rdp_order": "RDP order used",
    "tpr_at_fpr": "membership TPR at each FPR (upper bound)",
    "bayes_accuracy": "Bayes-optimal membership accuracy",
    "prior_membership": "prior probability of membership",
    "mse_lower_bound": "MSE lower bound",
    "expected_mse": "expected MSE",
    "ncc_bound": "NCC upper bound",
    "optimal_rows": "attacker's optimal rows M",
    "min_norm": "smallest record norm r",
    "dim": "data dimension N",
    "target_gamma": "target gamma",
    "method": "method",
}


@dataclass(frozen=True)
class Row:
    """One quantity of a table.

    Attributes:
      label: what the quantity is, in words.
      value: the value as shown, with its relation when it is a bound (``"<= 0.1942"``), or a
        :class:`~rerokit.report.format.Num` / sentence.
      detail: certified bracket or confidence interval (text).
      method: how it was computed (paper, theorem, algorithm).
      status: "certified upper bound", "estimate (95% CI)", ...
      section: optional group heading shown above the first row of a group.
    """

    label: str
    value: Union[str, Num, Sentence]
    detail: str = ""
    method: str = ""
    status: str = ""
    section: str | None = None


@dataclass(frozen=True)
class Table:
    """A further table: ``title``, ``columns`` and ``rows`` of texts (or Nums)."""

    title: str | None
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class Summary:
    """What a command's verdict function returns: verdict lines, the main rows, further tables, notes."""

    verdict: tuple[Union[str, Sentence], ...] = ()
    rows: tuple[Row, ...] = ()
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()
    title: str | None = None
    glossary: tuple[tuple[str, str], ...] = ()


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, Num):
        return v.text
    if isinstance(v, tuple):
        return plain(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return fmt(v)
    return "" if v is None else str(v)


def _console(file: Any, color: bool | None, width: int | None):
    from rich.console import Console

    out = file if file is not None else sys.stdout
    is_tty = bool(getattr(out, "isatty", lambda: False)())
    if color is None:
        color = is_tty and not os.environ.get("NO_COLOR")
    if width is None and not is_tty:
        try:
            width = int(os.environ.get("COLUMNS", PIPE_WIDTH))
        except ValueError:
            width = PIPE_WIDTH
    return Console(file=out, force_terminal=bool(color), no_color=not color, color_system="auto" if color else None,
                   width=width, highlight=False, emoji=False, markup=False, soft_wrap=False)


def render(
    result: dict[str, Any] | None = None,
    *,
    verdict: Sequence[Union[str, Sentence]] = (),
    rows: Sequence[Row] = (),
    tables: Sequence[Table] = (),
    notes: Sequence[str] = (),
    title: str | None = None,
    file: Any = None,
    color: bool | None = None,
    width: int | None = None,
    glossary: Sequence[tuple[str, str]] = (),
) -> None:
    """Print a verdict, a table of quantities, further tables and notes.

    Args:
      result: the command's JSON-ready dict; used only when ``rows`` is empty, to build the
        table with :func:`generic_rows`.
      verdict: sentences in plain words, printed first (one per line, as bullets).
      rows: the main table (see :class:`Row`); empty columns are dropped.
      tables: further tables (e.g. "what would change it").
      notes: short lines printed last (assumptions, files written).
      title: a heading printed above everything.
      file: the stream (default ``sys.stdout`` at call time).
      color: force colour on/off (default: only when ``file`` is a terminal).
      width: text width (default: the terminal's, or :data:`PIPE_WIDTH` when not a terminal).
        Below :data:`NARROW_WIDTH` columns the table drops its Method column (the Kind column is
        never cut; ``--json`` and the HTML card keep every method).
      glossary: ``(symbol, meaning)`` pairs printed last, as one wrapped paragraph.

    Returns:
      None.
    """
    from rich import box
    from rich.table import Table as RTable
    from rich.text import Text

    con = _console(file, color, width)
    if title:
        con.print(Text(title, style="bold"))
    for line in verdict:
        t = Text("\u2022 ", style="bold")
        if isinstance(line, tuple):
            for part in line:
                if isinstance(part, Num):
                    t.append(part.text, style="bold cyan")
                elif isinstance(part, Lead):
                    t.append(str(part), style="bold")
                else:
                    t.append(part)
        else:
            t.append(str(line))
        con.print(t)
    if not rows and result is not None and not tables and not verdict:
        rows = generic_rows(result)
    if rows:
        if verdict or title:
            con.print()
        cols = [("Quantity", "label"), ("Value", "value"), ("Bracket / interval", "detail"), ("Method", "method"),
                ("Kind", "status")]
        narrow = con.width < NARROW_WIDTH
        used = [(h, a) for h, a in cols if a in ("label", "value") or (any(_text(getattr(r, a)) for r in rows)
                                                                      and not (narrow and a == "method"))]
        tab = RTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        longest = {a: max(len(_text(getattr(r, a))) for r in rows) for _, a in used}
        for h, a in used:
            # labels keep a readable width; a short value column never wraps (numbers), a long one folds;
            # the kind column (certified / estimate / exact ...) is one short word: never fold it
            tab.add_column(h, overflow="fold", no_wrap=(a == "value" and longest[a] <= 24) or a == "status",
                           min_width=(min(28 if not narrow else 20, longest[a]) if a == "label" else
                                      max(longest[a], len(h)) if a == "status" else None),
                           max_width=30 if a in ("method", "detail") else None,
                           justify="left", style="cyan" if a == "value" else None)
        for r in rows:
            if r.section:
                tab.add_row(*([Text(r.section, style="bold")] + [""] * (len(used) - 1)))
            tab.add_row(*[_text(getattr(r, a)) for _, a in used])
        con.print(tab)
    for t in tables:
        con.print()
        if t.title:  # above the table, wrapped at the page width (a rich title wraps at the table's)
            con.print(Text(t.title, style="bold"))
        tab = RTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        for c in t.columns:
            tab.add_column(c, overflow="fold")
        for r in t.rows:
            tab.add_row(*[_text(x) for x in r])
        con.print(tab)
    if notes:
        con.print()
        for n in notes:
            con.print(Text(n, style="dim"))
    if glossary:
        from rerokit.report.glossary import SHORT

        con.print()
        t = Text("Symbols: ", style="bold")
        for i, (k, v) in enumerate(glossary):
            t.append(("; " if i else "") + f"{k} ", style="bold")
            t.append(SHORT.get(k, v))
        t.append(" (the HTML card explains each in full).")
        con.print(t, style="dim")


def _label(key: str) -> str:
    return FIELD_HELP.get(key, key.replace("_", " "))


def generic_rows(result: dict[str, Any], *, hidden: Iterable[str] = HIDDEN_FIELDS) -> tuple[Row, ...]:
    """Rows of a JSON-ready dict for commands without a verdict function.

    Nested dicts become sections; internal fields (:data:`HIDDEN_FIELDS`) are left out; a key
    with an ``*_interval`` partner shows the bracket beside its value; names are explained by
    :data:`FIELD_HELP` (else shown with spaces).

    Args:
      result: the dict.
      hidden: keys to leave out.

    Returns:
      The rows.
    """
    hide = set(hidden)
    out: list[Row] = []

    def short(v: Any) -> str:
        if isinstance(v, dict):
            return ", ".join(f"{k}={short(x)}" for k, x in v.items())
        if isinstance(v, (list, tuple)):
            if len(v) > 8:
                return f"[{len(v)} values]"
            return "[" + ", ".join(short(x) for x in v) + "]"
        return _text(v)

    def walk(d: dict[str, Any], section: str | None) -> None:
        from rerokit.report.format import fmt_bracket

        first = True
        nested = []
        # a confidence interval given as ci_low / ci_high belongs to the level's main metric
        main = next((k for k in ("success", "mse", "value", "success_rate") if k in d), None)
        ci = [d.get("ci_low"), d.get("ci_high")] if "ci_low" in d and "ci_high" in d and main else None
        for k, v in d.items():
            if k in hide or k == "note" or k.endswith("_interval") or k.endswith("_intervals") \
                    or (ci and k in ("ci_low", "ci_high")):
                continue
            if k.endswith("_ci") and k[:-3] in d:
                continue  # shown beside its metric
            if isinstance(v, dict) and v and len(v) > 2:
                nested.append((k, v))
                continue
            iv = d.get(f"{k}_interval") or d.get(f"{k}_ci") or (d.get("interval") if k in ("gamma", "value") else None)
            if k == main and ci:
                iv = ci
            detail = ""
            if isinstance(iv, (list, tuple)) and len(iv) == 2 and all(isinstance(x, (int, float)) for x in iv):
                detail = ("95% CI " if (k == main and ci) or f"{k}_ci" in d else "") + fmt_bracket(iv)
            out.append(Row(_label(k), short(v), detail, section=section if first else None))
            first = False
        for k, v in nested:
            walk(v, _label(k))

    walk(result, None)
    return tuple(out)
