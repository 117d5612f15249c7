"""Resumable JSONL logs: an interrupted run keeps finished trials and refuses other settings."""

import json

import pytest

from rerokit.experiments.records import TrialLog


def test_append_and_resume(tmp_path):
    p = tmp_path / "r.jsonl"
    log = TrialLog(p, {"seed": 1})
    log.append(0, {"success": True})
    log.append(1, {"success": False})
    with open(p, "a") as f:
        f.write('{"kind": "trial", "tri')  # a trial cut mid-write
    again = TrialLog(p, {"seed": 1}, resume=True)
    assert again.done == {0, 1}
    assert [r["success"] for r in again] == [True, False]
    assert all(json.loads(line) for line in p.read_text().splitlines())


def test_refuses_overwrite_and_other_settings(tmp_path):
    p = tmp_path / "r.jsonl"
    TrialLog(p, {"seed": 1}).append(0, {"x": 1})
    with pytest.raises(ValueError, match="exists"):
        TrialLog(p, {"seed": 1})
    with pytest.raises(ValueError, match="other settings"):
        TrialLog(p, {"seed": 2}, resume=True)
