"""CLI: `rerokit calibrate uninformed` (MSE / PSNR target of the analytic attack; attack law)."""

import math

import pytest
from scipy import special


def test_mse_target_inverts_prop3(cli, capsys):
    d = cli.json("calibrate", "uninformed", "--target-gamma", "0.05", "--dim", "64", "--min-norm", "2",
                 "--mse-threshold", "0.01")
    s, n, r, eta = d["noise_multiplier"], 64, 2.0, 0.01
    # Prop. 3: P(MSE <= eta) = Gamma_R(N/2, N eta / (2 sigma^2 r^2)); at the calibrated sigma it meets the target
    p = special.gammainc(n / 2, n * eta / (2 * s * s * r * r))
    assert p <= 0.05 and p == pytest.approx(0.05, rel=1e-6)
    assert special.gammainc(n / 2, n * eta / (2 * (s * 0.999) ** 2 * r * r)) > 0.05  # smallest such sigma
    assert d["expected_mse"] == pytest.approx(s * s * r * r) and "attack law" in d["law"]


def test_psnr_target_is_the_mse_target_of_its_threshold(cli, capsys):
    d = cli.json("calibrate", "uninformed", "--target-gamma", "0.1", "--dim", "16", "--clip", "1",
                 "--psnr-threshold", "20", "--data-range", "2", "--releases", "4")
    eta = 10 ** (-20 / 10) * 2**2
    m = cli.json("calibrate", "uninformed", "--target-gamma", "0.1", "--dim", "16", "--clip", "1",
                 "--mse-threshold", str(eta), "--releases", "4")
    assert d["noise_multiplier"] == pytest.approx(m["noise_multiplier"], rel=1e-9)
    assert d["mse_threshold"] == pytest.approx(eta) and d["norm_used"].startswith("clip")
    assert math.isfinite(d["expected_psnr_db"])


def test_table_says_attack_law_and_bad_combinations(capsys):
    from rerokit.cli import main

    assert main(["calibrate", "uninformed", "--target-gamma", "0.05", "--dim", "8", "--min-norm", "1",
                 "--mse-threshold", "0.01"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("\u2022 Uninformed adversary:") and "attack law" in out
    assert main(["calibrate", "uninformed", "--target-gamma", "0.05", "--dim", "8", "--min-norm", "1",
                 "--psnr-threshold", "20"]) == 2
    assert "data_range" in capsys.readouterr().err
    assert main(["calibrate", "uninformed", "--target-gamma", "0.05", "--dim", "8", "--min-norm", "1",
                 "--mse-threshold", "0.01", "--data-range", "1"]) == 2
