"""CLI: `rerokit bound dp|rdp|zcdp|gdp|fano` and `rerokit kappa ...` (in-process + one subprocess)."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from rerokit.cli import main


# ----------------------------------------------------------------------------- bound


def test_bound_dp_rdp_zcdp_gdp_keys_and_values(cli, capsys):
    d = cli.json("bound", "dp", "--epsilon", "1", "--kappa", "0.1")
    assert d["gamma"] == pytest.approx(0.1 * math.e) and d["kappa"] == 0.1 and d["epsilon"] == 1.0
    assert d["advantage"] == pytest.approx((0.1 * math.e - 0.1) / 0.9)
    d = cli.json("bound", "rdp", "--alpha", "2", "--epsilon", "1", "--kappa", "0.01")
    assert d["gamma"] == pytest.approx((0.01 * math.e) ** 0.5) and d["alpha"] == 2.0
    d = cli.json("bound", "zcdp", "--rho", "0.5", "--kappa", "0.01")
    assert d["gamma"] == pytest.approx(math.exp(-((math.sqrt(math.log(100)) - math.sqrt(0.5)) ** 2)))
    from scipy.stats import norm

    d = cli.json("bound", "gdp", "--mu", "1.5", "--kappa", "0.05")
    assert d["gamma"] == pytest.approx(norm.cdf(norm.ppf(0.05) + 1.5)) and d["mu"] == 1.5
    for key in ("gamma", "kappa", "advantage", "log10_kappa", "log10_gamma", "rerokit_version"):
        assert key in d


def test_bound_with_log10_kappa_for_tiny_baseline(cli, capsys):
    """App. I MNIST baseline 9.66e-473: kappa underflows, log10 values stay exact."""
    lk10 = math.log10(9.66) - 473
    d = cli.json("bound", "dp", "--epsilon", "10", "--log10-kappa", str(lk10))
    assert d["kappa"] == 0.0 and d["log10_kappa"] == pytest.approx(lk10)
    assert d["log10_gamma"] == pytest.approx(lk10 + 10 / math.log(10))
    d = cli.json("bound", "gdp", "--mu", "2", "--log10-kappa", str(lk10))
    assert math.isfinite(d["log10_gamma"]) and d["log10_gamma"] > lk10


def test_bound_fano_reproduces_table2_entry(cli, capsys):
    d = cli.json("bound", "fano", "--noise-multiplier", "1", "--prior-size", "10", "--sensitivity", str(math.sqrt(2)))
    assert round(d["advantage"], 3) == 0.593  # Hayes et al. 2023, Table 2, Guo et al. row, sigma = 1
    assert d["kappa"] == pytest.approx(0.1) and d["gamma"] == pytest.approx(0.1 + 0.9 * d["advantage"])
    d = cli.json("bound", "fano", "--mutual-information", "0.5", "--prior-size", "100")
    assert 0 < d["advantage"] < 1 and "gamma" in d
    d2 = cli.json("bound", "fano", "--rdp-epsilon", "0.5", "--prior-size", "100")
    assert d2["advantage"] == d["advantage"] and d2["epsilon"] == 0.5


def test_table_output_is_readable(capsys):
    assert main(["bound", "gdp", "--mu", "1", "--kappa", "0.1"]) == 0
    out = capsys.readouterr().out
    # a verdict in words first, then the table; gamma = Phi(Phi^-1(0.1) + 1) = 0.3891 (Kaissis et al. closed form)
    assert out.startswith("\u2022 Reconstruction:") and "above 0.3891" in out
    assert "\u03b3: success of any reconstruction attack" in out and "\u2264 0.3891" in out and "{" not in out


@pytest.mark.parametrize(
    "argv,name",
    [
        (["bound", "dp", "--epsilon", "nan", "--kappa", "0.1"], "epsilon"),
        (["bound", "dp", "--epsilon", "-1", "--kappa", "0.1"], "epsilon"),
        (["bound", "dp", "--epsilon", "1", "--kappa", "0"], "kappa"),
        (["bound", "dp", "--epsilon", "1", "--kappa", "1.5"], "kappa"),
        (["bound", "dp", "--epsilon", "1", "--kappa", "nan"], "kappa"),
        (["bound", "dp", "--epsilon", "1", "--log10-kappa", "0.5"], "log10_kappa"),
        (["bound", "dp", "--epsilon", "1", "--log10-kappa", "nan"], "log10_kappa"),
        (["bound", "dp", "--epsilon", "1"], "kappa"),
        (["bound", "dp", "--epsilon", "1", "--kappa", "0.1", "--log10-kappa", "-2"], "log10-kappa"),
        (["bound", "rdp", "--alpha", "1", "--epsilon", "1", "--kappa", "0.1"], "alpha"),
        (["bound", "rdp", "--alpha", "inf", "--epsilon", "1", "--kappa", "0.1"], "alpha"),
        (["bound", "zcdp", "--rho", "-0.1", "--kappa", "0.1"], "rho"),
        (["bound", "gdp", "--mu", "inf", "--kappa", "0.1"], "mu"),
        (["bound", "gdp", "--mu", "abc", "--kappa", "0.1"], "mu"),
        (["bound", "fano", "--noise-multiplier", "0", "--prior-size", "10"], "noise_multiplier"),
        (["bound", "fano", "--noise-multiplier", "1", "--prior-size", "1"], "prior_size"),
        (["bound", "fano", "--noise-multiplier", "1", "--prior-size", "10", "--sensitivity", "-1"], "sensitivity"),
        (["bound", "fano", "--mutual-information", "nan", "--prior-size", "10"], "mutual_information"),
        (["bound", "fano", "--rdp-epsilon", "-1", "--prior-size", "10"], "epsilon"),
    ],
)
def test_bound_bad_input_one_line_exit_2(cli, capsys, argv, name):
    err = cli.error(*argv)
    assert name in err


# ----------------------------------------------------------------------------- kappa


def test_kappa_commands(cli, capsys):
    d = cli.json("kappa", "discrete", "--prior-size", "10")
    assert d["kappa"] == pytest.approx(0.1) and d["log10_kappa"] == pytest.approx(-1)
    d = cli.json("kappa", "discrete", "--weights", "1,2,5,2")
    assert d["kappa"] == pytest.approx(0.5)
    d = cli.json("kappa", "ball", "--dim", "20", "--eta", "0.5")
    assert d["log10_kappa"] == pytest.approx(20 * math.log10(0.5))
    from scipy.stats import chi2

    d = cli.json("kappa", "gaussian", "--dim", "5", "--sigma", "0.5", "--eta", "1")
    assert d["kappa"] == pytest.approx(chi2.cdf(4.0, 5))


def test_kappa_pixels_app_i(cli, capsys):
    """Hayes et al. 2023, App. I: 9.66e-473 (MNIST) and 2.96e-1850 (CIFAR-10)."""
    for dim, want in ((784, (9.66, -473)), (3072, (2.96, -1850))):
        d = cli.json("kappa", "pixels", "--dim", str(dim), "--delta", str(32 / 255), "--levels", "256")
        assert d["kappa"] == 0.0  # underflow; the log is the answer
        e = math.floor(d["log10_kappa"])
        assert (round(10 ** (d["log10_kappa"] - e), 2), e) == want


def test_kappa_samples(cli, tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 10, size=(400, 1))
    f = tmp_path / "s.npy"
    np.save(f, x)
    d = cli.json("kappa", "samples", "--samples", str(f), "--confidence", "0.9")
    kh = np.bincount(x[:, 0]).max() / 400
    assert d["kappa_hat"] == pytest.approx(kh) and d["kappa"] > kh and d["direction"] == "upper"
    z = rng.standard_normal((300, 3))
    np.save(f, z)
    d = cli.json("kappa", "samples", "--samples", str(f), "--eta", "0.5", "--metric", "l2")
    assert d["kappa_hat_plugin"] <= d["kappa_hat"] < d["kappa"] <= 1
    bad = tmp_path / "bad.npy"
    bad.write_text("not numpy")
    assert "samples" in cli.error("kappa", "samples", "--samples", str(bad))
    assert "No such file" in cli.error("kappa", "samples", "--samples", str(tmp_path / "none.npy"))
    np.save(f, x)
    assert "metric" in cli.error("kappa", "samples", "--samples", str(f), "--metric", "cosine")
    assert "confidence" in cli.error("kappa", "samples", "--samples", str(f), "--confidence", "1")


@pytest.mark.parametrize(
    "argv,name",
    [
        (["kappa", "discrete", "--prior-size", "0"], "prior_size"),
        (["kappa", "discrete", "--weights", "1,-2"], "weights"),
        (["kappa", "discrete", "--weights", "1,x"], "weights"),
        (["kappa", "discrete", "--weights", "nan,1"], "weights"),
        (["kappa", "ball", "--dim", "0", "--eta", "0.5"], "dim"),
        (["kappa", "ball", "--dim", "3", "--eta", "nan"], "eta"),
        (["kappa", "gaussian", "--dim", "3", "--sigma", "-1", "--eta", "1"], "sigma"),
        (["kappa", "gaussian", "--dim", "3", "--sigma", "1", "--eta", "0"], "eta"),
        (["kappa", "pixels", "--dim", "10", "--delta", "0.1", "--rho", "1.2"], "rho"),
        (["kappa", "pixels", "--dim", "10", "--delta", "-0.1"], "delta"),
        (["kappa", "pixels", "--dim", "10", "--delta", "0.1", "--levels", "1"], "levels"),
    ],
)
def test_kappa_bad_input_one_line_exit_2(cli, capsys, argv, name):
    assert name in cli.error(*argv)


# ----------------------------------------------------------------------------- import hygiene


def test_bound_gdp_subprocess_does_not_import_torch():
    code = (
        "import sys, runpy; sys.argv = ['rerokit', 'bound', 'gdp', '--mu', '1', '--kappa', '0.1', '--json'];\n"
        "from rerokit.cli import main; rc = main(sys.argv[1:]);\n"
        "print('MODS', 'torch' in sys.modules, 'scipy.stats' in sys.modules, 'dp_accounting' in sys.modules, rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert json.loads(lines[0])["gamma"] > 0.1
    assert lines[-1] == "MODS False False False 0"
    # and the module entry point itself runs
    out = subprocess.run(
        [sys.executable, "-m", "rerokit.cli", "bound", "gdp", "--mu", "1", "--kappa", "0.1", "--json"],
        capture_output=True, text=True,
    )
    assert out.returncode == 0 and json.loads(out.stdout)["gamma"] > 0.1
