"""CLI `rerokit bound dpsgd` and `rerokit calibrate dpsgd`: JSON keys, values equal to the library,
one-line errors with exit code 2, and a light import path (no torch, no dp_accounting)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rerokit.bounds.conversions import advantage, rero_from_gdp
from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.cli import main

BASE = ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000"]


def test_bound_dpsgd_json_matches_library(cli, capsys):
    d = cli.json(BASE + ["--kappa", "0.01"])
    b = rero_dpsgd(1.0, 0.01, 1000, 0.01)
    for k in ("gamma", "kappa", "advantage", "method", "error", "comparisons"):
        assert k in d
    assert d["gamma"] == b.value and d["error"] == b.error and d["method"] == "exact"
    assert d["advantage"] == pytest.approx(advantage(b.value, 0.01))
    assert d["error"] <= 1e-3
    c = d["comparisons"]
    assert c["rdp_gamma"] == b.extras["rdp_gamma"] >= d["gamma"]
    assert c["delta"] == 1e-5 and c["epsilon"] == pytest.approx(b.extras["epsilon"])


def test_prior_size_and_closed_form(cli, capsys):
    d = cli.json(["bound", "dpsgd", "--noise-multiplier", "0.5", "--sample-rate", "1", "--steps", "1",
                          "--prior-size", "10", "--method", "closed-form"])
    assert d["kappa"] == pytest.approx(0.1) and d["settings"]["prior_size"] == 10
    assert d["gamma"] == pytest.approx(rero_from_gdp(2.0, 0.1), rel=1e-12) and d["error"] == 0.0
    # Hayes et al. 2023 Table 2, prior size 10, sigma = 0.5: advantage 0.737 (Monte Carlo)
    assert d["advantage"] == pytest.approx(0.737, abs=0.002)


def test_tiny_kappa_via_log10(cli, capsys):
    d = cli.json(["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "10",
                          "--log10-kappa", "-472"])
    # q = 1: the exact Gaussian-DP closed form answers (issue 17; it used to be the floored PLD)
    assert d["gamma"] > 0 and d["log10_gamma"] >= -472 and d["details"]["floored"] is False


def test_mc_method_records_seed(cli, capsys):
    d = cli.json(["bound", "dpsgd", "--noise-multiplier", "2", "--sample-rate", "0.5", "--steps", "5",
                          "--kappa", "0.1", "--method", "mc", "--mc-samples", "20000", "--seed", "3"])
    assert d["method"] == "mc" and d["direction"] == "estimate" and d["details"]["seed"] == 3
    lo, hi = d["interval"]
    assert d["error"] == pytest.approx((hi - lo) / 2)
    ex = rero_dpsgd(2.0, 0.5, 5, 0.1, comparisons=False)
    assert lo - ex.error <= ex.value and ex.interval[0] <= hi


def test_calibrate_dpsgd_noise_and_steps(cli, capsys):
    d = cli.json(["calibrate", "dpsgd", "--target-gamma", "0.3", "--sample-rate", "1", "--steps", "4",
                          "--kappa", "0.1"])
    s = d["noise_multiplier"]
    assert d["gamma"] <= 0.3 and rero_dpsgd(s, 1.0, 4, 0.1, comparisons=False).value <= 0.3
    assert rero_dpsgd(s * 0.99, 1.0, 4, 0.1, comparisons=False).value > 0.3
    assert d["delta"] == 1e-5 and d["epsilon"] > 0
    d = cli.json(["calibrate", "dpsgd", "--target-gamma", "0.3", "--sample-rate", "1",
                          "--noise-multiplier", "3", "--prior-size", "10"])
    T = d["steps"]
    assert rero_dpsgd(3.0, 1.0, T, 0.1, comparisons=False).value <= 0.3
    assert rero_dpsgd(3.0, 1.0, T + 1, 0.1, comparisons=False).value > 0.3


@pytest.mark.parametrize(
    "argv,name",
    [
        (["bound", "dpsgd", "--noise-multiplier", "-1", "--sample-rate", "0.1", "--steps", "10", "--kappa", "0.1"], "noise_multiplier"),
        (["bound", "dpsgd", "--noise-multiplier", "nan", "--sample-rate", "0.1", "--steps", "10", "--kappa", "0.1"], "noise_multiplier"),
        (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "1.5", "--steps", "10", "--kappa", "0.1"], "sample_rate"),
        (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0", "--steps", "10", "--kappa", "0.1"], "sample_rate"),
        (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "0", "--kappa", "0.1"], "steps"),
        (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10", "--kappa", "1.5"], "kappa"),
        (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10", "--kappa", "0"], "kappa"),
        (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10", "--kappa", "0.1", "--method", "x"], "method"),
        (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10", "--kappa", "0.1", "--prior-size", "10"], "prior-size"),
        (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "10", "--kappa", "0.1", "--method", "closed-form"], "sample_rate"),
        (["calibrate", "dpsgd", "--target-gamma", "0.05", "--sample-rate", "0.1", "--steps", "10", "--kappa", "0.1"], "target_gamma"),
        (["calibrate", "dpsgd", "--target-gamma", "1.5", "--sample-rate", "0.1", "--steps", "10", "--kappa", "0.1"], "target_gamma"),
        (["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "0.1", "--kappa", "0.1"], "--steps"),
    ],
)
def test_bad_arguments_one_line_exit_2(capsys, argv, name):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and name in err


def test_cli_bound_path_imports_neither_torch_nor_dp_accounting_nor_scipy():
    code = (
        "import sys, io, contextlib\n"
        "from rerokit.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['bound', 'dpsgd', '--noise-multiplier', '1', '--sample-rate', '0.01', '--steps', '100', '--kappa', '0.01'])\n"
        "print(rc, 'torch' in sys.modules, 'dp_accounting' in sys.modules, 'scipy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False", "False", "False"]


def test_bound_dpsgd_without_prior_gives_epsilon_and_membership(cli):
    """A prior is needed only for gamma (issue: 'bound dpsgd demands kappa even when only epsilon is
    wanted'): without one, epsilon and the membership risks come from the same composed PLD."""
    d = cli.json(BASE)
    assert "gamma" not in d and "prior" in d["note"]
    with_prior = cli.json(BASE + ["--prior-size", "10"])
    assert d["epsilon"] == with_prior["comparisons"]["epsilon"]
    assert d["membership"] == with_prior["membership"]


def test_prior_options_are_the_same_on_every_prior_command(cli):
    """--prior-size works wherever a prior applies (it was refused by 'bound dp'), kappa of a prior of
    10 is exactly 0.1 (it printed 0.09999999999999998), and two prior options are one clear error."""
    for argv in (["bound", "dp", "--epsilon", "1"], ["bound", "rdp", "--alpha", "2", "--epsilon", "1"],
                 ["bound", "zcdp", "--rho", "0.5"], ["bound", "gdp", "--mu", "1"], BASE,
                 ["calibrate", "dpsgd", "--target-gamma", "0.3", "--sample-rate", "0.01", "--steps", "100"]):
        a = cli.json(argv + ["--prior-size", "10"])
        b = cli.json(argv + ["--kappa", "0.1"])
        assert a["kappa"] == 0.1 and b["kappa"] == 0.1
        assert a["gamma"] == pytest.approx(b["gamma"], rel=1e-14)  # log(1/10) vs log(0.1): one ulp apart
        assert "exactly one" in cli.error(argv + ["--prior-size", "10", "--kappa", "0.1"])
