"""Hostile runs: results files that contradict the run, a second process on the same file through
links, signals, user code that prints or fails, escape sequences, odd endpoints, option conflicts.
No data is lost: every refusal leaves the results file as it was."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading

import pytest

from .conftest import AUDIT, assert_refused, env, run_cli, tampered

RECORD_EDITS = {
    "another seed": (lambda r: r.update(seed=r["seed"] + 1), "seed"),
    "a guess outside the prior": (lambda r: r["guess"].update(alg2=7), "outside the prior"),
    "a target outside the prior": (lambda r: r.update(target=9), "outside the prior"),
    "success that contradicts guess and target": (lambda r: r["success"].update(alg2=not r["success"]["alg2"]),
                                                   "success of alg2"),
    "a NaN fraction": (lambda r: r.update(target_clipped_fraction=math.nan), "target_clipped_fraction"),
    "a fraction above 1": (lambda r: r.update(target_clipped_fraction=2.0), "above 1"),
    "a prior listing a record twice": (lambda r: r.update(prior=[r["prior"][0]] * len(r["prior"])), "twice"),
    "a trial outside the run": (lambda r: r.update(trial=99), "trial 99"),
}


@pytest.mark.parametrize("what", list(RECORD_EDITS))
def test_resume_refuses_records_that_contradict_the_run(refused_run, finished_audit, tmp_path, what):
    edit, named = RECORD_EDITS[what]
    p = tampered(finished_audit, tmp_path / "t.jsonl", edit)
    before = p.read_bytes()
    refused_run([*AUDIT, "--out", p, "--resume"], "line 2", named)
    assert p.read_bytes() == before  # nothing rewritten
    refused_run(["report", "--audit", p], "line 2")  # the report reads the file with the same rules


def test_a_newer_schema_version_is_refused_by_writer_and_reader(refused_run, finished_audit, tmp_path):
    lines = finished_audit.read_text().splitlines()
    head = json.loads(lines[0])
    assert head["schema_version"] == 1
    head["schema_version"] = 99
    p = tmp_path / "future.jsonl"
    p.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    refused_run([*AUDIT, "--out", p, "--resume"], "schema version 99")
    refused_run(["report", "--audit", p], "schema version 99")


def test_the_main_job_runs_twice_as_written(cli, finished_audit, tmp_path, refused_run):
    """The same command on a finished file reports it again; other settings name --resume and --overwrite."""
    p = tmp_path / "again.jsonl"
    p.write_bytes(finished_audit.read_bytes())
    first, _ = cli.json_and_stderr([*AUDIT, "--out", finished_audit])
    again, err = cli.json_and_stderr([*AUDIT, "--out", p])
    assert again["success"] == first["success"] and p.read_bytes() == finished_audit.read_bytes()
    line = refused_run([*AUDIT[:-2], "4", "--no-progress", "--out", p], "--resume", "--overwrite")
    assert "other settings" in line
    refused_run([*AUDIT, "--out", p, "--resume", "--overwrite"], "not allowed")


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_second_process_through_a_link_is_refused_and_nothing_is_lost(finished_audit, tmp_path, link):
    real = tmp_path / "real.jsonl"
    real.write_bytes(finished_audit.read_bytes())
    other = tmp_path / "other.jsonl"
    other.symlink_to(real) if link == "symlink" else os.link(real, other)
    code = ("import sys\nfrom rerokit.experiments.records import TrialLog\n"
            f"log = TrialLog({str(real)!r}, {{}}, resume=False, overwrite=None)\n")
    # the holder opens the file the way a run does (a finished file is reused) and blocks on stdin
    holder = subprocess.Popen([sys.executable, "-c", "import sys, json\nfrom rerokit.experiments.records import "
                               "TrialLog\nh = json.loads(open(sys.argv[1]).readline())\n"
                               "log = TrialLog(sys.argv[1], h['settings'], resume=True)\nprint('ready', flush=True)\n"
                               "sys.stdin.read()\n", str(real)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env())
    del code
    try:
        assert holder.stdout.readline().strip() == "ready"
        r = run_cli([*AUDIT, "--out", other, "--resume"], timeout=120)
        assert_refused(r.returncode, r.stdout, r.stderr, "in use by another rerokit run")
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert real.read_bytes() == finished_audit.read_bytes()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["other.jsonl", "real.jsonl"]  # no lock files left


@pytest.mark.parametrize("sig", [signal.SIGTERM])  # SIGINT and SIGKILL: tests/test_hostile_inputs.py
def test_a_signal_mid_run_leaves_a_resumable_file(tmp_path, sig):
    out = tmp_path / "s.jsonl"
    argv = [*AUDIT[:AUDIT.index("--trials") + 1], "12", *AUDIT[AUDIT.index("--trials") + 2:], "--out", out]
    p = subprocess.Popen([sys.executable, "-m", "rerokit.cli", *map(str, argv)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env())
    try:
        # wait for the first finished block without sleeping: the child's stderr stays quiet with
        # --no-progress, so poll the file under a deadline using an Event as the clock
        tick = threading.Event()
        for _ in range(12000):
            if out.exists() and out.read_text().count("\n") >= 3:
                break
            assert p.poll() is None, p.stderr.read()
            tick.wait(0.01)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert "Traceback" not in err
    # SIGTERM unwinds like Ctrl-C (finally blocks close the file, executors, a local Ray cluster): one line
    assert p.returncode == 128 + sig, (p.returncode, err)
    assert err.strip().splitlines() == ["error: terminated (SIGTERM; results written so far are kept; use --resume)"]
    done = [json.loads(s)["trial"] for s in out.read_text().splitlines()[1:] if s.endswith("}")]
    r = run_cli([*argv, "--resume", "--json"], timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["trials"] == 12 and len(done) >= 2


def test_a_factory_that_prints_on_import_and_fails_in_forward_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "noisy_model.py").write_text(
        "import torch\nprint('hello from the import')\n"
        "class Bad(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = torch.nn.Linear(3, 2)\n"
        "    def forward(self, x):\n        return self.lin(x.flatten(1))  # 64 inputs into a 3-wide layer\n"
        "def bad(shape, classes):\n    return Bad()\n"
        "def good(shape, classes):\n"
        "    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, classes))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from rerokit.cli import main

    base = [*AUDIT, "--trials", "2"]
    assert main([*base, "--model-factory", "noisy_model:good", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["trials"] == 2 and "hello from the import" in cap.err  # stdout stays one object
    code = main([*base, "--model-factory", "noisy_model:bad"])
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "Traceback" not in cap.err, cap.err
    assert "noisy_model:bad" in lines[0] and "block 0" in lines[0] and "RuntimeError" in lines[0]


def test_escape_sequences_in_echoed_strings_do_not_reach_the_terminal(capsys):
    from rerokit.cli import main

    evil = "model\x1b[2J\x1b]0;pwned\x07"
    assert main(["report", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "10", "--label", evil,
                 "--no-what-if"]) == 0
    out = capsys.readouterr().out
    assert "\x1b[2J" not in out and "\x07" not in out and "model?[2J" in out
    assert main(["audit", "prior-aware", "--dataset", evil]) == 2
    assert "\x1b" not in capsys.readouterr().err


CONFLICTS = [
    ([*AUDIT, "--model", "cnn", "--model-factory", "x:y"], "--model-factory"),
    ([*AUDIT, "--hidden", "8", "--model-factory", "x:y"], "--hidden"),
    ([*AUDIT, "--resume"], "--out"),
    ([*AUDIT, "--overwrite"], "--out"),
    ([*AUDIT, "--address", "127.0.0.1:1"], "executor ray"),
    (["bound", "fano", "--rdp-epsilon", "1", "--sensitivity", "2", "--prior-size", "10"], "--sensitivity"),
    (["kappa", "samples", "--samples", "x.npy", "--eta", "0.1"], "--eta"),
    (["attack", "reconn", "--delta", "0.001", "--no-png", "--quiet"], "--epsilon"),
    (["attack", "reconn", "--delta", "nan", "--epsilon", "1", "--no-png", "--quiet"], "delta"),
    (["attack", "reconn", "--clip", "-1", "--no-png", "--quiet"], "clip"),
    (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "10", "--prior-size", "10",
      "--seed", "3"], "--method mc"),
    (["calibrate", "dpsgd", "--target-gamma", "0.15", "--sample-rate", "0.01", "--steps", "10", "--prior-size", "10",
      "--max-steps", "5"], "--max-steps"),
    (["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "10", "--fpr", "0.1",
      "--alpha-min", "0.01"], "--alpha-min"),
    (["bound", "uninformed", "--noise-multiplier", "1", "--dim", "10", "--min-norm", "1", "--mse-threshold", "0.1",
      "--prior-scale", "2"], "--prior-scale"),
    (["bound", "fil", "--noise-std", "0.1", "--noise-multiplier", "nan"], "--noise-multiplier"),
    (["bound", "fil", "--dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "2", "--noise-std", "0.1"],
     "--noise-std"),
    (["attack", "glm", "--data-path", "/etc/passwd"], "--data-path"),  # digits reads no file: the path was ignored
    (["bound", "fil", "--noise-std", "0.1", "--dataset", "synthetic", "--data-path", "x.npz"], "--data-path"),
    (["bound", "mse-rdp", "--epsilon", "1", "--dim", "4", "--lipschitz", "nan"], "--lipschitz"),
    (["bound", "uninformed", "--noise-multiplier", "1", "--dim", "4", "--min-norm", "1", "--mse-threshold", "0.1",
      "--data-range", "nan"], "--data-range"),
    (["bound", "laplace", "--epsilon", "1", "--prior-size", "10", "--sensitivity", "nan"], "--sensitivity"),
    (["experiment", "guo-dfil-hist", "--out-dir", "x", "--data-path", "y"], "--data-path"),
]

# counts of training / optimisation loops beyond 1e12 ran until killed (the probe's 25 s limit)
LOOPS = [
    (["audit", "one-run", "--steps", str(10**20), "--no-progress"], "steps"),
    ([*AUDIT[:AUDIT.index("prior-aware")], "gradient", *AUDIT[AUDIT.index("prior-aware") + 1:], "--iterations",
      str(10**20)], "iterations"),
    (["attack", "reconn", "--epochs", str(10**20), "--no-png", "--quiet"], "epochs"),
    (["attack", "reconn", "--reconstructor-epochs", str(10**13), "--no-png", "--quiet"], "reconstructor_epochs"),
    (["experiment", "guo-dfil-hist", "--out-dir", "x", "--bins", "1000000"], "bins"),
]


@pytest.mark.parametrize("argv, named", LOOPS, ids=[n for _, n in LOOPS])
def test_loop_counts_beyond_1e12_are_refused_up_front(refused_run, argv, named):
    line = refused_run(argv, named, "1e12" if named != "bins" else "10000")
    assert len(line) < 300  # the 21-digit count is not echoed whole


@pytest.mark.parametrize("argv, named", CONFLICTS, ids=[n for _, n in CONFLICTS])
def test_conflicting_options_are_refused_not_ignored(refused_run, argv, named):
    refused_run(argv, named)


def test_an_endpoint_that_speaks_http2_but_is_not_ray_is_one_line_within_the_deadline(cli, monkeypatch, tmp_path):
    pytest.importorskip("ray")
    import socket
    import time

    import rerokit.executors as ex

    monkeypatch.setattr(ex, "_HANDSHAKE_TIMEOUT_S", 3.0)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held = []
    stop = threading.Event()

    def serve():  # answers the HTTP/2 preface with a SETTINGS frame, then says nothing
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
                c.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
                held.append(c)
            except OSError:
                pass

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        addr = f"127.0.0.1:{srv.getsockname()[1]}"
        t = time.monotonic()
        line = cli.error([*AUDIT, "--executor", "ray", "--address", addr, "--out", tmp_path / "x.jsonl"])
        assert addr in line and "Ray" in line and time.monotonic() - t < 30
    finally:
        stop.set()
        th.join()
        for c in held:
            c.close()
        srv.close()


def test_warnings_of_a_refused_run_do_not_add_lines(refused):
    """numpy's overflow RuntimeWarnings came before the error line (four lines for --noise 1e308)."""
    refused(["attack", "glm", "--draws", "2", "--noise", "1e308"], "--noise")


def test_warnings_and_log_records_are_held_and_printed_once_after_a_result():
    import logging
    import warnings

    from rerokit.cli import _held_warnings

    with _held_warnings() as held:
        for _ in range(3):
            warnings.warn("overflow \x1b[2J encountered", RuntimeWarning)
        logging.getLogger("absl").warning("_compute_log_a_frac failed to converge\nafter 1000 iterations")
        assert held == []  # nothing printed or listed while the work runs
    assert held == ["RuntimeWarning: overflow ?[2J encountered",
                    "absl: _compute_log_a_frac failed to converge after 1000 iterations"]


def test_sigterm_in_process_unwinds_and_restores_the_handler(capsys, monkeypatch):
    """main() turns SIGTERM into an exception while it runs (exit 143, one line) and puts the
    previous handler back afterwards."""
    import rerokit.cli as cli

    def work(args):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not unwind the work")

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(cli, "build_parser", lambda: _FakeParser(work))
    assert cli.main([]) == 143
    assert capsys.readouterr().err.strip() == "error: terminated (SIGTERM; results written so far are kept; use --resume)"
    assert signal.getsignal(signal.SIGTERM) is before


class _FakeParser:
    def __init__(self, func):
        self.func = func

    def parse_args(self, argv):
        import argparse

        return argparse.Namespace(func=self.func)


@pytest.mark.parametrize("cmd", [["attack", "reconn", "--no-png", "--quiet"], ["experiment", "reconn-seeds", "--out-dir", "x"],
                                 ["experiment", "reconn-dpgd"]])
def test_a_thread_count_beyond_the_machine_is_refused(refused_run, cmd):
    """--threads 1e6 made OpenBLAS fail to start threads (then 'interrupted', exit 130) and 1e9 made
    libgomp ask for 216 GB (killed)."""
    refused_run([*cmd, "--threads", "1000000"], "threads", "<=")
