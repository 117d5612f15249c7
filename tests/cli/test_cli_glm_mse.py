"""CLI: ``rerokit bound mse-rdp``, ``rerokit bound fil``, ``rerokit attack glm``."""

import json
import math
import subprocess
import sys

import pytest

from rerokit.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_mse_rdp_issue_value(capsys):
    d = _json(capsys, ["bound", "mse-rdp", "--epsilon", "1", "--diameter", "1", "--dim", "784", "--json"])
    # Guo et al. Thm 1: 0.25/(e - 1) = 0.14549 per coordinate at eps = 1, diameter 1.
    assert d["mse_lower_bound"] == pytest.approx(0.25 / (math.e - 1), rel=1e-12)
    assert d["dim"] == 784


def test_mse_rdp_from_curve_and_output_perturbation(capsys):
    d = _json(capsys, ["bound", "mse-rdp", "--orders", "1.5,2.5,4", "--rdp", "0.1,0.3,0.5", "--json"])
    assert d["epsilon_rdp2"] == 0.3 and d["order_used"] == 2.5
    assert d["mse_lower_bound"] == pytest.approx(0.25 / math.expm1(0.3), rel=1e-12)
    assert d["neighbouring_relation"] == "replace-one (assumed)"
    # DP-SGD full batch (q = 1): T Gaussian steps. Thm 1 needs REPLACE-ONE neighbours (sensitivity 2C), so
    # eps_2 = 2 (2C)^2 / (2 sigma^2 C^2) T = 4 T / sigma^2 exactly. (Was T / sigma^2 = 2 before: the add/remove
    # value, too small for Thm 1, gave an MSE bound that was too high - unsafe.)
    d = _json(capsys, ["bound", "mse-rdp", "--noise-multiplier", "2", "--sample-rate", "1", "--steps", "8", "--json"])
    assert d["epsilon_rdp2"] == pytest.approx(4 * 8 / 4, rel=1e-9) and d["order_used"] == 2.0
    assert d["neighbouring_relation"] == "replace-one"
    assert d["mse_lower_bound"] == pytest.approx(0.25 / math.expm1(8.0), rel=1e-9)
    # Subsampled: RDP at order 2 below the full-batch value.
    d2 = _json(capsys, ["bound", "mse-rdp", "--noise-multiplier", "2", "--sample-rate", "0.1", "--steps", "8", "--json"])
    assert 0 < d2["epsilon_rdp2"] < d["epsilon_rdp2"] and d2["mse_lower_bound"] > d["mse_lower_bound"]
    # shuffled fixed-size batches: no amplification, one release per epoch (ceil(8 * 0.25) = 2): eps_2 = 2 * 4 / 4
    d3 = _json(capsys, ["bound", "mse-rdp", "--noise-multiplier", "2", "--sample-rate", "0.25", "--steps", "8",
                        "--sampler", "shuffle", "--json"])
    assert d3["epsilon_rdp2"] == pytest.approx(2.0, rel=1e-12) and d3["sampler"] == "shuffle"
    # a user of k = 2 examples, full batch: sensitivity 2kC, eps_2 = 4 k^2 T / sigma^2
    d4 = _json(capsys, ["bound", "mse-rdp", "--noise-multiplier", "2", "--sample-rate", "1", "--steps", "8",
                        "--examples-per-user", "2", "--json"])
    assert d4["epsilon_rdp2"] == pytest.approx(4 * 4 * 8 / 4, rel=1e-12) and d4["examples_per_user"] == 2
    # the text names the relation
    assert main(["bound", "mse-rdp", "--noise-multiplier", "2", "--sample-rate", "1", "--steps", "8"]) == 0
    assert "unbiased attacker; replace-one (2, 8)-RDP" in capsys.readouterr().out
    # Paper setting (Guo et al. Sec. 7.1): eps_2 = 4/(n lam sigma)^2 = 2.494; GDP mu = 1.58.
    d = _json(capsys, ["bound", "mse-rdp", "--n", "12665", "--lam", "0.01", "--noise-std", "0.01", "--json"])
    assert d["epsilon_rdp2"] == pytest.approx(2.4937, abs=1e-4)
    assert d["gdp_mu"] == pytest.approx(1.579, abs=1e-3)
    assert d["mse_lower_bound"] == pytest.approx(0.25 / math.expm1(d["epsilon_rdp2"]), rel=1e-12)


@pytest.mark.parametrize(
    "argv",
    [
        ["bound", "mse-rdp", "--epsilon", "nan"],
        ["bound", "mse-rdp", "--epsilon", "-1"],
        ["bound", "mse-rdp", "--epsilon", "1", "--diameter", "1,x"],
        ["bound", "mse-rdp"],
        ["bound", "mse-rdp", "--orders", "1.5", "--rdp", "0.1"],
        ["bound", "mse-rdp", "--noise-multiplier", "1", "--steps", "3"],
        ["bound", "mse-rdp", "--noise-multiplier", "0", "--sample-rate", "0.1", "--steps", "3"],
        ["bound", "mse-rdp", "--epsilon", "1", "--steps", "3"],
        ["bound", "mse-rdp", "--epsilon", "1", "--sampler", "shuffle"],  # a sampler describes DP-SGD only
        ["bound", "mse-rdp", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "3", "--sampler", "x"],
        ["bound", "fil", "--noise-std", "0"],
        ["bound", "fil", "--dpsgd", "--noise-multiplier", "1"],
        ["bound", "fil", "--model", "linear", "--noise-std", "1e-3"],
        ["attack", "glm", "--noise", "-1"],
        ["attack", "glm", "--model", "poisson"],
        ["attack", "glm", "--classes", "0"],
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err


def test_attack_glm_exact_without_noise(capsys):
    d = _json(capsys, ["attack", "glm", "--dataset", "digits", "--model", "logistic", "--json"])
    assert d["exact"] is True and d["mse_max"] < 1e-16 and d["label_accuracy"] == 1.0
    assert d["targets"] == 360
    d = _json(capsys, ["attack", "glm", "--model", "ridge", "--json"])
    assert d["mse_max"] < 1e-16 and d["targets"] == 1797
    d = _json(capsys, ["attack", "glm", "--model", "linear", "--json"])
    # One digits image is the only one with a certain non-zero pixel: fitted exactly, invisible.
    assert d["non_identifiable"] == 1 and d["mse_max"] < 1e-16


def test_attack_glm_with_noise(capsys):
    d = _json(capsys, ["attack", "glm", "--noise", "1e-4", "--draws", "5", "--json"])
    assert d["exact"] is False and 0 < d["mse_median"] < 0.1
    assert d["settings"]["noise"] == 1e-4 and d["settings"]["draws"] == 5


def test_bound_fil_output_perturbation(capsys):
    d = _json(capsys, ["bound", "fil", "--dataset", "digits", "--model", "logistic", "--noise-std", "1e-3", "--json"])
    assert d["n"] == 360 and d["dim"] == 64
    assert d["mse_lower_bound_min"] == pytest.approx(1 / d["dfil_max"], rel=1e-12)
    assert d["mse_lower_bound_min"] <= d["mse_lower_bound_median"] <= d["mse_lower_bound_max"]
    d2 = _json(capsys, ["bound", "fil", "--noise-std", "2e-3", "--json"])
    assert d2["mse_lower_bound_median"] == pytest.approx(4 * d["mse_lower_bound_median"], rel=1e-9)


def test_bound_fil_dpsgd_small(capsys):
    d = _json(capsys, ["bound", "fil", "--dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "3",
                       "--coords", "8", "--json"])
    assert d["settings"]["steps"] == 3 and d["kappa"] == 1.0
    assert d["samples_never_sampled"] > 1000  # q = 0.01, 3 steps: most samples never used
    assert d["mse_lower_bound_min"] > 0


def test_cli_modules_do_not_import_torch_at_parse_time():
    code = (
        "import sys, importlib; importlib.import_module('rerokit.cli.bound_mse'); "
        "importlib.import_module('rerokit.cli.attack_glm'); "
        "print(any(m in sys.modules for m in ('torch', 'scipy', 'sklearn')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_fil_glm_experiment_command(tmp_path):
    # `rerokit experiment fil-glm` (registered by rerokit.cli.experiment_fil).
    import argparse

    from rerokit.cli.experiment_fil import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["fil-glm", "--out-dir", str(tmp_path), "--draws", "20", "--no-progress"])
    res = args.func(args)
    assert res["n"] == 360 and res["settings"]["draws"] == 20
    assert (tmp_path / "fil_glm.csv").exists() and (tmp_path / "fil_glm.png").exists()
    bad = parser.parse_args(["fil-glm", "--out-dir", str(tmp_path / "x"), "--classes", "0,a"])
    with pytest.raises(ValueError, match="classes"):
        bad.func(bad)


def test_glm_noisy_mse_interval_stays_nonnegative(capsys):
    # An MSE is >= 0: the Student-t interval of a heavy-tailed MSE sample must be clipped to
    # its support, never reported with a negative lower end.
    import json

    from rerokit.cli import main

    assert main(["attack", "glm", "--dataset", "digits", "--model", "logistic", "--noise", "0.01",
                 "--draws", "5", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert 0.0 <= d["ci_low"] <= d["mse"] <= d["ci_high"]
