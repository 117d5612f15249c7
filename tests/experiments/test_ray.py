"""``--executor ray``: the same records and summary as the local executor, bit for bit; kill and
resume under Ray loses at most the blocks in flight; a failing block is one error naming it.

Runs on a local Ray of 2 CPUs started here (``ray.init(num_cpus=2, include_dashboard=False)``);
the subprocess runs connect to it with ``--address``. Skipped, with the reason, without ray.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import rerokit

_POLL = threading.Event()  # the polling clock of the waits below: never set, so wait(t) returns after t

ray = pytest.importorskip("ray", reason='ray is not installed (pip install "rerokit[ray]")')

pytestmark = pytest.mark.ray

SRC = str(Path(rerokit.__file__).resolve().parents[1])
# 60 trials in blocks of 4 (15 blocks): enough work that a run can be stopped part-way
PA = ["audit", "prior-aware", "--noise-multiplier", "1", "--trials", "60", "--steps", "30", "--n-known", "300",
      "--prior-size", "4", "--chunk-size", "4", "--seed", "3", "--no-progress"]


@pytest.fixture(scope="module")
def cluster():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    if started:
        ray.shutdown()


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, *filter(None, [os.environ.get("PYTHONPATH")])])}


def _records(path):
    lines = [json.loads(s) for s in Path(path).read_text().splitlines()]
    return lines[0], {r["trial"]: r for r in lines[1:]}


def test_unreachable_address_is_one_line_within_seconds(cli):
    """Before the cluster fixture: this process has no Ray connection yet."""
    t = time.monotonic()
    line = cli.error(["audit", "prior-aware", "--noise-multiplier", "1", "--no-progress", "--executor", "ray",
                      "--address", "127.0.0.1:1"])
    assert "127.0.0.1:1" in line and "cannot reach a Ray cluster" in line
    assert time.monotonic() - t < 30
    assert "host:port" in cli.error(["audit", "prior-aware", "--noise-multiplier", "1", "--executor", "ray",
                                     "--address", "nowhere"])


def test_address_that_is_not_a_ray_cluster_is_one_line_within_seconds(cli, tmp_path):
    """A port that accepts connections but is no Ray cluster (a plain TCP server here)."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    stop = threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conn.close()
            except OSError:
                pass

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        t = time.monotonic()
        addr = f"127.0.0.1:{srv.getsockname()[1]}"
        line = cli.error(["audit", "prior-aware", "--noise-multiplier", "1", "--no-progress", "--executor", "ray",
                          "--address", addr, "--out", tmp_path / "x.jsonl"])
        assert addr in line and "not a Ray cluster" in line
        assert time.monotonic() - t < 60
    finally:
        stop.set()
        th.join()
        srv.close()


def test_ray_equals_local_bit_for_bit(cluster, cli, tmp_path):
    loc = cli.json([*PA, "--out", tmp_path / "local.jsonl"])
    ray_ = cli.json([*PA, "--out", tmp_path / "ray.jsonl", "--executor", "ray", "--workers", "2"])
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert {k: v for k, v in ray_.items() if k != "out"} == {k: v for k, v in loc.items() if k != "out"}
    assert loc["trials"] == 60 and loc["settings"]["chunk_size"] == 4
    # the gradient audit (per-trial records, attack after training) too, with 1 worker
    ga = ["audit", "gradient", "--noise-multiplier", "1", "--trials", "3", "--steps", "2", "--n-known", "20",
          "--chunk-size", "2", "--iterations", "3", "--restarts", "1", "--no-progress"]
    g_loc = cli.json([*ga, "--out", tmp_path / "g_local.jsonl"])
    g_ray = cli.json([*ga, "--out", tmp_path / "g_ray.jsonl", "--executor", "ray", "--workers", "1"])
    assert (tmp_path / "g_ray.jsonl").read_bytes() == (tmp_path / "g_local.jsonl").read_bytes()
    assert g_ray["mse"] == g_loc["mse"]


def test_kill_and_resume_under_ray_loses_at_most_the_blocks_in_flight(cluster, cli, tmp_path):
    out = tmp_path / "killed.jsonl"
    argv = [sys.executable, "-m", "rerokit.cli", *PA, "--executor", "ray", "--workers", "2", "--address", cluster,
            "--out", str(out)]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        deadline = time.monotonic() + 120
        while not out.exists() or out.read_text().count("\n") < 1 + 8:  # header + two blocks
            assert first.poll() is None, f"the run ended before it could be killed: {first.stderr.read()}"
            assert time.monotonic() < deadline, "no block finished within 120 s"
            _POLL.wait(0.01)  # polls the condition above under its deadline (an Event that is never set)
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    lines = out.read_text().split("\n")[1:-1]  # complete lines (a cut last line is dropped on resume)
    kept = {r["trial"]: r for r in map(json.loads, lines)}
    assert 8 <= len(kept) < 60
    top = max(kept) // 4
    lost = [b for b in range(top + 1) if any(i not in kept for i in range(4 * b, 4 * b + 4))]
    assert len(lost) <= 3  # 2 blocks on the workers + the one being appended when killed
    resumed = subprocess.run([*argv, "--resume", "--json"], capture_output=True, text=True, env=_env(), timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    straight = cli.json([*PA, "--out", tmp_path / "straight.jsonl"])
    assert out.read_bytes() == (tmp_path / "straight.jsonl").read_bytes()  # sorted, the same bytes
    assert all(kept[i] == r for i, r in _records(out)[1].items() if i in kept)  # finished trials kept as they were
    d = json.loads(resumed.stdout)
    assert d["success"] == straight["success"] and d["trials"] == 60


def test_failing_block_names_the_block_and_keeps_finished_ones(cluster, cli, tmp_path):
    # lr 1e30 diverges in every block: a ValueError on the worker, re-raised naming the block (exit 2)
    line = cli.error([*PA, "--lr", "1e30", "--executor", "ray", "--out", tmp_path / "d.jsonl"])
    assert "block 0" in line or "block 1" in line
    assert "lr=" in line and "Ray worker" in line
    # an unexpected exception in block 2: BlockFailed naming it, the items of the blocks before handed on.
    # Deterministic, no sleep: block 2 raises only once the driver has emitted every item of blocks 0 and 1
    # (a gate actor opened from the emit callback), so "finished before the failure" is a fact, not a race.
    from rerokit.executors import BlockFailed, RayExecutor, plan_blocks

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    got = []
    with RayExecutor(workers=2) as ex:
        gate = ray.remote(_Gate).options(num_cpus=0).remote()

        def emit(i, r):
            got.append(i)
            if {0, 1, 2, 3, 4, 5} <= set(got):
                gate.open.remote()

        with pytest.raises(BlockFailed, match="block 2 .* on a Ray worker failed: RuntimeError: boom in block 2"):
            ex.run(_boom, gate, plan_blocks(12, 3), emit)
    assert {0, 1, 2, 3, 4, 5} <= set(got) and not {6, 7, 8} & set(got)


class _Gate:
    """A one-shot gate shared by the driver and the Ray workers (an asyncio event in an actor)."""

    def __init__(self):
        import asyncio

        self._event = asyncio.Event()

    async def open(self):
        self._event.set()

    async def wait(self):
        await self._event.wait()
        return True


def _boom(gate, block):
    if block.index == 2:
        assert ray.get(gate.wait.remote(), timeout=300)  # blocks 0 and 1 are emitted on the driver first
        raise RuntimeError("boom in block 2")
    for i in block.todo:
        yield i, i




def test_user_model_factory_imports_on_the_workers(cluster, cli, tmp_path, monkeypatch):
    """--model-factory names a module of the current folder: the workers import it there too."""
    (tmp_path / "ray_user_models.py").write_text(
        "from torch import nn\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self, shape, classes):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(shape[0], 2, 3, padding=1)\n"
        "        self.fc = nn.Linear(2 * shape[1] * shape[2], classes)\n\n"
        "    def forward(self, x):\n"
        "        return self.fc(self.conv(x).tanh().flatten(1))\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    argv = ["audit", "prior-aware", "--noise-multiplier", "1", "--trials", "6", "--steps", "3", "--n-known", "9",
            "--prior-size", "4", "--chunk-size", "2", "--no-progress", "--model-factory", "ray_user_models:Net"]
    try:
        loc = cli.json([*argv, "--out", "local.jsonl"])
        ray_ = cli.json([*argv, "--out", "ray.jsonl", "--executor", "ray", "--workers", "2"])
    finally:
        sys.modules.pop("ray_user_models", None)
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert ray_["settings"]["model_factory"] == "ray_user_models:Net" and ray_["success"] == loc["success"]


@pytest.mark.parametrize("argv, files", [
    (["attack", "analytic", "--noise-multiplier", "0.5", "--clip", "1", "--targets", "250", "--seed", "1",
      "--backend", "vmap", "--no-progress", "--out", "{d}/r.jsonl"], ["r.jsonl"]),
    (["experiment", "fil-glm", "--draws", "300", "--seed", "4", "--no-progress", "--out-dir", "{d}"], ["fil_glm.jsonl"]),
    (["experiment", "uninformed-fig2", "--sigmas", "0.1", "0.5", "--points", "20", "--datasets", "synthetic",
      "--no-progress", "--out-dir", "{d}"], ["uninformed_fig2.jsonl"]),
    (["attack", "reconn", "--shadow-models", "300", "--fixed-size", "50", "--epochs", "5", "--targets", "5",
      "--reconstructor-epochs", "2", "--reconstructor-hidden", "16", "--chunk-size", "64", "--no-png", "--quiet",
      "--out", "{d}/r.jsonl"], ["r.jsonl"]),
], ids=["attack-analytic", "experiment-fil-glm", "experiment-uninformed-fig2", "attack-reconn"])
def test_every_runner_gives_the_same_records_on_ray(cluster, cli, tmp_path, argv, files):
    out = {}
    for ex in ("local", "ray"):
        d = tmp_path / ex
        d.mkdir()
        res = cli.json([a.replace("{d}", str(d)) for a in argv] + ["--executor", ex])
        out[ex] = json.loads(json.dumps(res).replace(str(d), "<dir>"))
        for f in files:
            assert (tmp_path / "ray" / f).exists() or ex == "local"
    for f in files:
        assert (tmp_path / "ray" / f).read_bytes() == (tmp_path / "local" / f).read_bytes()
    assert out["ray"] == out["local"]  # the summaries too (RecoNN's reconstructor and KL classifier included)
