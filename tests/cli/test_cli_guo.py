"""CLI: the warning that per-sample FIL can itself leak (Guo et al. 2022, Sec. 5, footnote 2) is
printed wherever per-sample dFIL is printed, as ``note`` in the JSON and a line of human output;
``rerokit experiment guo-fig5`` writes its files and resumes."""

from __future__ import annotations

import json

import pytest

from rerokit.cli import main
from rerokit.experiments.guo_dfil import FIL_LEAK_NOTE

FIL_COMMANDS = [
    ["bound", "fil", "--noise-std", "0.01"],
    ["bound", "fil", "--dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.05", "--steps", "2", "--coords", "1",
     "--hidden", "4"],
    ["experiment", "guo-dfil-hist", "--out-dir", "{tmp}/gh", "--bins", "5"],
    ["experiment", "fil-glm", "--out-dir", "{tmp}/fg", "--draws", "2", "--no-progress"],
]


@pytest.mark.parametrize("argv", FIL_COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_per_sample_dfil_output_carries_the_leak_warning(argv, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main([*argv, "--json"]) in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert FIL_LEAK_NOTE in d["note"]
    assert main(argv) in (0, None)
    human = " ".join(capsys.readouterr().out.split())  # the renderer wraps long lines
    assert "can leak information about it" in human and "footnote 2" in human


def test_guo_fig5_command_writes_and_resumes(tmp_path, capsys):
    argv = ["experiment", "guo-fig5", "--out-dir", str(tmp_path), "--noise-multipliers", "1,8", "--steps", "1",
            "--hidden", "0", "--train-size", "10", "--coords", "2", "--no-progress", "--json"]
    assert main(argv) in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert [c["sigma"] for c in d["cells"]] == [1.0, 8.0]
    assert d["settings"]["seed"] == 0 and d["note"] == FIL_LEAK_NOTE
    for f in ("guo_fig5.csv", "guo_fig5.png", "guo_fig5.jsonl"):
        assert (tmp_path / f).exists()
    assert main([*argv, "--resume"]) in (0, None)
    assert json.loads(capsys.readouterr().out)["cells"] == d["cells"]
    assert main([*argv[:-1], "--noise-multipliers", "1,x"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
