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


# --------------------------------------------------------------------------- the lock is the file's
def _holder(path):
    """A second process holding a TrialLog of ``path`` until its stdin closes (no sleeps: it blocks on a read)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import rerokit

    env = dict(os.environ, PYTHONPATH=str(Path(rerokit.__file__).resolve().parents[1]))
    code = ("import sys\nfrom rerokit.experiments.records import TrialLog\n"
            f"log = TrialLog({str(path)!r}, {{'seed': 2}}, resume=True, trials=4)\nprint('ready', flush=True)\n"
            "sys.stdin.read()\nlog.close()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env=env)
    assert p.stdout.readline().strip() == "ready"
    return p


@pytest.mark.parametrize("link", ["symlink", "hardlink", "dotted"])
def test_the_same_file_through_any_name_is_refused_to_a_second_process(tmp_path, link):
    import os

    real = tmp_path / "real.jsonl"
    TrialLog(real, {"seed": 2}, trials=4).close()
    other = tmp_path / "other.jsonl"
    if link == "symlink":
        other.symlink_to(real)
    elif link == "hardlink":
        os.link(real, other)
    else:
        other = tmp_path / "." / "sub" / ".." / "real.jsonl"
        (tmp_path / "sub").mkdir()
    holder = _holder(real)
    try:
        with pytest.raises(ValueError, match="in use by another rerokit run"):
            TrialLog(other, {"seed": 2}, resume=True, trials=4)
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    TrialLog(other, {"seed": 2}, resume=True, trials=4).close()  # released with the holder


def test_a_rewrite_keeps_the_lock_and_nothing_is_left_beside_the_file(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    import rerokit

    p = tmp_path / "r.jsonl"
    log = TrialLog(p, {"seed": 2}, trials=4)
    log.append(1, {"x": 1})
    log.append(0, {"x": 0})
    log.sort()  # an atomic replace: the new inode is locked before the rename
    env = dict(os.environ, PYTHONPATH=str(Path(rerokit.__file__).resolve().parents[1]))
    r = subprocess.run([sys.executable, "-c", "from rerokit.experiments.records import TrialLog\n"
                        f"TrialLog({str(p)!r}, {{'seed': 2}}, resume=True, trials=4)"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode != 0 and "in use by another rerokit run" in r.stderr
    log.close()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["r.jsonl"]  # no .lock, no .tmp


def test_a_finished_file_is_reused_overwrite_replaces_and_an_unfinished_one_names_both_options(tmp_path):
    p = tmp_path / "r.jsonl"
    with TrialLog(p, {"seed": 1}, trials=2) as log:
        log.append(0, {"x": 1})
    with pytest.raises(ValueError, match=r"holds 1 of the 2 trials.*--resume.*--overwrite"):
        TrialLog(p, {"seed": 1}, trials=2, overwrite=False)
    with pytest.raises(ValueError, match=r"other settings.*--resume.*--overwrite"):
        TrialLog(p, {"seed": 3}, trials=2, overwrite=False)
    with TrialLog(p, {"seed": 1}, trials=2, resume=True) as log:
        log.append(1, {"x": 2})
    before = p.read_bytes()
    with TrialLog(p, {"seed": 1}, trials=2) as again:  # finished, same settings: reported again
        assert again.reused and [r["x"] for r in again] == [1, 2]
    assert p.read_bytes() == before
    with TrialLog(p, {"seed": 1}, trials=2, overwrite=True) as fresh:
        assert fresh.done == set() and not fresh.reused
    assert len(p.read_text().splitlines()) == 1
    with pytest.raises(ValueError, match="not both"):
        TrialLog(p, {"seed": 1}, trials=2, resume=True, overwrite=True)


def test_records_that_contradict_the_run_are_refused_on_resume(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps({"kind": "header", "settings": {"seed": 1}}) + "\n"
                 + json.dumps({"kind": "trial", "trial": 0, "guess": 7}) + "\n")
    check = lambda r: None if 0 <= r["guess"] < 5 else f"guess {r['guess']} is outside the prior 0..4"  # noqa: E731
    with pytest.raises(ValueError, match="line 2: trial 0: guess 7 is outside the prior"):
        TrialLog(p, {"seed": 1}, resume=True, validate=check)
