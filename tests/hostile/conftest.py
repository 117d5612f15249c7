"""The hostile corpus: files, records and processes generated once per session, API values
(``test_api.py``: every public function x parameter x hostile value), and the contract every case
is held to.

The contract (project standard): a refusal is exit code 2 with exactly one ``error:`` line on
stderr naming the option or file, never a traceback; nothing hangs (subprocesses run under a
timeout); nothing a user had is lost (a results file stays readable and resumable). In-process
cases cap the memory limit (``rerokit._resources.memory_limit``) at 200 MB so that size checks are
exercised on any machine, and run ``rerokit.cli.main`` directly; the cases that need a real
second process (locks through links, signals) run ``python -m rerokit.cli`` under a timeout.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import rerokit

SRC = str(Path(rerokit.__file__).resolve().parents[1])
MEMORY_CAP = 200 * 10**6
"""The memory limit the in-process cases run under (bytes)."""


def env() -> dict[str, str]:
    """The environment of a child ``rerokit`` process: this tree's sources first."""
    e = dict(os.environ)
    e["PYTHONPATH"] = SRC + os.pathsep + e.get("PYTHONPATH", "")
    return e


def run_cli(argv, *, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """``python -m rerokit.cli ARGV`` in a child process, killed after ``timeout`` s (a hang fails)."""
    return subprocess.run([sys.executable, "-m", "rerokit.cli", *map(str, argv)], capture_output=True, text=True,
                          env=env(), timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def assert_refused(code: int, out: str, err: str, *names: str) -> str:
    """Exit 2, one ``error:`` line on stderr naming every ``names``, no traceback; returns the line."""
    lines = err.strip().splitlines()
    assert "Traceback" not in out + err, err
    assert code == 2, f"exit {code}: {err!r}"
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    for n in names:
        assert n in lines[0], f"{n!r} not named in {lines[0]!r}"
    assert all(ch.isprintable() for ch in lines[0]), lines[0]
    return lines[0]


@pytest.fixture
def refused(capsys, monkeypatch):
    """``refused(argv, *names)``: run in-process under the memory cap, assert the contract."""
    import rerokit._resources as res

    monkeypatch.setattr(res, "memory_limit", lambda: MEMORY_CAP)
    return _refuser(capsys)


@pytest.fixture
def refused_run(capsys):
    """``refused_run(argv, *names)``: as :func:`refused`, under the machine's own memory limit (runs
    whose fixed working set, e.g. a DP-SGD transcript block, is above the cap)."""
    return _refuser(capsys)


def _refuser(capsys):
    from rerokit.cli import main

    def check(argv, *names):
        code = main([str(a) for a in argv])
        cap = capsys.readouterr()
        return assert_refused(code, cap.out, cap.err, *map(str, names))

    return check


# --------------------------------------------------------------------------------------------- files
def _gzip_idx(dims: tuple[int, ...], payload: int) -> bytes:
    """A gzipped unsigned-byte IDX file whose header declares ``dims`` and holding ``payload`` zeros:
    a few kB that inflate to the declared size (a compression bomb when ``dims`` is large)."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as g:
        g.write(b"\x00\x00\x08" + bytes([len(dims)]) + struct.pack(">" + "I" * len(dims), *dims))
        chunk = b"\x00" * (1 << 20)
        left = payload
        while left > 0:
            g.write(chunk[: min(left, len(chunk))])
            left -= len(chunk)
    return raw.getvalue()


def _pickle_calling(module: str, name: str, *args) -> bytes:
    """A protocol-2 pickle that calls ``module.name(*args)`` (GLOBAL + TUPLE + REDUCE)."""
    body = b"".join(pickle.dumps(a, protocol=2)[2:-1] for a in args)
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"(" + body + b"tR."


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """Hostile files by name (generated once; a few MB on disk in all)."""
    d = tmp_path_factory.mktemp("hostile")
    c: dict[str, Path] = {}

    def put(name: str, data: bytes) -> Path:
        p = d / name
        p.write_bytes(data)
        c[name] = p
        return p

    put("empty.npz", b"")
    put("text.npz", b"x_train,y_train\n1,2\n")
    put("random.npz", np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    put("zip_garbage.npz", b"PK\x03\x04" + b"\x00" * 100)
    fifo = d / "fifo.npz"
    os.mkfifo(fifo)
    c["fifo.npz"] = fifo
    c["dir"] = d / "a_folder"
    c["dir"].mkdir()
    loop = d / "loop.npz"
    loop.symlink_to(loop)
    c["loop.npz"] = loop
    # an npz compression bomb: 47 MB of zeros in ~50 kB (above the 200 MB cap once converted)
    b = io.BytesIO()
    np.savez_compressed(b, x_train=np.zeros((60000, 28, 28), np.uint8), y_train=np.zeros(60000, np.uint8))
    put("bomb.npz", b.getvalue())
    # an .npy header declaring shape (1e11, 1e5) over 64 bytes (numpy allocated for the declared shape:
    # a MemoryError naming no file), alone and as both members of an .npz
    hdr = b"{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000, 100000), }"
    npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", 118) + hdr.ljust(117) + b"\n" + b"\x00" * 64
    put("hugeshape.npy", npy)
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("x_train.npy", npy)
        zf.writestr("y_train.npy", npy)
    put("hugeshape.npz", z.getvalue())
    # MNIST folders: a gzip IDX bomb (header declares 60000 x 28 x 28, 47 MB once inflated), a header that
    # declares 4e9 values, a FIFO where an image file should be, a truncated gzip
    for name, images in (("mnist_bomb", _gzip_idx((60000, 28, 28), 60000 * 784)),
                         ("mnist_huge_header", _gzip_idx((4000, 1000, 1000), 1000)),
                         ("mnist_truncated", _gzip_idx((10, 28, 28), 7840)[:-20])):
        f = d / name
        f.mkdir()
        (f / "train-images-idx3-ubyte.gz").write_bytes(images)
        (f / "train-labels-idx1-ubyte.gz").write_bytes(_gzip_idx((10,), 10))
        c[name] = f
    f = d / "mnist_fifo"
    f.mkdir()
    os.mkfifo(f / "train-images-idx3-ubyte")
    (f / "train-labels-idx1-ubyte.gz").write_bytes(_gzip_idx((10,), 10))
    c["mnist_fifo"] = f
    # CIFAR-10 folders whose first batch is a crafted pickle
    for name, data in (("cifar_codec", _pickle_calling("_codecs", "encode", "x", "no-such-codec")),
                       ("cifar_errors", _pickle_calling("_codecs", "encode", "x", "latin1", "no-such-handler")),
                       ("cifar_system", _pickle_calling("os", "system", "echo pwned")),
                       ("cifar_garbage", b"\x80\x02garbage")):
        f = d / name
        f.mkdir()
        (f / "data_batch_1").write_bytes(data)
        c[name] = f
    # report inputs: nesting beyond any stack, odd JSON
    put("deep_list.json", b"[" * 100_000 + b"]" * 100_000)
    put("deep_event.json", b'{"ComposedDpEvent": {"events": [' * 3000 + b'{"GaussianDpEvent": {"noise_multiplier": 1}}'
        + b"]}}" * 3000)
    put("count_fraction.json", json.dumps({"SelfComposedDpEvent": {"count": 2.5, "event": {
        "GaussianDpEvent": {"noise_multiplier": 1.0}}}}).encode())
    put("nan.json", b'[[NaN, 0.1, 10]]')
    put("huge_steps.json", json.dumps([[1.0, 0.5, 10**9]]).encode())
    put("not_utf8.json", b"\xff\xfe[1]")
    return c


# --------------------------------------------------------------------------------------------- audit files
AUDIT = ["audit", "prior-aware", "--noise-multiplier", "1", "--steps", "2", "--n-known", "20", "--prior-size", "4",
         "--trials", "4", "--chunk-size", "2", "--workers", "1", "--seed", "3", "--no-progress"]


@pytest.fixture(scope="session")
def finished_audit(tmp_path_factory) -> Path:
    """A finished ``audit prior-aware --out`` file of :data:`AUDIT` (run once, in a child process)."""
    p = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    r = run_cli([*AUDIT, "--out", p, "--json"], timeout=300)
    assert r.returncode == 0, r.stderr
    return p


def tampered(src: Path, dst: Path, edit) -> Path:
    """``src`` with ``edit(record)`` applied to its first trial record, written to ``dst``."""
    lines = src.read_text().splitlines()
    rec = json.loads(lines[1])
    edit(rec)
    lines[1] = json.dumps(rec)
    dst.write_text("\n".join(lines) + "\n")
    return dst


def zip_member_sizes(p: Path) -> int:
    with zipfile.ZipFile(p) as z:
        return sum(i.file_size for i in z.infolist())
