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
    lines = ["output fields (one table row each; the same keys with --json; nested fields as parent.key):"]
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


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v == 0 or (1e-4 <= abs(v) < 1e6):
            return f"{v:.6g}"
        return f"{v:.4e}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_fmt(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        if len(v) > 8:
            return f"[{len(v)} values]"
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


def emit(result: dict[str, Any], *, as_json: bool = False, title: str | None = None, file=None,
         summary=None) -> None:
    """Print ``result`` as one JSON object (with the rerokit version) or for a human.

    Args:
      result: the command's JSON-ready dict.
      as_json: print one JSON object.
      title: a heading for the human output.
      file: the stream (default stdout).
      summary: the command's verdict function, ``result -> rerokit.report.terminal.Summary``;
        its verdict and tables are printed by :func:`rerokit.report.terminal.render`.
    """
    out = file or sys.stdout
    result = dict(result)
    result.setdefault("rerokit_version", __version__)
    if as_json:
        print(json.dumps(_jsonable(result), sort_keys=False), file=out)
        return
    if summary is not None:
        from rerokit.report.terminal import render

        s = summary(result)
        render(result, verdict=s.verdict, rows=s.rows, tables=s.tables, notes=s.notes,
               title=title or s.title, file=out)
        return
    rows: list[tuple[str, str]] = []

    def walk(d: dict[str, Any], indent: str) -> None:
        for k, v in d.items():
            if isinstance(v, dict) and v and all(not isinstance(x, dict) for x in v.values()) and len(v) > 3:
                rows.append((indent + k, ""))
                walk(v, indent + "  ")
            elif isinstance(v, dict) and any(isinstance(x, dict) for x in v.values()):
                rows.append((indent + k, ""))
                walk(v, indent + "  ")
            else:
                rows.append((indent + k, _fmt(_jsonable(v))))

    walk(result, "")
    width = max(len(k) for k, _ in rows) if rows else 0
    if title:
        print(title, file=out)
        print("-" * max(len(title), width + 20), file=out)
    for k, v in rows:
        print(f"{k.ljust(width)}  {v}", file=out)
