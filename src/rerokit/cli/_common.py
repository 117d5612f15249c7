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


# --------------------------------------------------------------------------- options shared by commands
# One spelling per concept across every command: --noise-multiplier, --sample-rate, --steps,
# --prior-size | --kappa | --log10-kappa, --delta. Old spellings stay accepted for one release
# (hidden from --help) and print a one-line deprecation note.

DEPRECATION_RELEASE = "0.3"


class _DeprecatedSpelling(argparse.Action):
    """Stores into the new option's ``dest`` and notes on stderr that the spelling is deprecated."""

    def __init__(self, option_strings, dest, *, new: str, **kw):
        self.new = new
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        # printed by main() after a successful run, so that an error stays one line
        notes = getattr(namespace, "_deprecation_notes", [])
        notes.append(f"note: {option_string} is deprecated, use {self.new} (the old spelling is accepted until "
                     f"rerokit {DEPRECATION_RELEASE})")
        setattr(namespace, "_deprecation_notes", notes)
        setattr(namespace, self.dest, values)


def add_deprecated_spelling(p: argparse.ArgumentParser, old: str, new: str, **kw) -> None:
    """Accept ``old`` as a hidden alias of the option ``new`` (same dest and type)."""
    dest = new.lstrip("-").replace("-", "_")
    p.add_argument(old, dest=dest, action=_DeprecatedSpelling, new=new, help=argparse.SUPPRESS, **kw)


def add_prior_args(p: argparse.ArgumentParser, *, what: str = "the prior") -> None:
    """--prior-size N | --kappa K | --log10-kappa L (exactly one; see :func:`baseline_from_args`)."""
    p.add_argument("--prior-size", type=int, default=None,
                   help=f"{what}: N >= 1 equally likely candidates (exact match), kappa = 1/N")
    p.add_argument("--kappa", type=float, default=None, help=f"{what} given by its baseline success kappa in (0, 1]")
    p.add_argument("--log10-kappa", type=float, default=None,
                   help="log10 of kappa (<= 0), for baselines that underflow (e.g. -472.015)")


def baseline_from_args(args: argparse.Namespace, *, required: bool = True):
    """The :class:`rerokit.bounds.priors.Baseline` of --prior-size / --kappa / --log10-kappa
    (None when none is given and ``required`` is False). kappa is exactly 1/N for --prior-size N."""
    from rerokit._validate import check_int, check_real
    from rerokit.bounds.priors import resolve_baseline

    given = [n for n in ("prior_size", "kappa", "log10_kappa") if getattr(args, n, None) is not None]
    if not given and not required:
        return None
    if len(given) != 1:
        raise ValueError(
            ("a prior is required: " if not given else "")
            + "give exactly one of --prior-size (integer >= 1), --kappa (in (0, 1]) or --log10-kappa (<= 0)"
            + (f"; got {', '.join('--' + g.replace('_', '-') for g in given)}" if given else "")
        )
    if args.prior_size is not None:
        return resolve_baseline(check_int("prior_size", args.prior_size, minimum=1))
    if args.kappa is not None:
        return resolve_baseline(kappa=args.kappa)
    l10 = check_real("log10_kappa", args.log10_kappa)
    if l10 > 0:
        raise ValueError(f"log10_kappa must be a finite number <= 0, got {args.log10_kappa!r}")
    return resolve_baseline(log_kappa=l10 * math.log(10.0))


def prior_echo(args: argparse.Namespace) -> dict[str, Any]:
    """The prior option the user gave, for the settings echo."""
    if getattr(args, "prior_size", None) is not None:
        return {"prior_size": args.prior_size}
    if getattr(args, "log10_kappa", None) is not None:
        return {"log10_kappa": args.log10_kappa}
    return {}


def add_schedule_args(p: argparse.ArgumentParser, *, steps: bool = True, sample_rate_required: bool = True) -> None:
    """--noise-multiplier S --sample-rate Q [--steps T] of a constant DP-SGD run."""
    p.add_argument("--noise-multiplier", type=float, required=True, help="noise multiplier sigma > 0")
    p.add_argument("--sample-rate", type=float, required=sample_rate_required,
                   help="Poisson sampling rate q in (0, 1] (batch size / dataset size; 1 = full batch)")
    if steps:
        p.add_argument("--steps", type=int, required=True, help="number of steps T >= 1")


def add_delta_arg(p: argparse.ArgumentParser, what: str = "of the reported epsilon") -> None:
    p.add_argument("--delta", type=float, default=1e-5, help=f"delta in (0, 1) {what} (default 1e-5)")


def add_executor_args(p: argparse.ArgumentParser, *, device: bool = False, what: str = "blocks") -> None:
    """--executor local|ray, --workers N, --address HOST:PORT [, --device cpu|cuda|auto] of a trial runner."""
    g = p.add_argument_group("execution (the same results, bit for bit, with any executor and number of workers)")
    g.add_argument("--executor", default="local",
                   help=f"local (default: {what} in this process, 1 thread each; audits run --workers of them at "
                   f"a time) or ray (the {what} on Ray workers, one CPU each; needs pip install \"rerokit[ray]\")")
    g.add_argument("--workers", type=int, default=None,
                   help="Ray workers, or audit blocks run at the same time locally, >= 1 (default: every CPU)")
    g.add_argument("--address", default=None,
                   help="an existing Ray cluster, host:port or ray://host:port (or auto); default: start a local "
                   "one for this run; needs --executor ray")
    if device:
        g.add_argument("--device", default="cpu",
                       help="cpu (default), cuda (a GPU; error without one) or auto (cuda when available): where "
                       "the vectorised engines run (the same random numbers on every device; results agree across "
                       "devices to rounding)")


def executor_from_args(args: argparse.Namespace):
    """The :class:`rerokit.executors.Executor` of --executor/--workers/--address (checked; one-line errors)."""
    from rerokit.executors import get_executor

    return get_executor(args.executor, workers=args.workers, address=args.address)


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
