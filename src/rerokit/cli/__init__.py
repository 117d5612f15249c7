"""The ``rerokit`` command line.

Layout: one module per command group member under ``rerokit.cli``; each defines
``register(subparsers)`` adding its sub-commands, whose handler (``func``) takes the parsed
namespace and returns a JSON-ready dict (printed as a table, or as one JSON object with
``--json``). Modules import heavy libraries (scipy, torch) inside their handlers only, so that
``rerokit bound ...`` starts fast.

Bad input: every ``ValueError``/``TypeError`` raised by the library, every ``OSError`` (a path
that cannot be read or written) and every argparse error is printed as one line on stderr, and
the exit code is 2. A block that fails on a Ray worker for another reason
(:class:`rerokit.executors.BlockFailed`: a bug, a worker that died) is one line naming the block,
exit code 1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import sys
from typing import Sequence

from rerokit import __version__
from rerokit.cli._common import CliError, emit
from rerokit.executors import BlockFailed

# group -> modules that register sub-commands in it. A module not yet present is skipped.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "bound": (
        "rerokit.cli.bound_dpsgd",
        "rerokit.cli.bound_informed",
        "rerokit.cli.bound_uninformed",
        "rerokit.cli.bound_mse",
        "rerokit.cli.bound_tradeoff",
        "rerokit.cli.bound_pure_dp",
    ),
    "kappa": ("rerokit.cli.kappa",),
    "calibrate": ("rerokit.cli.calibrate", "rerokit.cli.calibrate_uninformed"),
    "attack": (
        "rerokit.cli.attack_analytic",
        "rerokit.cli.attack_glm",
        "rerokit.cli.attack_reconn",
    ),
    "audit": ("rerokit.cli.audit", "rerokit.cli.audit_onerun"),
    "experiment": (
        "rerokit.cli.experiment",
        "rerokit.cli.experiment_hayes",
        "rerokit.cli.experiment_hayes_more",
        "rerokit.cli.experiment_fil",
        "rerokit.cli.experiment_reconn",
        "rerokit.cli.experiment_bounds",
        "rerokit.cli.experiment_balle",
        "rerokit.cli.experiment_uninformed",
        "rerokit.cli.experiment_guo",
    ),
}

# top-level commands without a group (``rerokit report``): module -> registers on the top level
TOP_COMMANDS: tuple[str, ...] = ("rerokit.cli.report",)

GROUP_HELP = {
    "bound": "formal bounds on reconstruction success or error",
    "kappa": "baseline success kappa of a prior",
    "calibrate": "noise multiplier or steps for a target reconstruction risk",
    "attack": "run a reconstruction attack",
    "audit": "attack DP training and compare with the bound",
    "experiment": "reproduce a paper figure (PNG + CSV)",
}


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message and exit code 2."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        raise CliError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rerokit",
        description="Reconstruction risk of differentially private training: bounds and attacks.",
    )
    parser.add_argument("--version", action="version", version=f"rerokit {__version__}")
    groups = parser.add_subparsers(dest="group", metavar="COMMAND", parser_class=_Parser)
    for group, modules in COMMAND_MODULES.items():
        present = [m for m in modules if importlib.util.find_spec(m) is not None]
        if not present:
            continue
        gp = groups.add_parser(group, help=GROUP_HELP[group], description=GROUP_HELP[group])
        sub = gp.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)
        for mod in present:
            importlib.import_module(mod).register(sub)
    for mod in TOP_COMMANDS:
        if importlib.util.find_spec(mod) is not None:
            importlib.import_module(mod).register(groups)
    return parser


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (whitespace runs, newlines included, become one space)."""
    from rerokit._validate import printable

    msg = printable(" ".join(str(exc).split()))  # an echoed user string cannot drive the terminal
    return msg or type(exc).__name__


@contextlib.contextmanager
def _held_warnings():
    """Record Python warnings and log records (WARNING and above) of the block instead of printing
    them; yields the list of their one-line, printable, de-duplicated texts (filled on exit)."""
    import logging
    import warnings

    from rerokit._validate import printable

    lines: list[str] = []
    records: list[str] = []

    class _Hold(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                records.append(f"{record.name}: {record.getMessage()}")
            except Exception:  # noqa: BLE001 - a record whose message cannot be formatted
                records.append(f"{record.name}: {record.msg!r}")

    root = logging.getLogger()
    hold = _Hold(logging.WARNING)
    root.addHandler(hold)
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield lines
    finally:
        root.removeHandler(hold)
        seen: set[str] = set()
        for text in [f"{w.category.__name__}: {w.message}" for w in caught] + records:
            text = printable(" ".join(str(text).split()))
            if text not in seen:
                seen.add(text)
                lines.append(text)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread: unwinds like Ctrl-C (finally blocks close executors, a
    local Ray cluster and result files) instead of the process dying where it stands."""


def _on_sigterm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise _Terminated()


@contextlib.contextmanager
def _sigterm_unwinds():
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    with _sigterm_unwinds():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        func = getattr(args, "func", None)
        if func is None:
            # `rerokit` or `rerokit bound` alone: show the relevant help.
            target = parser
            if getattr(args, "group", None):
                target = parser._subparsers._group_actions[0].choices[args.group]  # type: ignore[union-attr]
            target.print_help(sys.stderr)
            return 2
        # stdout belongs to the result (one JSON object with --json): anything the work prints there -
        # a --model-factory module that prints on import, a library's banner - goes to stderr instead.
        # Warnings (numpy's overflow RuntimeWarnings, dp-accounting's absl log lines) are held back: a
        # refusal stays one line; after a result each is printed once as one "warning:" line.
        with contextlib.redirect_stdout(sys.stderr), _held_warnings() as held:
            result = func(args)
        if result is not None:
            command = " ".join(x for x in (getattr(args, "group", None), getattr(args, "command", None)) if x)
            emit(result, as_json=getattr(args, "json", False), title=getattr(args, "title", None),
                 summary=getattr(args, "summary", None), command=command)
        for note in getattr(args, "_deprecation_notes", ()):
            print(note, file=sys.stderr)
        for line in held:
            print(f"warning: {line}", file=sys.stderr)
        return 0
    except (CliError, ValueError, TypeError, OSError) as exc:
        # OSError: a path that cannot be read or written (missing, a directory, no permission)
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except ArithmeticError as exc:
        # OverflowError / ZeroDivisionError / FloatingPointError: valid-looking but extreme values
        # (e.g. sigma = 1e-300) that a library function did not reject; still one line, exit 2
        print(f"error: {type(exc).__name__} for these inputs ({_one_line(exc)}); the values are too extreme "
              "to compute in double precision", file=sys.stderr)
        return 2
    except MemoryError as exc:
        # a size no up-front estimate caught (the estimates in rerokit._resources refuse the known ones)
        print(f"error: not enough memory for these inputs ({_one_line(exc)}); use smaller sizes", file=sys.stderr)
        return 2
    except BlockFailed as exc:
        # a block failed on a Ray worker for another reason than bad input (a bug, a dead worker):
        # finished blocks are in the results file; one line, exit code 1
        print(f"error: {_one_line(exc)} (finished blocks are kept; fix the cause and use --resume)", file=sys.stderr)
        return 1
    except RuntimeError as exc:
        if "allocate" not in str(exc):  # torch's out-of-memory is a RuntimeError; anything else is a bug
            raise
        print(f"error: not enough memory for these inputs ({_one_line(exc)}); use smaller sizes", file=sys.stderr)
        return 2
    except _Terminated:
        print("error: terminated (SIGTERM; results written so far are kept; use --resume)", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("error: interrupted (results written so far are kept; use --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
