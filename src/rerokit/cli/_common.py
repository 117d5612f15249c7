"""Output helpers shared by all CLI commands: a readable table or one JSON object."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from rerokit import __version__


class CliError(Exception):
    """A usage error: printed as one line, exit code 2."""


def describe(text: str, width: int = 92) -> str:
    """A help description from plain text: paragraphs (separated by blank lines) filled to
    ``width``; a paragraph whose lines start with "  " is kept as it is (a formula or a list)."""
    import textwrap

    out = []
    for para in textwrap.dedent(text).strip().split("\n\n"):
        if para.startswith("  "):
            out.append(para)
        else:
            out.append(textwrap.fill(" ".join(para.split()), width, break_on_hyphens=False))
    return "\n\n".join(out)


def output_fields(fields: list[tuple[str, str]], *, width: int = 92) -> str:
    """The ``--help`` epilog listing every output field (table row / JSON key) with its meaning."""
    import textwrap

    fields = [*fields, ("rerokit_version", "version of rerokit that computed the result")]
    kw = min(24, max(len(k) for k, _ in fields))
    lines = ["output fields (the keys of --json, nested ones as parent.key; the table shows them after a verdict "
             "in plain words, with their method and whether each is certified or an estimate):"]
    for k, d in fields:
        wrapped = textwrap.wrap(" ".join(d.split()), max(30, width - kw - 4), break_on_hyphens=False) or [""]
        if len(k) > kw:
            lines.append(f"  {k}")
            lines.extend(" " * (kw + 4) + w for w in wrapped)
        else:
            lines.append(f"  {k.ljust(kw)}  {wrapped[0]}")
            lines.extend(" " * (kw + 4) + w for w in wrapped[1:])
    return "\n".join(lines)


def help_kw(description: str, fields: list[tuple[str, str]]) -> dict:
    """``add_parser`` keyword arguments: a plain description and the output-fields epilog."""
    return {"description": describe(description), "epilog": output_fields(fields),
            "formatter_class": argparse.RawDescriptionHelpFormatter}


def add_json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item) and getattr(x, "ndim", 1) == 0:
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def emit(result: dict[str, Any], *, as_json: bool = False, title: str | None = None, file=None,
         summary=None, command: str | None = None) -> None:
    """Print ``result`` as one JSON object (with the rerokit version) or for a human.

    The human output is one renderer for every command (:func:`rerokit.report.terminal.render`):
    the command's verdict in plain words first, then a table of its numbers (value, bracket or
    interval, method, certified or estimate), then notes.

    Args:
      result: the command's JSON-ready dict.
      as_json: print one JSON object (keys unchanged).
      title: a heading for the human output.
      file: the stream (default stdout).
      summary: the command's verdict function ``result -> rerokit.report.terminal.Summary``; default
        the one registered for ``command`` in :data:`rerokit.report.verdicts.VERDICTS` (or the
        generic one).
      command: "group subcommand" (e.g. "bound dpsgd"), to look the verdict function up.
    """
    out = file or sys.stdout
    result = dict(result)
    result.setdefault("rerokit_version", __version__)
    if as_json:
        print(json.dumps(_jsonable(result), sort_keys=False), file=out)
        return
    from rerokit.report.terminal import render

    data = _jsonable(result)
    if summary is not None:
        s = summary(data)
    else:
        from rerokit.report.verdicts import summary_for

        s = summary_for(command or "", data)
    render(data, verdict=s.verdict, rows=s.rows, tables=s.tables, notes=s.notes, title=title or s.title, file=out)
