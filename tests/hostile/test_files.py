"""Hostile files given to every file option: one line, exit 2, never a traceback or a hang, and
checked before anything heavy (torch is not imported for a bad data path; a compressed file's
declared size is checked before it is decompressed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import assert_refused, env

DATA = ["attack", "glm", "--dataset"]  # a data-reading command that needs no torch

# (dataset, corpus file, what the one line must name)
DATA_CASES = [
    ("mnist", "empty.npz", "data_path"),
    ("mnist", "text.npz", "data_path"),
    ("mnist", "random.npz", "data_path"),
    ("mnist", "zip_garbage.npz", "data_path"),
    ("mnist", "fifo.npz", "pipe"),
    ("mnist", "loop.npz", "data_path"),
    ("mnist", "bomb.npz", "decompress"),
    ("mnist", "hugeshape.npz", "declares shape (100000000000, 100000)"),
    ("mnist", "hugeshape.npy", "not an .npz archive"),
    ("mnist", "mnist_bomb", "--data-path"),
    ("mnist", "mnist_huge_header", "4000x1000x1000"),
    ("mnist", "mnist_truncated", "data_path"),
    ("mnist", "mnist_fifo", "pipe"),
    ("mnist", "dir", "data_path"),
    ("cifar10", "cifar_codec", "data_path"),
    ("cifar10", "cifar_errors", "data_path"),
    ("cifar10", "cifar_system", "os.system"),
    ("cifar10", "cifar_garbage", "data_path"),
    ("cifar10", "fifo.npz", "pipe"),
]


@pytest.mark.parametrize("dataset, name, named", DATA_CASES, ids=[f"{d}-{n}" for d, n, _ in DATA_CASES])
def test_hostile_data_files_are_one_line(refused, corpus, dataset, name, named):
    refused([*DATA, dataset, "--data-path", corpus[name]], named)


@pytest.mark.parametrize("name", ["empty.npz", "text.npz", "fifo.npz", "loop.npz", "bomb.npz", "dir", "hugeshape.npy",
                                  "hugeshape.npz"])
def test_hostile_sample_files_are_one_line(refused, corpus, name):
    refused(["kappa", "samples", "--samples", corpus[name], "--metric", "l2", "--eta", "0.1"], "samples")


REPORT_CASES = [
    ("--event", "deep_list.json"), ("--event", "deep_event.json"), ("--event", "count_fraction.json"),
    ("--event", "fifo.npz"), ("--event", "not_utf8.json"),
    ("--opacus-history", "deep_list.json"), ("--opacus-history", "nan.json"), ("--opacus-history", "fifo.npz"),
    ("--audit", "deep_list.json"), ("--audit", "fifo.npz"), ("--audit", "not_utf8.json"), ("--audit", "random.npz"),
]


@pytest.mark.parametrize("opt, name", REPORT_CASES, ids=[f"{o}-{n}" for o, n in REPORT_CASES])
def test_hostile_report_inputs_are_one_line(refused, corpus, opt, name):
    refused(["report", opt, corpus[name]], name)


def test_a_schedule_whose_accounting_does_not_fit_is_refused_before_it_starts(refused, corpus):
    refused(["report", "--opacus-history", corpus["huge_steps.json"]], "--opacus-history", "1000000000 DP-SGD steps")
    refused(["report", "--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "1000000000"], "--steps")
    refused(["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "10000000"], "--steps")
    refused(["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "10000000",
             "--fpr", "0.1"], "--steps")


def test_a_fraction_of_a_composition_is_refused_not_truncated(refused, corpus):
    line = refused(["report", "--event", corpus["count_fraction.json"]], "count")
    assert "2.5" in line


def test_a_bad_data_path_is_refused_before_torch_is_imported(corpus, tmp_path):
    """The README's main job with a data path that is not there: one line, and torch never imported."""
    code = ("import sys\nfrom rerokit.cli import main\n"
            f"code = main(['audit', 'prior-aware', '--dataset', 'mnist', '--data-path', {str(tmp_path / 'mydata.npz')!r}])\n"
            "code2 = main(['audit', 'prior-aware', '--dataset', 'mydata.npz'])\n"
            f"code3 = main(['audit', 'prior-aware', '--dataset', 'mnist', '--data-path', {str(corpus['fifo.npz'])!r}])\n"
            "print(code, code2, code3, 'torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env(), timeout=60)
    assert r.stdout.split() == ["2", "2", "2", "False"], r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 3 and "No such file" in lines[0] and "--data-path" in lines[1] and "pipe" in lines[2]


def test_report_outputs_may_not_overwrite_its_inputs(refused, finished_audit, tmp_path):
    before = finished_audit.read_bytes()
    refused(["report", "--audit", finished_audit, "--html", finished_audit], "--html", "--audit")
    link = tmp_path / "card.html"
    link.symlink_to(finished_audit)  # the same file under another name
    refused(["report", "--audit", finished_audit, "--html", link], "--html")
    assert finished_audit.read_bytes() == before


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux /proc")
def test_a_file_that_fails_to_read_is_named(refused):
    """/proc/self/mem passes the regular-file check and fails on read with EIO ('[Errno 5]', no path)."""
    refused([*DATA, "mnist", "--data-path", "/proc/self/mem"], "data_path /proc/self/mem", "cannot read")
