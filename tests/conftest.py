"""Shared test helpers: run the ``rerokit`` CLI in-process and check its output contract.

``cli.json(*argv)`` runs a command with ``--json`` (added if missing), asserts exit code 0 and
exactly one JSON object on stdout, and returns it; ``cli.error(*argv)`` asserts exit code 2
and exactly one ``error: ...`` line on stderr, and returns that line; ``cli.run(*argv)`` returns
``(exit_code, stdout, stderr)``. Arguments may be given as one list or as separate strings.
"""

from __future__ import annotations

import json
from typing import Any

import pytest


class CliRunner:
    def __init__(self, capsys: pytest.CaptureFixture[str]):
        self.capsys = capsys

    @staticmethod
    def _argv(argv: tuple[Any, ...]) -> list[str]:
        if len(argv) == 1 and isinstance(argv[0], (list, tuple)):
            argv = tuple(argv[0])
        return [str(a) for a in argv]

    def run(self, *argv: Any) -> tuple[int, str, str]:
        from rerokit.cli import main

        code = main(self._argv(argv))
        cap = self.capsys.readouterr()
        return code, cap.out, cap.err

    def json(self, *argv: Any) -> dict[str, Any]:
        return self.json_and_stderr(*argv)[0]

    def json_and_stderr(self, *argv: Any) -> tuple[dict[str, Any], str]:
        args = self._argv(argv)
        if "--json" not in args:
            args.append("--json")
        code, out, err = self.run(args)
        assert code == 0, err
        lines = out.strip().splitlines()
        assert len(lines) == 1, out
        return json.loads(lines[0]), err

    def error(self, *argv: Any) -> str:
        code, _, err = self.run(*argv)
        lines = err.strip().splitlines()
        assert code == 2, err
        assert len(lines) == 1 and lines[0].startswith("error:"), err
        assert "Traceback" not in err
        return lines[0]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> CliRunner:
    """The in-process CLI runner (see the module docstring)."""
    return CliRunner(capsys)
