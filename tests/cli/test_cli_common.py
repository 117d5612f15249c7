"""The CLI's contract: one JSON object with --json, one-line errors with exit code 2."""

import json
import subprocess
import sys

from rerokit.cli import main


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err


def test_unknown_command_is_one_line_exit_2(capsys):
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err


def test_version_runs_without_torch():
    # The CLI's parser must not import torch (bounds commands start fast).
    code = "import sys, rerokit.cli as c; c.build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_emit_json_roundtrip(capsys):
    from rerokit.cli._common import emit

    emit({"gamma": 0.5, "nested": {"a": 1}}, as_json=True)
    d = json.loads(capsys.readouterr().out)
    assert d["gamma"] == 0.5 and d["nested"] == {"a": 1} and "rerokit_version" in d
