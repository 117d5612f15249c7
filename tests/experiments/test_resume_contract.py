"""The long-run contract of every long-running command (rerokit standard): progress on stderr,
``--json`` prints exactly one JSON object on stdout, the seed is in the output and in the JSONL
header, an interrupted run (simulated: the per-trial / per-chunk / per-cell function raises
``KeyboardInterrupt`` part-way) keeps its finished units, ``--resume`` repeats none of them and
ends with the same records as a straight run with the same seed, and a run with other settings
on the same file is refused with one line and exit code 2.

Tiny settings throughout (a few steps / models / draws): these test bookkeeping, not accuracy.
"""

from __future__ import annotations

import json
import math

import pytest

from rerokit.cli import main


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _records(path):
    lines = [json.loads(s) for s in path.read_text().splitlines()]
    assert lines[0]["kind"] == "header"
    trials = [ln for ln in lines[1:] if ln["kind"] == "trial"]
    ids = [t["trial"] for t in trials]
    assert len(ids) == len(set(ids)), "a trial was written twice"
    return lines[0]["settings"], {t["trial"]: t for t in trials}


def _refused(capsys, argv):
    """Exit code 2 with exactly one line on stderr and nothing on stdout."""
    assert main(argv) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "Traceback" not in cap.err, cap.err
    assert cap.out == ""
    return err[0]


class _Interrupt:
    """Wraps ``fn``: the first ``ok`` calls go through, the next raises KeyboardInterrupt."""

    def __init__(self, fn, ok):
        self.fn, self.ok, self.calls = fn, ok, 0

    def __call__(self, *a, **k):
        self.calls += 1
        if self.calls > self.ok:
            raise KeyboardInterrupt
        return self.fn(*a, **k)


class _Count:
    def __init__(self, fn, size=lambda a, k: 1):
        self.fn, self.size, self.n = fn, size, 0

    def __call__(self, *a, **k):
        self.n += self.size(a, k)
        return self.fn(*a, **k)


def _interrupted(capsys, argv):
    assert main(argv) == 130
    cap = capsys.readouterr()
    assert "resume" in cap.err and cap.out == ""


# ---------------------------------------------------------------------------------- audit


# --workers 1: one block at a time, so that which trials an interruption keeps is deterministic (with
# more workers the records are the same, tests/experiments/test_executors.py, but blocks finish in any order)
_PA = ["audit", "prior-aware", "--noise-multiplier", "1", "--steps", "3", "--n-known", "30", "--prior-size", "4",
       "--trials", "6", "--chunk-size", "2", "--workers", "1", "--seed", "3"]


def test_audit_prior_aware_interrupt_resume(cli, capsys, tmp_path, monkeypatch):
    import rerokit.experiments.audit as A

    straight, err = cli.json_and_stderr([*_PA, "--out", str(tmp_path / "a.jsonl")])  # progress bar shown
    assert "prior-aware trials" in err  # tqdm on stderr, stdout stayed one JSON object
    assert straight["seed"] == 3 and straight["trials"] == 6
    _, ref = _records(tmp_path / "a.jsonl")

    out = tmp_path / "b.jsonl"
    orig = A.train_chunk
    monkeypatch.setattr(A, "train_chunk", _Interrupt(orig, ok=1))
    _interrupted(capsys, [*_PA, "--out", str(out), "--no-progress"])
    settings, part = _records(out)
    assert sorted(part) == [0, 1] and settings["seed"] == 3  # the finished chunk is kept
    line = _refused(capsys, [*_PA, "--out", str(out), "--no-progress"])  # unfinished, not resumed: both ways named
    assert "holds 2 of the 6 trials" in line and "--resume" in line and "--overwrite" in line
    cnt = _Count(orig, size=lambda a, k: len(a[3]))
    monkeypatch.setattr(A, "train_chunk", cnt)
    resumed, _ = cli.json_and_stderr([*_PA, "--out", str(out), "--resume", "--no-progress"])
    assert cnt.n == 4  # trials 2..5 only
    _, rec = _records(out)
    assert sorted(rec) == list(range(6))
    for i in range(6):
        for k in ("seed", "prior", "target", "guess", "success"):
            assert rec[i][k] == ref[i][k]
        assert rec[i]["target_clipped_fraction"] == pytest.approx(ref[i]["target_clipped_fraction"])
    assert rec[0] == part[0] and rec[1] == part[1]
    assert resumed["success"] == straight["success"] and resumed["seed"] == 3

    # other settings: with --resume (header mismatch) and without (both options named)
    assert "other settings" in _refused(capsys, [*_PA[:-1], "4", "--out", str(out), "--resume"])
    line = _refused(capsys, [*_PA[:-1], "4", "--out", str(out)])
    assert "other settings" in line and "--resume" in line and "--overwrite" in line
    # the same command again on the finished file: reported again, nothing trained (the README's job re-run)
    cnt = _Count(orig, size=lambda a, k: len(a[3]))
    monkeypatch.setattr(A, "train_chunk", cnt)
    again, err = cli.json_and_stderr([*_PA, "--out", str(out)])
    assert cnt.n == 0 and again["success"] == straight["success"] and "already holds the 6 trials" in err
    assert "--resume" in _refused(capsys, [*_PA, "--out", str(out), "--resume", "--overwrite"])
    again, _ = cli.json_and_stderr([*_PA, "--out", str(out), "--overwrite", "--no-progress"])  # runs them again
    assert cnt.n == 6 and again["success"] == straight["success"] and _records(out)[1] == rec


def test_audit_gradient_appends_each_trial(cli, capsys, tmp_path, monkeypatch):
    import rerokit.attacks.gradient as G

    argv = ["audit", "gradient", "--noise-multiplier", "1", "--steps", "2", "--n-known", "20", "--prior-size", "4",
            "--trials", "3", "--chunk-size", "2", "--iterations", "3", "--restarts", "1", "--seed", "2",
            "--no-progress", "--workers", "1"]
    straight, _ = cli.json_and_stderr([*argv, "--out", str(tmp_path / "a.jsonl")])
    assert straight["seed"] == 2
    _, ref = _records(tmp_path / "a.jsonl")
    out = tmp_path / "b.jsonl"
    orig = G.gradient_attack
    monkeypatch.setattr(G, "gradient_attack", _Interrupt(orig, ok=1))
    _interrupted(capsys, [*argv, "--out", str(out)])
    settings, part = _records(out)
    assert sorted(part) == [0] and settings["seed"] == 2  # trial 0 kept although its chunk was unfinished
    cnt = _Count(orig)
    monkeypatch.setattr(G, "gradient_attack", cnt)
    resumed, _ = cli.json_and_stderr([*argv, "--out", str(out), "--resume"])
    assert cnt.n == 2
    _, rec = _records(out)
    assert sorted(rec) == [0, 1, 2] and rec[0] == part[0]
    for i in range(3):
        assert rec[i]["seed"] == ref[i]["seed"] and rec[i]["target_index"] == ref[i]["target_index"]
        # trial 1 was trained in another chunk: equal up to batched-kernel rounding
        assert rec[i]["mse"] == pytest.approx(ref[i]["mse"], rel=1e-4)
    assert resumed["mse"] == pytest.approx(straight["mse"], rel=1e-4)


# ---------------------------------------------------------------------------------- attacks


def test_analytic_chunks_interrupt_resume_and_cli_refusals(cli, capsys, tmp_path, monkeypatch):
    import numpy as np

    import rerokit.attacks.analytic as AN
    from rerokit.data import load_dataset
    from rerokit.executors import RunOptions
    from rerokit.experiments.analytic import AnalyticConfig, run_analytic_attack  # moved from rerokit.attacks.analytic
    from rerokit.experiments.records import TrialLog

    X = load_dataset("digits").flat[:7].astype(np.float64)
    kw = dict(config=AnalyticConfig(noise_multiplier=0.5, clip=1.0, backend="vmap"), seed=4,
              options=RunOptions(chunk_size=3, progress=False))
    straight = run_analytic_attack(X, **kw)
    p = tmp_path / "an.jsonl"
    orig = AN.vectorized_analytic_attack
    monkeypatch.setattr(AN, "vectorized_analytic_attack", _Interrupt(orig, ok=1))
    with pytest.raises(KeyboardInterrupt):
        run_analytic_attack(X, log=TrialLog(p, {"seed": 4}), **kw)
    assert sorted(_records(p)[1]) == [0, 1, 2]
    cnt = _Count(orig, size=lambda a, k: len(a[0]))
    monkeypatch.setattr(AN, "vectorized_analytic_attack", cnt)
    resumed = run_analytic_attack(X, log=TrialLog(p, {"seed": 4}, resume=True), **kw)
    assert cnt.n == 4
    assert resumed["per_target"] == straight["per_target"]  # per-target noise streams: exactly equal

    argv = ["attack", "analytic", "--noise-multiplier", "0.5", "--clip", "1", "--targets", "3", "--seed", "1",
            "--backend", "vmap", "--out", str(tmp_path / "cli.jsonl")]
    d, err = cli.json_and_stderr(argv)
    assert d["settings"]["seed"] == 1 and "analytic attack" in err
    assert _records(tmp_path / "cli.jsonl")[0]["seed"] == 1
    monkeypatch.setattr(AN, "vectorized_analytic_attack", _Interrupt(orig, ok=0))  # nothing may be recomputed
    again, _ = cli.json_and_stderr([*argv, "--resume"])
    assert again["per_target"] == d["per_target"]
    assert cli.json_and_stderr(argv)[0]["per_target"] == d["per_target"]  # finished: reported again
    assert "other settings" in _refused(capsys, [*argv[:-5], "4", *argv[-4:], "--resume"])


_RECONN = ["--shadow-models", "30", "--fixed-size", "20", "--epochs", "2", "--targets", "4", "--reconstructor-epochs",
           "1", "--reconstructor-hidden", "8", "--seed", "5", "--no-png"]


def test_attack_reconn_checks_out_before_training_and_resumes(cli, capsys, tmp_path, monkeypatch):
    import rerokit.attacks.reconn as R

    out = tmp_path / "r.jsonl"
    d, err = cli.json_and_stderr(["attack", "reconn", *_RECONN, "--out", str(out)])
    assert d["settings"]["seed"] == 5 and "[reconn]" in err  # progress lines on stderr only
    settings, ref = _records(out)
    assert settings["seed"] == 5 and sorted(ref) == [0, 1, 2, 3]
    # drop the last two targets (as if cut), resume: deterministic recomputation appends them unchanged
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:3]) + "\n")
    again, _ = cli.json_and_stderr(["attack", "reconn", *_RECONN, "--out", str(out), "--resume", "--quiet"])
    assert _records(out)[1] == ref and again["mse"] == d["mse"]

    def boom(*a, **k):
        raise AssertionError("trained before checking --out")

    monkeypatch.setattr(R, "train_models", boom)
    out.write_text("\n".join(out.read_text().splitlines()[:3]) + "\n")  # unfinished
    line = _refused(capsys, ["attack", "reconn", *_RECONN, "--out", str(out), "--quiet"])
    assert "holds 2 of the 4 trials" in line and "--overwrite" in line
    assert "other settings" in _refused(capsys, ["attack", "reconn", *_RECONN[:-2], "6", "--no-png", "--out", str(out),
                                                 "--resume", "--quiet"])


# ---------------------------------------------------------------------------------- experiments


def test_experiment_uninformed_fig2_interrupt_resume(cli, capsys, tmp_path, monkeypatch):
    import rerokit.attacks.analytic as AN

    argv = ["experiment", "uninformed-fig2", "--sigmas", "0.1", "--points", "10", "--dim", "2", "--rows", "5",
            "--datasets", "synthetic", "--seed", "7"]
    d, err = cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "a")])
    assert d["settings"]["seed"] == 7 and "uninformed fig2" in err
    _, ref = _records(tmp_path / "a" / "uninformed_fig2.jsonl")
    orig = AN.vectorized_analytic_attack
    monkeypatch.setattr(AN, "vectorized_analytic_attack", _Interrupt(orig, ok=1))
    _interrupted(capsys, [*argv, "--out-dir", str(tmp_path / "b"), "--no-progress"])
    cnt = _Count(orig)
    monkeypatch.setattr(AN, "vectorized_analytic_attack", cnt)
    cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "b"), "--resume", "--no-progress"])
    settings, rec = _records(tmp_path / "b" / "uninformed_fig2.jsonl")
    assert cnt.n == len(ref) - 1 and rec == ref and settings["seed"] == 7
    assert "other settings" in _refused(capsys, [*argv[:-1], "8", "--out-dir", str(tmp_path / "b"), "--resume"])
    cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "b")])  # finished: reported again
    assert _records(tmp_path / "b" / "uninformed_fig2.jsonl")[1] == ref


def test_experiment_fil_glm_interrupt_resume(cli, capsys, tmp_path, monkeypatch):
    import rerokit.attacks.glm as GLM

    argv = ["experiment", "fil-glm", "--draws", "150", "--seed", "3"]
    d, err = cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "a")])
    assert d["settings"]["seed"] == 3 and "GLM attack draws" in err
    _, ref = _records(tmp_path / "a" / "fil_glm.jsonl")
    orig = GLM.glm_reconstruct_all
    monkeypatch.setattr(GLM, "glm_reconstruct_all", _Interrupt(orig, ok=120))  # inside block 1 (draws 100..149)
    _interrupted(capsys, [*argv, "--out-dir", str(tmp_path / "b"), "--no-progress"])
    assert sorted(_records(tmp_path / "b" / "fil_glm.jsonl")[1]) == [0]
    cnt = _Count(orig)
    monkeypatch.setattr(GLM, "glm_reconstruct_all", cnt)
    resumed, _ = cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "b"), "--resume", "--no-progress"])
    settings, rec = _records(tmp_path / "b" / "fil_glm.jsonl")
    assert cnt.n == 50 and rec == ref and settings["seed"] == 3
    for k in ("fraction_bound_holds", "spearman", "attack_mse_median"):
        assert resumed[k] == d[k]
    assert "other settings" in _refused(capsys, [*argv[:-1], "4", "--out-dir", str(tmp_path / "b"), "--resume"])


def test_experiment_hayes_fig3_interrupt_resume(cli, capsys, tmp_path, monkeypatch):
    import rerokit.experiments.audit as A
    import rerokit.experiments.hayes_figures as H

    # sigma calibration (PLD, seconds per epsilon) is not under test here
    monkeypatch.setattr(H, "sigma_for_epsilon", lambda e, d, q, T: 1.0 + 1.0 / e)
    argv = ["experiment", "hayes-fig3", "--epsilons", "1", "8", "--trials", "2", "--steps", "2", "--n-known", "20",
            "--prior-size", "4", "--seed", "9"]
    d, err = cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "a")])
    assert d["seed"] == 9 and "prior-aware trials" in err
    orig = A.train_chunk
    monkeypatch.setattr(A, "train_chunk", _Interrupt(orig, ok=1))  # dies in the second epsilon
    _interrupted(capsys, [*argv, "--out-dir", str(tmp_path / "b"), "--no-progress"])
    cnt = _Count(orig)
    monkeypatch.setattr(A, "train_chunk", cnt)
    resumed, _ = cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "b"), "--resume", "--no-progress"])
    assert cnt.n == 1  # epsilon 1 not redone
    for e in ("1", "8"):
        settings, rec = _records(tmp_path / "b" / f"fig3_eps{e}.jsonl")
        _, ref = _records(tmp_path / "a" / f"fig3_eps{e}.jsonl")
        assert settings["seed"] == 9 and sorted(rec) == [0, 1]
        for i in rec:
            assert all(rec[i][k] == ref[i][k] for k in ("seed", "prior", "target", "guess", "success"))
    assert resumed["rows"] == d["rows"]
    assert "other settings" in _refused(capsys, [*argv[:-1], "10", "--out-dir", str(tmp_path / "b"), "--resume",
                                                 "--no-progress"])


def test_experiment_reconn_dpgd_interrupt_resume(cli, capsys, tmp_path, monkeypatch):
    import rerokit.experiments.reconn as R  # run_reconn moved here from rerokit.attacks.reconn

    argv = ["experiment", "reconn-dpgd", "--epsilons", "10", "--shadow-models", "30", "--fixed-size", "20",
            "--epochs", "2", "--targets", "4", "--reconstructor-epochs", "1", "--seed", "5", "--quiet"]
    d, _ = cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "a")])
    assert d["seed"] == 5
    _, ref = _records(tmp_path / "a" / "reconn_dpgd.jsonl")
    orig = R.run_reconn
    monkeypatch.setattr(R, "run_reconn", _Interrupt(orig, ok=1))  # dies at epsilon = 10 (after the no-DP run)
    _interrupted(capsys, [*argv, "--out-dir", str(tmp_path / "b")])
    assert sorted(_records(tmp_path / "b" / "reconn_dpgd.jsonl")[1]) == [0]
    cnt = _Count(orig)
    monkeypatch.setattr(R, "run_reconn", cnt)
    resumed, _ = cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "b"), "--resume"])
    settings, rec = _records(tmp_path / "b" / "reconn_dpgd.jsonl")
    assert cnt.n == 1 and rec == ref and settings["seed"] == 5
    assert resumed["rows"] == d["rows"] and math.isfinite(resumed["rows"][1]["mse"])
    assert "other settings" in _refused(capsys, [*argv[:-2], "6", "--quiet", "--out-dir", str(tmp_path / "b"),
                                                 "--resume"])


def test_trial_log_resume_rewrite_is_atomic(tmp_path, monkeypatch):
    """Opening with resume rewrites the file (dropping a cut last line); an interruption during
    that rewrite must leave the finished trials in place."""
    import rerokit.experiments.records as rr

    p = tmp_path / "t.jsonl"
    log = rr.TrialLog(p, {"seed": 1})
    for i in range(3):
        log.append(i, {"x": i})
    with open(p, "a") as f:
        f.write('{"kind": "trial", "tri')  # a line cut by an interruption
    before = p.read_text()
    real = rr.json.dumps
    calls = {"n": 0}

    def dumps(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:  # settings copy, header, then the first trial of the rewrite
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(rr.json, "dumps", dumps)
    with pytest.raises(KeyboardInterrupt):
        rr.TrialLog(p, {"seed": 1}, resume=True)
    monkeypatch.setattr(rr.json, "dumps", real)
    assert p.read_text() == before
    again = rr.TrialLog(p, {"seed": 1}, resume=True)
    assert again.done == {0, 1, 2} and p.read_text() == before.rsplit("\n", 1)[0] + "\n"


@pytest.mark.parametrize("argv", [
    ["experiment", "hayes-fig5", "--sample-rates", "0.5", "1", "--attacks", "alg3"],
    ["experiment", "hayes-fig8", "--epsilons", "2", "--prior-sizes", "2", "4", "--gradient-trials", "1",
     "--iterations", "2", "--restarts", "1"],
])
def test_experiment_hayes_fig5_fig8_resume_repeats_nothing(cli, capsys, tmp_path, monkeypatch, argv):
    import rerokit.experiments.audit as A
    import rerokit.experiments.hayes_figures as H

    monkeypatch.setattr(H, "sigma_for_epsilon", lambda e, d, q, T: 1.0 + 1.0 / e)  # calibration is not under test
    argv = [*argv, "--trials", "2", "--steps", "2", "--n-known", "20", "--no-progress", "--out-dir", str(tmp_path)]
    d, _ = cli.json_and_stderr([*argv, "--seed", "4"])
    assert d["seed"] == 4
    files = sorted(tmp_path.glob("*.jsonl"))
    assert files and all(_records(f)[0]["seed"] == 4 for f in files)
    cnt = _Count(A.train_chunk)
    monkeypatch.setattr(A, "train_chunk", cnt)
    again, _ = cli.json_and_stderr([*argv, "--seed", "4", "--resume"])
    assert cnt.n == 0 and again["rows"] == d["rows"]
    assert cli.json_and_stderr([*argv, "--seed", "4"])[0]["rows"] == d["rows"] and cnt.n == 0  # finished: reused
    assert "other settings" in _refused(capsys, [*argv, "--seed", "5", "--resume"])
