"""Hostile input: every file option, crafted resume files, resource bombs, categorical options,
unexplained infinities, help text, and two processes on one result file.

The contract (project standard): bad input gets exit code 2 and exactly one line on stderr that
names the option or the file - never a traceback, never a silent NaN or inf, never minutes of
work first. Most cases run ``rerokit.cli.main`` in-process; the lock and kill-and-resume cases
run real subprocesses (``python -m rerokit.cli``), stopped with SIGSTOP while they hold the lock,
so that the second process is refused deterministically, then interrupted (SIGINT) or killed
(SIGKILL) and resumed.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import rerokit
from rerokit.cli import main

_POLL = threading.Event()  # the polling clock of the waits below: never set, so wait(t) returns after t

SRC = str(Path(rerokit.__file__).resolve().parents[1])


# --------------------------------------------------------------------------------------------- helpers
def refused(capsys, argv, *names, seconds: float = 30.0) -> str:
    """Run ``argv``: exit 2, one stderr line starting with ``error:`` that contains every ``names``
    (option or file), no traceback, within ``seconds``. Returns the line."""
    t = time.monotonic()
    code = main([str(a) for a in argv])
    took = time.monotonic() - t
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert "Traceback" not in cap.err + cap.out
    assert code == 2, f"{argv}: exit {code}, stderr {cap.err!r}"
    assert len(lines) == 1 and lines[0].startswith("error:"), f"{argv}: stderr {cap.err!r}"
    for n in names:
        assert str(n) in lines[0], f"{argv}: {n!r} not named in {lines[0]!r}"
    assert took < seconds, f"{argv}: refused only after {took:.1f} s"
    return lines[0]


def ok_json(capsys, argv) -> dict:
    code = main([*map(str, argv), "--json"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    return json.loads(cap.out)


def records(path) -> tuple[dict, list[dict]]:
    lines = [json.loads(s) for s in Path(path).read_text().splitlines()]
    return lines[0], lines[1:]


ANALYTIC = ["attack", "analytic", "--noise-multiplier", "0.5", "--clip", "1", "--targets", "4", "--seed", "2",
            "--backend", "vmap", "--no-progress"]
PRIOR = ["audit", "prior-aware", "--noise-multiplier", "1", "--trials", "3", "--steps", "2", "--n-known", "10",
         "--hidden", "4", "--prior-size", "2", "--chunk-size", "1", "--seed", "1", "--no-progress"]


@pytest.fixture
def files(tmp_path):
    """Damaged and odd files: name -> path."""
    d = {}
    d["dir"] = tmp_path / "adir"
    d["dir"].mkdir()
    d["empty"] = tmp_path / "empty.npy"
    d["empty"].write_bytes(b"")
    d["text"] = tmp_path / "text.npy"
    d["text"].write_text("1 2 3\n4 5 6\n")
    d["binary"] = tmp_path / "binary.bin"
    d["binary"].write_bytes(bytes(range(256)) * 8)
    good = tmp_path / "good.npy"
    np.save(good, np.random.default_rng(0).uniform(size=(40, 3)))
    d["truncated"] = tmp_path / "truncated.npy"
    d["truncated"].write_bytes(good.read_bytes()[:200])
    d["npz2"] = tmp_path / "two.npz"
    np.savez(d["npz2"], a=np.zeros((4, 2)), b=np.ones(3))
    d["npz_truncated"] = tmp_path / "cut.npz"
    d["npz_truncated"].write_bytes(d["npz2"].read_bytes()[:150])
    d["pickle"] = tmp_path / "objects.npy"
    np.save(d["pickle"], np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    d["missing"] = tmp_path / "nothing-here.npy"
    d["devnull"] = Path(os.devnull)
    d["good"] = good
    return d


# --------------------------------------------------------------------------------------------- kappa samples
@pytest.mark.parametrize("kind", ["dir", "empty", "text", "binary", "truncated", "npz2", "npz_truncated", "pickle",
                                  "missing", "devnull"])
def test_kappa_samples_bad_file(kind, files, capsys):
    p = files[kind]
    refused(capsys, ["kappa", "samples", "--samples", p, "--metric", "l2", "--eta", "0.1"], "samples", p)


def test_kappa_samples_empty_path_and_npz_with_one_array(files, tmp_path, capsys):
    refused(capsys, ["kappa", "samples", "--samples", ""], "samples", "empty")
    one = tmp_path / "one.npz"
    np.savez(one, x=np.load(files["good"]))
    a = ok_json(capsys, ["kappa", "samples", "--samples", one, "--metric", "l2", "--eta", "0.1"])
    b = ok_json(capsys, ["kappa", "samples", "--samples", files["good"], "--metric", "l2", "--eta", "0.1"])
    assert a["kappa"] == b["kappa"] and a["n_samples"] == 40


# --------------------------------------------------------------------------------------------- --data-path
DATA_COMMANDS = [
    ["bound", "uninformed", "--noise-multiplier", "1", "--dataset", "mnist", "--mse-threshold", "0.1"],
    ["bound", "fil", "--noise-std", "1", "--dataset", "cifar10"],
    ["audit", "prior-aware", "--noise-multiplier", "1", "--dataset", "mnist", "--trials", "1", "--no-progress"],
    ["attack", "analytic", "--noise-multiplier", "1", "--clip", "1", "--targets", "1", "--seed", "0", "--dataset",
     "mnist", "--no-progress"],
    ["attack", "glm", "--dataset", "cifar10"],
    ["attack", "reconn", "--dataset", "mnist", "--no-png", "--quiet"],
]


@pytest.mark.parametrize("kind", ["empty", "text", "binary", "truncated", "npz_truncated", "missing", "dir"])
@pytest.mark.parametrize("argv", DATA_COMMANDS, ids=[" ".join(a[:2]) for a in DATA_COMMANDS])
def test_data_path_garbage(argv, kind, files, capsys):
    p = files[kind]
    refused(capsys, [*argv, "--data-path", p], p)


@pytest.mark.parametrize("argv", DATA_COMMANDS, ids=[" ".join(a[:2]) for a in DATA_COMMANDS])
def test_data_path_empty_string(argv, capsys):
    refused(capsys, [*argv, "--data-path", ""], "data_path")


def test_data_path_truncated_mnist_idx(tmp_path, capsys):
    import gzip
    import struct

    d = tmp_path / "mnist"
    d.mkdir()
    head = struct.pack(">IIII", 0x803, 60000, 28, 28)
    (d / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(head + b"\0" * 100))  # promises 60000 images
    (d / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(struct.pack(">II", 0x801, 60000) + b"\0" * 10))
    for argv in DATA_COMMANDS[:3]:
        refused(capsys, [*argv[:argv.index("--dataset")], "--dataset", "mnist",
                         *argv[argv.index("--dataset") + 2:], "--data-path", d], "mnist")


# --------------------------------------------------------------------------------------------- output paths
OUT_FILE_COMMANDS = [
    (ANALYTIC, "--out", "out"),
    (PRIOR, "--out", "out"),
    (["attack", "reconn", "--shadow-models", "4", "--fixed-size", "10", "--targets", "2", "--epochs", "1",
      "--reconstructor-epochs", "1", "--quiet", "--no-png"], "--out", "out"),
    (["attack", "reconn", "--shadow-models", "4", "--fixed-size", "10", "--targets", "2", "--epochs", "1",
      "--reconstructor-epochs", "1", "--quiet"], "--png", "png"),
]


@pytest.mark.parametrize("kind", ["empty-string", "dir", "devnull", "parent-is-file"])
@pytest.mark.parametrize("argv, opt, name", OUT_FILE_COMMANDS, ids=[f"{a[1]}{o}" for a, o, _ in OUT_FILE_COMMANDS])
def test_output_file_paths(argv, opt, name, kind, files, capsys, monkeypatch):
    import rerokit.attacks.reconn as R
    import rerokit.experiments.audit as A

    # nothing may be trained before a path is refused
    monkeypatch.setattr(A, "train_chunk", lambda *a, **k: pytest.fail("trained before refusing the path"))
    monkeypatch.setattr(R, "train_models", lambda *a, **k: pytest.fail("trained before refusing the path"))
    p = {"empty-string": "", "dir": files["dir"], "devnull": os.devnull, "parent-is-file": f"{files['good']}/x.out"}[kind]
    refused(capsys, [*argv, opt, p], name, *([] if kind == "empty-string" else [files["good"] if kind ==
                                                                               "parent-is-file" else p]))


OUT_DIR_COMMANDS = [
    ["experiment", "uninformed-fig2", "--sigmas", "0.1", "--points", "4", "--dim", "2", "--rows", "2",
     "--datasets", "synthetic", "--no-progress"],
    ["experiment", "hayes-fig3", "--trials", "1", "--steps", "1", "--n-known", "10", "--epsilons", "4",
     "--prior-size", "2", "--no-progress"],
    ["experiment", "hayes-fig8", "--trials", "1", "--steps", "1", "--n-known", "10", "--epsilons", "4",
     "--prior-sizes", "2", "--gradient-trials", "1", "--iterations", "1", "--restarts", "1", "--no-progress"],
    ["experiment", "fil-glm", "--draws", "2", "--no-progress"],
    ["experiment", "reconn-dpgd", "--epsilons", "10", "--no-nonprivate", "--shadow-models", "4", "--fixed-size",
     "10", "--epochs", "1", "--targets", "2", "--reconstructor-epochs", "1", "--quiet"],
]


@pytest.mark.parametrize("kind", ["empty-string", "file", "devnull", "output-name-is-a-folder"])
@pytest.mark.parametrize("argv", OUT_DIR_COMMANDS, ids=[a[1] for a in OUT_DIR_COMMANDS])
def test_output_dir_paths(argv, kind, files, tmp_path, capsys, monkeypatch):
    import rerokit.experiments.hayes_figures as H

    monkeypatch.setattr(H, "sigma_for_epsilon", lambda *a, **k: pytest.fail("calibrated before refusing the folder"))
    before = sorted(os.listdir("."))
    if kind == "output-name-is-a-folder":
        out = tmp_path / "o"
        name = {"uninformed-fig2": "uninformed_fig2.csv", "hayes-fig3": "fig3.png", "hayes-fig8": "fig8.csv",
                "fil-glm": "fil_glm.jsonl", "reconn-dpgd": "reconn_dpgd.png"}[argv[1]]
        (out / name).mkdir(parents=True)
        refused(capsys, [*argv, "--out-dir", out], "out_dir", out / name)
    else:
        p = {"empty-string": "", "file": files["good"], "devnull": os.devnull}[kind]
        refused(capsys, [*argv, "--out-dir", p], "out_dir", *([] if kind == "empty-string" else [p]))
    assert sorted(os.listdir(".")) == before  # nothing written into the current folder


# --------------------------------------------------------------------------------------------- resume files
@pytest.fixture
def analytic_file(tmp_path, capsys):
    p = tmp_path / "an.jsonl"
    ok_json(capsys, [*ANALYTIC, "--out", p])
    return p


def _write(path, header, recs, tail=""):
    Path(path).write_text("".join(json.dumps(x) + "\n" for x in [header, *recs]) + tail)


CRAFTED = {
    "missing key": (lambda r: [{k: v for k, v in r[0].items() if k != "mse"}, *r[1:]], "'mse'"),
    "wrong type": (lambda r: [{**r[0], "mse": "small"}, *r[1:]], "'mse'"),
    "bool as number": (lambda r: [{**r[0], "variance": True}, *r[1:]], "'variance'"),
    "trial -1": (lambda r: [*r, {**r[0], "trial": -1}], "trial -1"),
    "trial >= K": (lambda r: [*r, {**r[0], "trial": 4}], "trial 4"),
    "trial not an int": (lambda r: [{**r[0], "trial": "0"}, *r[1:]], "trial"),
    "trial 1.5": (lambda r: [{**r[0], "trial": 1.5}, *r[1:]], "trial"),
    "duplicate trial": (lambda r: [*r, dict(r[1])], "twice"),
    "bare trial": (lambda r: [*r[:-1], {"kind": "trial", "trial": r[-1]["trial"]}], "has no"),
    "not an object": (lambda r: [*r, [1, 2]], "JSON object"),
    "other kind": (lambda r: [*r, {"kind": "summary", "trial": 0}], "kind"),
    "second header": (lambda r: [*r, {"kind": "header", "settings": {}}], "kind"),
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_crafted_resume_record(case, analytic_file, capsys, monkeypatch):
    import rerokit.attacks.analytic as AN

    header, recs = records(analytic_file)
    recs = recs[:3]  # leave target 3 to do, so that a refusal is not a finished run
    mutate, word = CRAFTED[case]
    _write(analytic_file, header, mutate(recs))
    monkeypatch.setattr(AN, "vectorized_analytic_attack", lambda *a, **k: pytest.fail("attacked before refusing"))
    line = refused(capsys, [*ANALYTIC, "--out", analytic_file, "--resume"], analytic_file, "line", word)
    assert "Traceback" not in line


@pytest.mark.parametrize("case", ["non-JSON middle line", "empty middle line", "binary middle line", "binary file",
                                  "latin-1 text", "no header", "header of other settings"])
def test_damaged_resume_file(case, analytic_file, capsys):
    header, recs = records(analytic_file)
    p = analytic_file
    if case == "non-JSON middle line":
        p.write_text(json.dumps(header) + "\n" + json.dumps(recs[0]) + "\n{oops\n" + json.dumps(recs[1]) + "\n")
        words = ["line 3", "not valid JSON"]
    elif case == "empty middle line":
        p.write_text(json.dumps(header) + "\n\n" + json.dumps(recs[0]) + "\n")
        words = ["line 2", "empty"]
    elif case == "binary middle line":
        p.write_bytes((json.dumps(header) + "\n").encode() + b"\xff\xfe\x00\x81\n" + (json.dumps(recs[0]) + "\n").encode())
        words = ["UTF-8", "line 2"]
    elif case == "binary file":
        p.write_bytes(bytes(range(256)) * 4)
        words = ["UTF-8"]
    elif case == "latin-1 text":
        p.write_bytes("caf\xe9\n".encode("latin-1"))
        words = ["UTF-8"]
    elif case == "no header":
        _write(p, recs[0], recs[1:])
        words = ["not a rerokit results file"]
    else:
        _write(p, {**header, "settings": {**header["settings"], "seed": 99}}, recs)
        words = ["other settings"]
    refused(capsys, [*ANALYTIC, "--out", p, "--resume"], p, *words)


def test_resume_repairs_only_a_cut_last_line(analytic_file, capsys):
    header, recs = records(analytic_file)
    full = ok_json(capsys, [*ANALYTIC, "--out", analytic_file, "--resume"])  # nothing to do
    _write(analytic_file, header, recs[:2], tail=json.dumps(recs[2])[:25])  # interrupted while writing target 2
    again = ok_json(capsys, [*ANALYTIC, "--out", analytic_file, "--resume"])
    assert again["per_target"] == full["per_target"]
    assert sorted(records(analytic_file)[1], key=lambda r: r["trial"]) == recs  # targets 2, 3 redone identically
    # a complete last record without its newline is kept (not redone) and the newline added
    _write(analytic_file, header, recs[:3], tail=json.dumps(recs[3]))
    assert ok_json(capsys, [*ANALYTIC, "--out", analytic_file, "--resume"])["per_target"] == full["per_target"]
    assert analytic_file.read_text().endswith("\n") and len(records(analytic_file)[1]) == 4


def test_resume_on_non_text_files(files, capsys):
    for kind in ("binary", "pickle", "npz2"):
        refused(capsys, [*ANALYTIC, "--out", files[kind], "--resume"], files[kind])
    refused(capsys, [*ANALYTIC, "--resume"], "resume", "--out")


def test_prior_aware_bare_trial_and_extra_trial(tmp_path, capsys, monkeypatch):
    """The review's cases: {"kind":"trial","trial":9} (was KeyError: 'success') and an added
    trial -1 (was accepted: 49 trials for --trials 48)."""
    import rerokit.experiments.audit as A

    p = tmp_path / "pa.jsonl"
    d = ok_json(capsys, [*PRIOR, "--out", p])
    assert d["trials"] == 3
    header, recs = records(p)
    monkeypatch.setattr(A, "train_chunk", lambda *a, **k: pytest.fail("trained before refusing"))
    _write(p, header, [*recs[:2], {"kind": "trial", "trial": 2}])
    refused(capsys, [*PRIOR, "--out", p, "--resume"], p, "line 4", "trial 2 has no")
    _write(p, header, [*recs, {**recs[0], "trial": -1}])
    refused(capsys, [*PRIOR, "--out", p, "--resume"], p, "line 5", "trial -1")
    _write(p, header, [*recs[:2], {**recs[2], "success": {"alg2": "yes"}}])
    refused(capsys, [*PRIOR, "--out", p, "--resume"], p, "line 4", "'success'")
    _write(p, header, [*recs[:2], {**recs[2], "success": {"alg3": True}}])
    refused(capsys, [*PRIOR, "--out", p, "--resume"], p, "line 4", "alg2")
    _write(p, header, recs)
    monkeypatch.undo()
    assert ok_json(capsys, [*PRIOR, "--out", p, "--resume"])["trials"] == 3
    # fewer trials than the file holds: refused (the summary would silently drop trials)
    refused(capsys, [*PRIOR[:PRIOR.index("--trials") + 1], "2", *PRIOR[PRIOR.index("--trials") + 2:], "--out", p,
                     "--resume"], p, "trial 2", "2 trials")


def test_trial_log_library_contract(tmp_path):
    from rerokit.experiments.records import Bool, DictOf, Int, ListOf, Num, TrialLog

    p = tmp_path / "t.jsonl"
    schema = {"x": Num(minimum=0), "ok": Bool, "v": ListOf(Int(), length=2), "d": DictOf(Bool, keys=["a"])}
    with TrialLog(p, {"s": 1}, trials=3, schema=schema) as log:
        log.append(0, {"x": 1.5, "ok": True, "v": [1, 2], "d": {"a": False}})
        with pytest.raises(ValueError, match="trial 3 is outside 0..2"):
            log.append(3, {"x": 1.5, "ok": True, "v": [1, 2], "d": {"a": False}})
        with pytest.raises(ValueError, match="'v'"):
            log.append(1, {"x": 1.5, "ok": True, "v": [1], "d": {"a": False}})
        with pytest.raises(ValueError, match="already"):
            log.append(0, {"x": 1.5, "ok": True, "v": [1, 2], "d": {"a": False}})
    again = TrialLog(p, {"s": 1}, resume=True, trials=3, schema=schema)
    assert again.done == {0}
    again.close()
    assert not list(tmp_path.glob("*.tmp"))


def test_rewrite_uses_a_unique_temp_file(tmp_path, monkeypatch):
    import rerokit.experiments.records as rr

    p = tmp_path / "t.jsonl"
    with rr.TrialLog(p, {"s": 1}) as log:
        log.append(0, {"x": 1})
    with open(p, "a") as f:
        f.write('{"kind": "tri')
    seen = []
    real = rr.os.replace
    monkeypatch.setattr(rr.os, "replace", lambda a, b: (seen.append(Path(a)), real(a, b)))
    rr.TrialLog(p, {"s": 1}, resume=True).close()
    assert len(seen) == 1 and seen[0].parent == tmp_path and seen[0].name != p.name + ".tmp"
    assert seen[0].name.startswith(p.name + ".") and not seen[0].exists()


# --------------------------------------------------------------------------------------------- lock
def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_lock_refuses_a_second_process_at_once(tmp_path, capsys):
    p = tmp_path / "held.jsonl"
    # the holder blocks on a read of its stdin (no sleep): it holds the lock until it is killed
    code = ("import sys\nfrom rerokit.experiments.records import TrialLog\n"
            f"log = TrialLog({str(p)!r}, {{'seed': 2}}, trials=4)\nprint('ready', flush=True)\nsys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=_env())
    try:
        assert holder.stdout.readline().strip() == "ready"
        from rerokit.experiments.records import TrialLog

        with pytest.raises(ValueError, match="in use by another rerokit run") as exc:
            TrialLog(p, {"seed": 2}, resume=True)
        assert str(p) in str(exc.value)
    finally:
        holder.kill()
        holder.wait()
    TrialLog(p, {"seed": 2}, resume=True, trials=4).close()  # the kill released it
    assert [x.name for x in tmp_path.iterdir()] == [p.name]  # no lock file left beside it


# --------------------------------------------------------------------------------------------- resource bombs
BOMBS = [
    (["attack", "analytic", "--noise-multiplier", "1", "--clip", "1", "--targets", "3", "--seed", "0", "--rows",
      "10000000000", "--no-progress"], "--rows"),
    (["attack", "analytic", "--noise-multiplier", "1", "--clip", "1000000", "--targets", "3", "--seed", "0",
      "--no-progress"], "--clip"),
    (["attack", "analytic", "--noise-multiplier", "1", "--clip", "1", "--targets", "100", "--seed", "0", "--rows",
      "20000000", "--backend", "vmap", "--no-progress"], "--rows"),
    ([*PRIOR[:PRIOR.index("--trials")], "--trials", "1000000000", "--no-progress"], "--trials"),
    ([*PRIOR, "--steps", "10000000000"], "--steps"),
    (["audit", "prior-aware", "--noise-multiplier", "1", "--steps", "100000000", "--no-progress"], "--chunk-size|--steps"),
    (["audit", "gradient", "--noise-multiplier", "1", "--hidden", "1000000000", "--no-progress"], "--hidden"),
    (["attack", "reconn", "--shadow-models", "2000000000", "--no-png", "--quiet"], "--shadow-models"),
    (["attack", "reconn", "--hidden", "1000000000", "--no-png", "--quiet"], "--hidden"),
    (["attack", "reconn", "--reconstructor-hidden", "1000000000", "--no-png", "--quiet"], "--reconstructor-hidden"),
    (["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--mse-threshold", "0.1",
      "--steps", "10000000000000000000000", "--sample-rate", "0.5"], "--steps"),
    (["bound", "fil", "--dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "1", "--hidden",
      "1000000000"], "--hidden"),
    (["experiment", "uninformed-fig2", "--out-dir", "{tmp}/f2", "--points", "20000000000", "--no-progress"],
     "--points"),
    (["experiment", "uninformed-fig2", "--out-dir", "{tmp}/f2", "--rows", "10000000000", "--no-progress"], "--rows"),
    (["experiment", "hayes-fig3", "--out-dir", "{tmp}/h3", "--steps", "100000000", "--no-progress"], "--steps"),
    (["experiment", "reconn-dpgd", "--out-dir", "{tmp}/rd", "--shadow-models", "2000000000", "--quiet"],
     "--shadow-models"),
]


@pytest.mark.parametrize("argv, opt", BOMBS, ids=[f"{a[1]} {o}" for a, o in BOMBS])
def test_resource_bomb_refused_before_allocating(argv, opt, tmp_path, capsys):
    """Sizes far beyond any machine (tens of TB or more): refused at once, naming the option."""
    line = refused(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv], "memory", seconds=20)
    opts = opt.split("|")
    assert any(line.startswith(f"error: {o}:") for o in opts), f"{line!r} does not name {opt}"
    assert "TB" in line or "PB" in line or "EB" in line or "GB" in line


def test_kappa_samples_bomb(tmp_path, capsys):
    p = tmp_path / "many.npy"
    n = 4_000_000  # a 16 MB file whose pairwise l2 block needs tens of GB
    np.save(p, np.zeros((n, 1), dtype=np.float32))
    from rerokit._resources import kappa_samples_bytes, memory_limit

    if kappa_samples_bytes(n, 1, "l2") <= memory_limit():  # pragma: no cover - a machine with > 60 GB
        pytest.skip("this machine has enough memory for the l2 block")
    refused(capsys, ["kappa", "samples", "--samples", p, "--metric", "l2", "--eta", "0.1"], "--samples", "memory")


def test_memory_limit_is_positive_and_estimates_scale():
    from rerokit import _resources as R

    assert R.memory_limit() > 1e8
    assert R.analytic_attack_bytes(10**8, 64, 3, "opacus") > 4e11
    assert R.format_bytes(2.5e9) == "2.5 GB"
    with pytest.raises(ValueError, match="--rows: x needs about"):
        R.check_memory("--rows", 1e30, "x")


# --------------------------------------------------------------------------------------------- categorical options
CATEGORICAL = [
    (["attack", "glm", "--classes", "0,11"], ["classes", "11"]),
    (["attack", "glm", "--classes", "3"], ["classes"]),
    (["attack", "glm", "--classes", "2,2"], ["classes"]),
    (["attack", "glm", "--classes", "a,b"], ["classes"]),
    (["attack", "glm", "--model", "linear", "--classes=-1,0"], ["classes", "-1"]),
    (["bound", "fil", "--noise-std", "1", "--classes", "0,12"], ["classes", "12"]),
    (["experiment", "fil-glm", "--out-dir", "{tmp}/fg", "--classes", "0,11", "--no-progress"], ["classes", "11"]),
    (["experiment", "hayes-fig3", "--out-dir", "{tmp}/h", "--epsilons", "4", "4.0000001", "--no-progress"],
     ["epsilons"]),
    (["experiment", "hayes-fig5", "--out-dir", "{tmp}/h", "--sample-rates", "1", "1", "--no-progress"],
     ["sample_rates"]),
    (["experiment", "hayes-fig8", "--out-dir", "{tmp}/h", "--prior-sizes", "2", "2", "--no-progress"],
     ["prior_sizes"]),
    (["experiment", "reconn-dpgd", "--out-dir", "{tmp}/r", "--epsilons", "1", "1", "--quiet"], ["epsilons"]),
    (["experiment", "uninformed-fig2", "--out-dir", "{tmp}/u", "--sigmas", "0.1", "0.1", "--no-progress"],
     ["sigmas"]),
    (["experiment", "uninformed-fig2", "--out-dir", "{tmp}/u", "--datasets", "digits", "digits", "--no-progress"],
     ["datasets"]),
    (["kappa", "samples", "--samples", "{good}", "--metric", "cosine"], ["metric"]),
    (["audit", "prior-aware", "--noise-multiplier", "1", "--attack", "alg9", "--no-progress"], ["attack"]),
    (["audit", "prior-aware", "--noise-multiplier", "1", "--model", "transformer", "--no-progress"], ["model"]),
    (["attack", "analytic", "--noise-multiplier", "1", "--clip", "1", "--targets", "1", "--seed", "0", "--backend",
      "gpu", "--no-progress"], ["backend"]),
]


@pytest.mark.parametrize("argv, words", CATEGORICAL, ids=[" ".join(a[1:4]) for a, _ in CATEGORICAL])
def test_categorical_option_values(argv, words, tmp_path, files, capsys, monkeypatch):
    import rerokit.attacks.glm as G

    monkeypatch.setattr(G, "fit_glm", lambda *a, **k: pytest.fail("fitted before refusing"))
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{good}", str(files["good"])) for a in argv]
    refused(capsys, argv, *words)


def test_glm_default_classes_run_on_two_classes(capsys):
    d = ok_json(capsys, ["attack", "glm", "--classes", "0,2"])
    assert d["settings"]["classes"] == [0, 2] and d["settings"]["model"] == "logistic"


# --------------------------------------------------------------------------------------------- library types
def _lib_cases():
    from rerokit.bounds import conversions as C
    from rerokit.bounds import fano as F
    from rerokit.bounds import mse as M
    from rerokit.bounds import priors as P
    from rerokit.bounds import uninformed as U

    return [
        (U.mse_cdf, dict(eta="1", noise_multiplier=1.0, norm=1.0, dim=3), "eta"),
        (U.mse_cdf, dict(eta=[0.1, "x"], noise_multiplier=1.0, norm=1.0, dim=3), "eta"),
        (U.mse_quantile, dict(p=b"0.5", noise_multiplier=1.0, norm=1.0, dim=3), "p"),
        (U.mse_normal_limit_cdf, dict(eta="1", noise_multiplier=1.0, norm=1.0, dim=3), "eta"),
        (U.psnr_sf, dict(psnr_threshold="20", peak=1.0, noise_multiplier=1.0, norm=1.0, dim=3), "psnr_threshold"),
        (U.psnr_pdf, dict(psnr="20", peak=1.0, noise_multiplier=1.0, norm=1.0, dim=3), "psnr"),
        (U.clipping_factor, dict(grad_norm="1", clip=1.0), "grad_norm"),
        (U.estimate_from_gradients, dict(noisy_weight_grads=np.ones((2, 3)), scales="1"), "scales"),
        (U.min_nonzero_norm, dict(X=[["1", "2"]]), "X"),
        (U.prob_used_k_times, dict(k="1", steps=3, sampling_rate=0.5), "k"),
        (U.mse_rero, dict(eta="0.1", noise_multiplier=1.0, dim=3, min_norm=1.0), "eta"),
        (U.mse_rero, dict(eta=0.1, noise_multiplier=np.array([1.0, 2.0]), dim=3, min_norm=1.0), "noise_multiplier"),
        (U.expected_mse, dict(noise_multiplier=1.0, norm="1"), "norm"),
        (M.cramer_rao_mse_lower_bound, dict(dfil="1"), "dfil"),
        (M.rdp_mse_lower_bound, dict(epsilon=1.0, diameter="1"), "diameter"),
        (M.rdp_mse_lower_bound, dict(epsilon=1.0, gamma="1"), "gamma"),
        (M.rdp_mse_lower_bound, dict(epsilon=np.array([1.0, 2.0])), "epsilon"),
        (M.rdp_epsilon_at_order, dict(orders=["2", "3"], rdp=[1.0, 2.0]), "orders"),
        (M.fil_subsampling_factor, dict(sample_rate=0.5, epsilon="1"), "epsilon"),
        (M.cramer_rao_mse_lower_bound_matrix, dict(fim=np.eye(2), bias="11"), "bias"),
        (P.kappa_from_samples, dict(samples=np.zeros((4, 2)), metric=np.array(["l2"])), "metric"),
        (P.kappa_from_samples, dict(samples=np.array([["a", "b"]]), eta=0.1, metric="l2"), "samples"),
        (P.kappa_from_samples, dict(samples="abc"), "samples"),
        (P.DiscretePrior, dict(weights=["1", "2"]), "weights"),
        (P.log10_kappa, dict(log_kappa="-1"), "log_kappa"),
        (P.log_binom_sf, dict(k="1", n=3, log_p=-0.7, log_1mp=-0.7), "k"),
        (P.log_binom_sf, dict(k=1, n=3, log_p=np.array([-0.7, -0.1]), log_1mp=-0.7), "log_p"),
        (P.GaussianPrior, dict(d=3, sigma="1"), "sigma"),
        (F.fano_advantage_from_mi, dict(mutual_information="0.5", prior_size=4), "mutual_information"),
        (C.rero_from_dp, dict(epsilon="1", kappa=0.1), "epsilon"),
        (C.rero_from_rdp_curve, dict(orders=[2.0, 3.0], rdp=["1", "2"], kappa=0.1), "rdp"),
    ]


LIB_CASES = _lib_cases()


@pytest.mark.parametrize("f, kw, name", LIB_CASES, ids=[f"{f.__name__}-{n}-{i}" for i, (f, _, n) in enumerate(LIB_CASES)])
def test_library_rejects_strings_and_arrays_naming_the_parameter(f, kw, name):
    with pytest.raises((TypeError, ValueError)) as exc:
        f(**kw)
    assert name in str(exc.value), f"{f.__name__}({kw}): {exc.value!r} does not name {name}"
    assert "ambiguous" not in str(exc.value)


# --------------------------------------------------------------------------------------------- explained infinities
def _infs(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _infs(v, f"{path}.{k}")
    elif isinstance(x, list):
        for j, v in enumerate(x):
            yield from _infs(v, f"{path}[{j}]")
    elif x in ("inf", "-inf") or (isinstance(x, float) and math.isinf(x)):
        yield path


INF_CASES = [
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1", "--prior-size", "10",
     "--delta", "1e-320"],
    ["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1e308", "--dim", "4", "--mse-threshold", "0.1"],
    ["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1e308", "--dim", "4", "--mse-threshold", "0.1",
     "--clip", "1e308"],
    ["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--psnr-threshold", "20",
     "--data-range", "1e300", "--steps", "10", "--sample-rate", "0.5"],
    ["bound", "mse-rdp", "--n", "100", "--lam", "1e300", "--noise-std", "1", "--dim", "4"],
    ["bound", "mse-rdp", "--epsilon", "0", "--dim", "4"],
    ["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "1", "--steps", "10", "--prior-size", "10",
     "--delta", "1e-300"],
]


@pytest.mark.parametrize("argv", INF_CASES, ids=[" ".join(a[:2] + a[-2:]) for a in INF_CASES])
def test_no_unexplained_inf(argv, capsys):
    d = ok_json(capsys, argv)
    infs = list(_infs(d))
    assert not infs or "note" in json.dumps(d), f"{argv}: inf at {infs} without a note"
    if argv[1] == "uninformed" and "--mse-threshold" in argv:
        assert math.isfinite(d["expected_mse"]) and d["log10_expected_mse"] == pytest.approx(616.0)
    if argv[:2] == ["bound", "dpsgd"]:  # below the PLD's floor: the finite Gaussian-DP / RDP epsilon (certified)
        from rerokit.bounds.gaussian import gaussian_epsilon

        eps = d["comparisons"]["epsilon"]
        assert isinstance(eps, float) and math.isfinite(eps) and "note" not in d["comparisons"]
        assert eps >= gaussian_epsilon(1e-320, 1.0) * (1 - 1e-9)


# --------------------------------------------------------------------------------------------- help
def _commands():
    from rerokit.cli import build_parser

    out = {}
    for a in build_parser()._actions:
        if hasattr(a, "choices") and isinstance(a.choices, dict):
            for g, gp in a.choices.items():
                for b in gp._actions:
                    if hasattr(b, "choices") and isinstance(b.choices, dict):
                        out.update({(g, c): p for c, p in b.choices.items()})
    return out


@pytest.mark.parametrize("cmd", sorted(_commands()), ids=" ".join)
def test_help_is_for_users(cmd, capsys):
    with pytest.raises(SystemExit):
        main([*cmd, "--help"])
    text = capsys.readouterr().out
    import re

    for bad in (r"%%", r"``", r"\bimport(ed)?\b", r"\bhandlers?\b", r"module level", r":func:", r":class:"):
        assert not re.search(bad, text), f"{' '.join(cmd)} --help shows {bad!r}"
    assert "output fields" in text
    for a in _commands()[cmd]._actions:
        assert a.help, f"{' '.join(cmd)}: {a.option_strings} has no help"


# cheap runs whose every output field must be explained in --help (top-level keys and the keys of
# nested sections; "settings" only echoes the inputs)
FIELD_RUNS = [
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1", "--prior-size", "10"],
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "2", "--prior-size", "10",
     "--method", "mc", "--mc-samples", "1000", "--seed", "0"],
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1", "--prior-size", "10",
     "--method", "closed-form"],
    ["bound", "dp", "--epsilon", "1", "--kappa", "0.1"],
    ["bound", "rdp", "--alpha", "2", "--epsilon", "1", "--kappa", "0.1"],
    ["bound", "zcdp", "--rho", "1", "--kappa", "0.1"],
    ["bound", "gdp", "--mu", "1", "--kappa", "0.1"],
    ["bound", "fano", "--noise-multiplier", "1", "--prior-size", "10"],
    ["bound", "fano", "--rdp-epsilon", "1", "--prior-size", "10"],
    ["bound", "fano", "--mutual-information", "1", "--prior-size", "10"],
    ["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--mse-threshold", "0.1",
     "--clip", "0.5", "--steps", "10", "--sample-rate", "0.1"],
    ["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1e308", "--dim", "4", "--psnr-threshold", "20",
     "--data-range", "1", "--clip", "1e308"],
    ["bound", "mse-rdp", "--epsilon", "1", "--dim", "4"],
    ["bound", "mse-rdp", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10", "--dim", "4"],
    ["bound", "mse-rdp", "--n", "100", "--lam", "0.1", "--noise-std", "1", "--dim", "4"],
    ["bound", "fil", "--noise-std", "0.01"],
    ["kappa", "discrete", "--prior-size", "10"],
    ["kappa", "ball", "--dim", "4", "--eta", "0.5"],
    ["kappa", "gaussian", "--dim", "4", "--sigma", "1", "--eta", "1"],
    ["kappa", "samples", "--samples", "{good}", "--metric", "l2", "--eta", "0.1"],
    ["kappa", "pixels", "--dim", "4", "--delta", "0.1", "--levels", "256"],
    ["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "1", "--steps", "10", "--prior-size", "10"],
    ["attack", "analytic", "--noise-multiplier", "0.1", "--clip", "1", "--targets", "2", "--seed", "0", "--backend",
     "vmap", "--no-progress"],
    ["attack", "glm", "--noise", "0.1", "--draws", "2"],
    [*PRIOR, "--out", "{tmp}/pa.jsonl"],
    ["audit", "gradient", "--noise-multiplier", "1", "--trials", "1", "--steps", "1", "--n-known", "10", "--hidden",
     "4", "--iterations", "1", "--restarts", "1", "--prior-size", "2", "--no-progress"],
    ["experiment", "uninformed-fig2", "--out-dir", "{tmp}/u", "--sigmas", "0.1", "--points", "4", "--dim", "2",
     "--rows", "2", "--datasets", "synthetic", "--no-progress"],
    ["experiment", "fil-glm", "--out-dir", "{tmp}/f", "--draws", "2", "--no-progress"],
]
# the pure-DP bounds, the uninformed calibration and the closed-form figures (branch seedsb)
FIELD_RUNS += [
    ["bound", "laplace", "--scale", "0.5", "--prior-size", "10"],
    ["bound", "finite-support", "--epsilon", "1", "--kappa", "0.5", "--support-size", "4"],
    ["calibrate", "uninformed", "--target-gamma", "0.05", "--dim", "8", "--clip", "1", "--psnr-threshold", "20",
     "--data-range", "1"],
    ["experiment", "hayes-fig15", "--out-dir", "{tmp}/h15", "--epsilons", "4", "--sample-rates", "1",
     "--prior-sizes", "2", "--no-progress"],
    ["experiment", "hayes-table2", "--out-dir", "{tmp}/t2", "--prior-sizes", "2", "--sigmas", "1", "--samples",
     "100", "--no-progress"],
    ["experiment", "pure-dp", "--out-dir", "{tmp}/pd", "--epsilons", "1", "--prior-sizes", "2", "--trials", "10"],
]

# Guo et al. 2022 Figs. 5 and 2 (branch guo)
FIELD_RUNS += [
    ["experiment", "guo-fig5", "--out-dir", "{tmp}/g5", "--noise-multipliers", "1", "--steps", "1", "--hidden", "0",
     "--train-size", "10", "--coords", "1", "--no-progress"],
    ["experiment", "guo-dfil-hist", "--out-dir", "{tmp}/gh", "--bins", "5"],
]

@pytest.mark.parametrize("argv", FIELD_RUNS, ids=[" ".join(a[:2]) + f" #{i}" for i, a in enumerate(FIELD_RUNS)])
def test_every_output_field_is_explained_in_help(argv, tmp_path, files, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{good}", str(files["good"])) for a in argv]
    d = ok_json(capsys, argv)
    with pytest.raises(SystemExit):
        main([*argv[:2], "--help"])
    text = capsys.readouterr().out
    epilog = text[text.index("output fields"):]
    for k, v in d.items():
        assert f"\n  {k} " in epilog or f"\n  {k}\n" in epilog or f"\n  {k}." in epilog, \
            f"{' '.join(argv[:2])}: output field {k!r} not explained in --help"
        if isinstance(v, dict) and k not in ("settings", "attacks", "files", "search", "per_target"):
            for sub in v:
                assert f"{k}.{sub}" in epilog, f"{' '.join(argv[:2])}: {k}.{sub} not explained in --help"


# --------------------------------------------------------------------------------------------- kill and resume
def _popen(argv):
    # A shell without job control starts a background job with SIGINT ignored, the child inherits
    # that, and Python then installs no KeyboardInterrupt handler: the SIGINT case would run to the
    # end (exit 0) when the suite itself was started with `&`. A handled signal is reset to the
    # default across exec, so catching SIGINT here while the child starts gives it Python's handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen([sys.executable, "-m", "rerokit.cli", *map(str, argv)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=_env())
    finally:
        signal.signal(signal.SIGINT, previous)


def _trial_lines(path) -> int:
    try:
        return max(0, Path(path).read_text().count("\n") - 1)
    except FileNotFoundError:
        return 0


def _run_ok(argv) -> dict:
    r = subprocess.run([sys.executable, "-m", "rerokit.cli", *map(str, argv), "--json"], capture_output=True,
                       text=True, env=_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _kill_resume(argv_for, log_path, sig, tmp_path, min_trials: int = 2):
    """Start a run, stop it (SIGSTOP) once ``min_trials`` records are in its file, check that a
    second process on the same file is refused at once, end the first with ``sig`` and resume."""
    first = _popen(argv_for(False))
    try:
        deadline = time.monotonic() + 120
        while _trial_lines(log_path) < min_trials:
            assert first.poll() is None, f"the run ended before it could be stopped: {first.stderr.read()}"
            assert time.monotonic() < deadline, "no trial was written within 120 s"
            _POLL.wait(0.01)  # polls the condition above under its deadline (an Event that is never set)
        first.send_signal(signal.SIGSTOP)  # it holds the lock while stopped
        seen = _trial_lines(log_path)
        t = time.monotonic()
        second = subprocess.run([sys.executable, "-m", "rerokit.cli", *map(str, argv_for(True))],
                                capture_output=True, text=True, env=_env(), timeout=120)
        took = time.monotonic() - t
        lines = second.stderr.strip().splitlines()
        assert second.returncode == 2 and len(lines) == 1, second.stderr
        assert "in use by another rerokit run" in lines[0] and "Traceback" not in second.stderr
        assert took < 60
        if sig == signal.SIGINT:
            first.send_signal(signal.SIGINT)
            first.send_signal(signal.SIGCONT)
            _, err = first.communicate(timeout=120)
            assert first.returncode == 130, err
            err_lines = err.strip().splitlines()
            assert len(err_lines) == 1 and err_lines[0].startswith("error: interrupted"), err
        else:
            first.send_signal(signal.SIGKILL)
            first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    lines = Path(log_path).read_text().split("\n")[1:-1]  # complete lines after the header (a cut tail dropped)
    kept = {r["trial"]: r for r in map(json.loads, lines)}
    assert len(kept) >= seen  # nothing written before the stop is lost
    assert sorted(kept) == list(range(len(kept)))  # trials are written in order: only the one in flight is missing
    return kept


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_kill_and_resume_prior_aware_audit(sig, tmp_path):
    K = 150
    base = ["audit", "prior-aware", "--noise-multiplier", "1", "--trials", K, "--steps", "20", "--n-known", "20",
            "--hidden", "4", "--prior-size", "4", "--chunk-size", "1", "--seed", "3", "--no-progress"]
    out = tmp_path / "pa.jsonl"
    kept = _kill_resume(lambda again: [*base, "--out", out, *(["--resume"] if again else [])], out, sig, tmp_path)
    assert len(kept) < K
    resumed = _run_ok([*base, "--out", out, "--resume"])
    ref_path = tmp_path / "straight.jsonl"
    straight = _run_ok([*base, "--out", ref_path])
    h1, r1 = records(out)
    h2, r2 = records(ref_path)
    assert h1 == h2 and len(r1) == K
    assert sorted(r1, key=lambda r: r["trial"]) == r2  # the same trials as a straight run with the same seed
    assert all(r == kept[r["trial"]] for r in r1 if r["trial"] in kept)  # finished trials were not redone
    assert resumed["success"] == straight["success"] and resumed["trials"] == K
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_kill_and_resume_fil_glm_experiment(sig, tmp_path):
    base = ["experiment", "fil-glm", "--draws", "2500", "--seed", "4", "--no-progress"]
    out = tmp_path / "run"
    log = out / "fil_glm.jsonl"
    kept = _kill_resume(lambda again: [*base, "--out-dir", out, *(["--resume"] if again else [])], log, sig, tmp_path)
    assert len(kept) < 25
    resumed = _run_ok([*base, "--out-dir", out, "--resume"])
    straight = _run_ok([*base, "--out-dir", tmp_path / "ref"])
    h1, r1 = records(log)
    h2, r2 = records(tmp_path / "ref" / "fil_glm.jsonl")
    assert h1 == h2 and sorted(r1, key=lambda r: r["trial"]) == r2
    assert all(r == kept[r["trial"]] for r in r1 if r["trial"] in kept)
    for k in ("fraction_bound_holds", "spearman", "attack_mse_median"):
        assert resumed[k] == straight[k]


@pytest.mark.parametrize("argv", [
    ["audit", "prior-aware", "--epsilon", "1e308", "--trials", "2", "--no-progress"],
    ["audit", "prior-aware", "--epsilon", "1e20", "--sample-rate", "0.5", "--trials", "2", "--no-progress"],
    ["audit", "gradient", "--epsilon", "1e308", "--trials", "2", "--no-progress"],
    ["experiment", "hayes-fig3", "--epsilons", "1e308", "--out-dir", "{tmp}/f3"],
], ids=["prior-aware 1e308", "prior-aware q=0.5 1e20", "gradient 1e308", "hayes-fig3 1e308"])
def test_epsilon_beyond_any_meaningful_noise_is_explained(argv, tmp_path, capsys):
    """An epsilon whose sigma would be below the meaningful floor (1e-4) is refused at once with
    the reason, not with the solver's 'no value in [...]' (eps = 1e308 once read delta = 1 for
    every mu, see tests/bounds/test_gaussian.py)."""
    line = refused(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv], "epsilon", "non-private")
    assert "no value in" not in line


@pytest.mark.parametrize("opts, words", [
    (["--prior-size", "100000"], ["prior_size 100000 alone exceeds", "1797"]),
    (["--n-known", "100000"], ["prior_size 10 + n_known 100000 exceed", "1797"]),
])
def test_audit_sizes_beyond_the_dataset(opts, words, capsys):
    refused(capsys, ["audit", "prior-aware", "--noise-multiplier", "1", "--trials", "2", "--no-progress", *opts], *words)


@pytest.mark.parametrize("argv, words", [
    (["attack", "glm", "--lam", "1e308"], ["lam = 1e+308 is too large", "n = 360"]),
    (["bound", "fil", "--noise-std", "1", "--model", "ridge", "--lam", "1e308"], ["lam = 1e+308 is too large"]),
    (["bound", "fil", "--noise-std", "1", "--model", "linear"], ["singular", "--model ridge"]),
], ids=["glm huge lam", "fil ridge huge lam", "fil linear singular"])
def test_glm_penalty_edge_cases_name_the_option(argv, words, capsys):
    refused(capsys, argv, *words)
