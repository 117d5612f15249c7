"""Executors (rerokit.executors) and the audit's fixed blocks, without Ray: blocks are fixed
whatever the executor, the order blocks finish in, the process's thread count or a resume, so
the records are the same bit for bit; the executor and device options fail with one line."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from rerokit.executors import Block, LocalExecutor, get_executor, plan_blocks
from rerokit.experiments.audit import AuditConfig, GradientAttack, RunOptions
from rerokit.experiments.audit import run_audit, run_gradient_audit, run_prior_aware_audit

TINY = dict(noise_multiplier=1.0, n_known=29, steps=4, clip=0.1, lr=2.0, prior_size=4)


def _lines(path):
    return path.read_text().splitlines()


class _Reversed(LocalExecutor):
    """Blocks in reverse order (as Ray workers may finish them): the file must come out the same."""

    def run(self, fn, job, blocks, emit, **kw):
        super().run(fn, job, list(reversed(blocks)), emit, **kw)


def test_plan_blocks_fixed_boundaries_and_missing_items():
    blocks = plan_blocks(10, 4, done={0, 1, 2, 3, 5}, payload=lambda lo, hi: list(range(lo, hi)))
    assert [(b.index, b.lo, b.hi, b.todo) for b in blocks] == [(1, 4, 8, (4, 6, 7)), (2, 8, 10, (8, 9))]
    assert blocks[0].payload == [4, 5, 6, 7]  # a partly done block is recomputed whole
    assert plan_blocks(3, 5) == [Block(0, 0, 3, (0, 1, 2))]
    assert plan_blocks(0, 5) == []
    with pytest.raises(ValueError, match="block_size"):
        plan_blocks(3, 0)


def test_blocks_do_not_depend_on_order_threads_or_resume(tmp_path, monkeypatch):
    cfg = AuditConfig(**TINY)
    kw = dict(attacks=("alg2", "loglik"))
    run = dict(chunk_size=3, progress=False)
    ref = tmp_path / "ref.jsonl"
    run_prior_aware_audit(cfg, 10, 7, **kw, options=RunOptions(**run, out=str(ref)))
    # blocks finishing in another order: records appended out of order, file sorted at the end
    rev = tmp_path / "rev.jsonl"
    run_prior_aware_audit(cfg, 10, 7, **kw, options=RunOptions(**run, out=str(rev), executor=_Reversed()))
    assert rev.read_bytes() == ref.read_bytes()
    # the process's own thread count does not matter: every block runs with one thread
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        thr = tmp_path / "thr.jsonl"
        run_prior_aware_audit(cfg, 10, 7, **kw, options=RunOptions(**run, out=str(thr)))
        assert torch.get_num_threads() == 2  # restored after the blocks
    finally:
        torch.set_num_threads(old)
    assert thr.read_bytes() == ref.read_bytes()
    # a resume after a cut inside block 1 (trials 3-5): block 1 recomputed whole, only 5.. appended
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(_lines(ref)[:6]) + "\n")  # header + trials 0..4
    rep = run_prior_aware_audit(cfg, 10, 7, **kw, options=RunOptions(**run, out=str(cut), resume=True))
    assert cut.read_bytes() == ref.read_bytes() and rep.results["alg2"].trials == 10
    # a hole (a block lost while later ones finished, as on Ray): filled in, file sorted
    hole = tmp_path / "hole.jsonl"
    lines = _lines(ref)
    hole.write_text("\n".join([lines[0], *lines[1:4], *lines[7:]]) + "\n")  # trials 3-5 missing
    run_prior_aware_audit(cfg, 10, 7, **kw, options=RunOptions(**run, out=str(hole), resume=True))
    assert hole.read_bytes() == ref.read_bytes()


def test_gradient_audit_partial_block_resume_is_bit_identical(tmp_path, monkeypatch):
    import rerokit.attacks.gradient as G

    cfg = AuditConfig(**{**TINY, "steps": 2})
    kw = dict(attack=GradientAttack(iterations=3, restarts=1))
    run = dict(chunk_size=3, progress=False, executor=LocalExecutor(workers=1))
    ref = tmp_path / "ref.jsonl"
    run_gradient_audit(cfg, 5, 2, **kw, options=RunOptions(**run, out=str(ref)))
    orig, calls = G.gradient_attack, []

    def stop_after_four(*a, **k):
        calls.append(1)
        if len(calls) > 4:
            raise KeyboardInterrupt
        return orig(*a, **k)

    part = tmp_path / "part.jsonl"
    monkeypatch.setattr(G, "gradient_attack", stop_after_four)
    with pytest.raises(KeyboardInterrupt):
        run_gradient_audit(cfg, 5, 2, **kw, options=RunOptions(**run, out=str(part)))
    assert len(_lines(part)) == 5  # trials 0-3: block 1 (3-5) was cut after trial 3
    monkeypatch.setattr(G, "gradient_attack", orig)
    run_gradient_audit(cfg, 5, 2, **kw, options=RunOptions(**run, out=str(part), resume=True))
    assert part.read_bytes() == ref.read_bytes()  # trial 4 recomputed in its own block: exactly equal


def test_settings_record_block_size_and_device_and_refuse_another_block_size(tmp_path):
    p = tmp_path / "a.jsonl"
    rep = run_prior_aware_audit(AuditConfig(**TINY), 3, 1, attacks=("alg2",), options=RunOptions(chunk_size=2, out=str(p), progress=False))
    header = json.loads(_lines(p)[0])["settings"]
    assert header["chunk_size"] == 2 and header["device"] == "cpu" and header["seed"] == 1
    assert rep.settings == header
    with pytest.raises(ValueError, match="other settings .*chunk_size: 2 in the file, 3 now"):
        run_prior_aware_audit(AuditConfig(**TINY), 3, 1, attacks=("alg2",), options=RunOptions(chunk_size=3, out=str(p), resume=True, progress=False))


def test_library_run_audit_reproduces_the_command(cli):
    argv = ["audit", "prior-aware", "--epsilon", "4", "--trials", "6", "--steps", "5", "--n-known", "29", "--seed",
            "1", "--no-progress"]
    d = cli.json(argv)
    cfg = AuditConfig.resolve(epsilon=4, steps=5, n_known=29)
    assert cfg.epsilon == 4 and cfg.delta == 1e-5 and cfg.noise_multiplier == d["noise_multiplier"]
    summary = run_audit("prior-aware", cfg, trials=6, seed=1, options=RunOptions(progress=False)).summary()
    got = summary.to_dict()
    assert got == {k: v for k, v in d.items() if k != "rerokit_version"}
    assert list(got) == [k for k in d if k != "rerokit_version"]  # the command's key order
    assert summary.trials == 6 and summary.result.metric == "success" and summary.empirical is not None
    # the same from arguments, and from_epsilon
    assert run_audit(epsilon=4, steps=5, n_known=29, trials=6, seed=1, options=RunOptions(progress=False)).summary() == summary
    assert AuditConfig.from_epsilon(4, steps=5, n_known=29) == cfg


def test_resolve_defaults_and_errors(tmp_path):
    assert AuditConfig.resolve(noise_multiplier=1.0).n_known == 999
    assert AuditConfig.resolve(noise_multiplier=1.0, prior_size=1000).n_known == 1797 - 1000
    (tmp_path / "x").mkdir()  # not read here: the default needs no data
    assert AuditConfig.resolve(noise_multiplier=1.0, dataset="mnist", data_path=tmp_path / "x").n_known == 999
    with pytest.raises(ValueError, match="data_path: .* does not exist"):  # a missing path: refused before any work
        AuditConfig.resolve(noise_multiplier=1.0, dataset="mnist", data_path=tmp_path / "missing")
    with pytest.raises(ValueError, match="epsilon"):
        AuditConfig.resolve()
    with pytest.raises(ValueError, match="not both"):
        AuditConfig.resolve(epsilon=1.0, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="delta"):
        AuditConfig.resolve(epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="n_known"):
        AuditConfig.resolve(noise_multiplier=1.0, n_known=1790)
    with pytest.raises(ValueError, match="kind"):
        run_audit("membership", noise_multiplier=1.0)
    with pytest.raises(ValueError, match="config"):
        run_audit(config=AuditConfig(noise_multiplier=1.0), epsilon=2.0)


@pytest.mark.parametrize("opts, words", [
    (["--workers", "0"], ["workers"]),
    (["--executor", "ray", "--workers", "-2"], ["workers"]),
    (["--address", "10.0.0.1:6379"], ["address", "executor ray"]),
    (["--executor", "spark"], ["executor", "local, ray"]),
    (["--device", "tpu"], ["device", "cpu, cuda, auto"]),
])
def test_execution_options_refused_before_any_work(cli, monkeypatch, opts, words):
    import rerokit.experiments.audit as A

    monkeypatch.setattr(A, "train_chunk", lambda *a, **k: pytest.fail("trained before refusing"))
    line = cli.error(["audit", "prior-aware", "--noise-multiplier", "1", "--trials", "2", "--no-progress", *opts])
    assert all(w in line for w in words), line


def test_executor_ray_without_ray_says_how_to_install(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    line = cli.error(["audit", "prior-aware", "--noise-multiplier", "1", "--no-progress", "--executor", "ray"])
    assert 'pip install "rerokit[ray]"' in line
    with pytest.raises(ValueError, match="rerokit\\[ray\\]"):
        get_executor("ray", workers=2)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is available here")
def test_device_cuda_without_gpu_is_one_line(cli):
    line = cli.error(["audit", "prior-aware", "--noise-multiplier", "1", "--no-progress", "--device", "cuda"])
    assert "cuda" in line and "no CUDA device" in line


def test_device_auto_runs_and_is_recorded(cli):
    d = cli.json(["audit", "gradient", "--noise-multiplier", "1", "--trials", "1", "--steps", "2", "--n-known", "9",
                  "--iterations", "2", "--restarts", "1", "--no-progress", "--device", "auto"])
    assert d["settings"]["device"] == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("kind, extra", [("prior-aware", []), ("gradient", ["--iterations", "5", "--restarts", "1"])])
def test_local_workers_run_blocks_concurrently_with_identical_records(cli, tmp_path, kind, extra):
    """--workers 2 with the local executor runs two audit blocks at a time on threads (one torch
    thread each): the JSONL file and the summary are byte-identical to one block at a time."""
    base = ["audit", kind, "--noise-multiplier", "1", "--trials", "9", "--chunk-size", "2", "--steps", "4",
            "--n-known", "29", "--seed", "5", "--no-progress", *extra]
    one = cli.json([*base, "--out", tmp_path / "one.jsonl", "--workers", "1"])
    two = cli.json([*base, "--out", tmp_path / "two.jsonl", "--workers", "2"])
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
    one.pop("out", None), two.pop("out", None)
    assert one == two


def test_local_workers_emit_in_block_order_within_a_window():
    """With workers > 1 the local executor writes items in block order although a later block
    finishes first, and starts at most ``workers`` blocks ahead of the oldest unfinished one (so an
    interruption loses at most ``workers`` blocks); an error in a block stops the run with it."""
    import threading

    release = threading.Event()
    started: list[int] = []

    def fn(job, block):
        started.append(block.index)
        if block.index == 0:  # the head block waits until block 1 has finished
            assert release.wait(10)
        for i in block.todo:
            yield i, i * job
        if block.index == 1:
            release.set()

    fn.thread_safe = True
    emitted: list[int] = []
    blocks = plan_blocks(12, 3)
    LocalExecutor(workers=2).run(fn, 10, blocks, lambda i, r: emitted.append((i, r)))
    assert emitted == [(i, 10 * i) for i in range(12)]
    assert sorted(started) == [0, 1, 2, 3]
    assert started.index(2) > started.index(1)  # block 2 waited for a free slot in the window

    def bad(job, block):
        if block.index == 2:
            raise ValueError("block 2 is broken")
        yield from ((i, i) for i in block.todo)

    bad.thread_safe = True
    got: list[int] = []
    with pytest.raises(ValueError, match="block 2 is broken"):
        LocalExecutor(workers=2).run(bad, None, blocks, lambda i, r: got.append(i))
    assert got == list(range(len(got))) and len(got) <= 6  # in order; nothing after the broken block


def test_local_executor_refuses_unfixed_threads_with_workers():
    with pytest.raises(ValueError, match="threads"):
        LocalExecutor(threads=None, workers=2)
    with pytest.raises(ValueError, match="workers"):
        LocalExecutor(workers=0)


def test_first_line_and_progress_name_the_local_workers(cli):
    """The audit's first stderr line and its progress bar say how it runs (``local, 2 workers``)."""
    base = ["audit", "prior-aware", "--noise-multiplier", "1", "--trials", "4", "--chunk-size", "2", "--steps", "2",
            "--n-known", "9", "--seed", "5"]
    _, err1 = cli.json_and_stderr([*base, "--workers", "1"])
    _, err2 = cli.json_and_stderr([*base, "--workers", "2"])
    assert err1.splitlines()[0].endswith("seed 5, executor local")
    assert err2.splitlines()[0].endswith("seed 5, executor local, 2 workers")
    assert "prior-aware trials (local, 2 workers)" in err2 and "(local" not in err1
