"""CLI: ``rerokit bound uninformed`` and ``rerokit attack analytic`` (paper 004)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from scipy import special

from rerokit.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_bound_uninformed_reference_value(capsys):
    # Issue 3 reference: sigma = 0.1, C = 1 <= min||X||, N = 3072: P(MSE <= 0.01) = 0.5034.
    d = _json(capsys, ["bound", "uninformed", "--noise-multiplier", "0.1", "--dim", "3072", "--min-norm", "1",
                       "--clip", "1", "--mse-threshold", "0.01", "--json"])
    assert d["gamma"] == pytest.approx(0.5034, abs=5e-5)
    assert d["gamma_data_independent"] == pytest.approx(0.5034, abs=5e-5)
    assert d["expected_mse"] == pytest.approx(0.01)  # Prop. 2: sigma^2 r^2
    assert d["ncc_bound"] == pytest.approx(math.sqrt(1 / (1 + 0.01 * 3072)))  # Prop. 6
    assert d["optimal_rows"] == 1


def test_bound_uninformed_psnr_dataset_and_releases(capsys):
    d = _json(capsys, ["bound", "uninformed", "--noise-multiplier", "0.05", "--dataset", "digits",
                       "--psnr-threshold", "20", "--releases", "4", "--clip", "10", "--json"])
    assert d["dim"] == 64 and d["data_range"] == 1.0
    r = d["min_norm"]
    from rerokit.data import load_dataset
    import numpy as np

    norms = np.linalg.norm(load_dataset("digits").flat.astype(np.float64), axis=1)
    assert r == pytest.approx(norms[norms > 0].min(), rel=1e-6)
    # Props. 4-5 with Prop. 7: Gamma_R(N/2, N k 10^-2 / (2 sigma^2 r^2))
    ref = special.gammainc(32, 64 * 4 * 0.01 / (2 * 0.05**2 * r**2))
    assert d["gamma"] >= ref and d["gamma"] == pytest.approx(ref, rel=1e-9)
    assert d["expected_mse"] == pytest.approx(0.05**2 * r**2 / 4)
    assert d["optimal_rows"] == math.ceil((10 / r) ** 2)
    assert d["expected_mse_one_row"] == pytest.approx(0.05**2 * 10**2 / 4)  # Eq. 17, M = 1, unclipped
    assert d["gamma_data_independent"] is None  # C > r: Prop. 3's gamma' does not apply


def test_bound_uninformed_table_and_steps(capsys):
    assert main(["bound", "uninformed", "--noise-multiplier", "0.1", "--dim", "100", "--min-norm", "1",
                 "--mse-threshold", "0.02", "--steps", "10", "--sampling-rate", "0.2"]) == 0
    out = capsys.readouterr().out
    # the verdict names the single-release and the over-steps bounds; the table has both and the NCC bound
    assert out.startswith("\u2022 Uninformed adversary:") and "averaging every release over 10 steps" in out
    assert "P(MSE \u2264 0.02) over 10 steps (q = 0.2)" in out and "NCC" in out


@pytest.mark.parametrize(
    "argv,name",
    [
        (["--noise-multiplier", "nan", "--dim", "3", "--min-norm", "1", "--mse-threshold", "0.1"], "noise_multiplier"),
        (["--noise-multiplier", "1", "--dim", "0", "--min-norm", "1", "--mse-threshold", "0.1"], "dim"),
        (["--noise-multiplier", "1", "--dim", "3", "--min-norm", "-1", "--mse-threshold", "0.1"], "min_norm"),
        (["--noise-multiplier", "1", "--dim", "3", "--min-norm", "1", "--mse-threshold", "-0.1"], "mse_threshold"),
        (["--noise-multiplier", "1", "--dim", "3", "--min-norm", "1", "--psnr-threshold", "10"], "data_range"),
        (["--noise-multiplier", "1", "--dim", "3", "--min-norm", "1", "--mse-threshold", "0.1", "--releases", "0"], "releases"),
        (["--noise-multiplier", "1", "--dim", "3", "--dataset", "digits", "--mse-threshold", "0.1"], "dim"),
        (["--noise-multiplier", "1", "--dim", "3", "--min-norm", "1", "--mse-threshold", "0.1", "--steps", "3"], "sample_rate"),
        (["--noise-multiplier", "1", "--dim", "3", "--mse-threshold", "0.1"], "min-norm"),
    ],
)
def test_bound_uninformed_bad_input_one_line_exit_2(capsys, argv, name):
    assert main(["bound", "uninformed", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and name in err


def test_bound_uninformed_does_not_import_torch():
    code = (
        "import sys; from rerokit.cli import main; "
        "rc = main(['bound','uninformed','--noise-multiplier','0.1','--dim','3072','--min-norm','1',"
        "'--mse-threshold','0.01','--json']); "
        "assert rc == 0; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
    # the bound module itself stays off scipy.stats (slow import) for a fast answer
    code = "import sys, rerokit.bounds.uninformed; print('scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_attack_analytic_json(capsys, tmp_path):
    argv = ["attack", "analytic", "--dataset", "digits", "--noise-multiplier", "0.05", "--clip", "1",
            "--targets", "60", "--seed", "3", "--mse-threshold", "0.02", "--json", "--no-progress"]
    d = _json(capsys, argv)
    assert d["settings"]["rows"] == 1 and d["settings"]["targets"] == 60
    pt = d["per_target"]
    assert len(pt["mse"]) == len(pt["psnr"]) == len(pt["ncc"]) == len(pt["ssim"]) == 60
    assert len(set(pt["index"])) == 60
    assert d["mean_mse"] == pytest.approx(sum(pt["mse"]) / 60)
    for key in ("predicted_expected_mse", "predicted_gamma", "predicted_success", "empirical_success", "ncc_bound"):
        assert key in d
    # same seed, vmap backend: identical reconstructions (equivalence of the two paths)
    d2 = _json(capsys, argv + ["--backend", "vmap"])
    assert d2["per_target"]["mse"] == pytest.approx(pt["mse"], rel=1e-10)
    # resumable JSONL: the second run reads all targets back
    out = tmp_path / "a.jsonl"
    d3 = _json(capsys, argv + ["--out", str(out)])
    assert len(out.read_text().splitlines()) == 61
    d4 = _json(capsys, argv + ["--out", str(out), "--resume"])
    assert d4["per_target"]["mse"] == pytest.approx(d3["per_target"]["mse"], rel=1e-12)
    assert len(out.read_text().splitlines()) == 61


def test_attack_analytic_progress_on_stderr_and_table(capsys):
    assert main(["attack", "analytic", "--noise-multiplier", "0.1", "--clip", "1", "--targets", "5",
                 "--seed", "0"]) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("\u2022 Uninformed gradient inversion, measured:")
    assert "mean MSE, measured" in cap.out and "expected MSE, predicted" in cap.out
    assert "analytic attack" in cap.err


@pytest.mark.parametrize(
    "extra,name",
    [
        (["--noise-multiplier", "0", "--clip", "1", "--targets", "5", "--seed", "0"], "noise_multiplier"),
        (["--noise-multiplier", "1", "--clip", "inf", "--targets", "5", "--seed", "0"], "clip"),
        (["--noise-multiplier", "1", "--clip", "1", "--targets", "0", "--seed", "0"], "targets"),
        (["--noise-multiplier", "1", "--clip", "1", "--targets", "5", "--seed", "-1"], "seed"),
        (["--noise-multiplier", "1", "--clip", "1", "--targets", "5", "--seed", "0", "--rows", "0"], "rows"),
        (["--noise-multiplier", "1", "--clip", "1", "--targets", "5", "--seed", "0", "--backend", "x"], "backend"),
        (["--noise-multiplier", "1", "--clip", "1", "--targets", "5", "--seed", "0", "--dataset", "nope"], "dataset"),
    ],
)
def test_attack_analytic_bad_input(capsys, extra, name):
    assert main(["attack", "analytic", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and name in err


def test_old_sampling_rate_spelling_is_accepted_with_a_note(cli):
    """--sample-rate is the one spelling across commands; --sampling-rate stays accepted for one
    release with a deprecation note on stderr, and gives the same numbers."""
    base = ["bound", "uninformed", "--noise-multiplier", "0.1", "--dim", "100", "--min-norm", "1",
            "--mse-threshold", "0.02", "--steps", "10"]
    new = cli.json(base + ["--sample-rate", "0.2"])
    old, err = cli.json_and_stderr(base + ["--sampling-rate", "0.2"])
    assert old == new and new["sample_rate"] == 0.2
    assert "--sampling-rate is deprecated, use --sample-rate" in err
