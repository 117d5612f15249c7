"""CLI: `rerokit bound laplace` and `rerokit bound finite-support` (values from the closed forms)."""

import math

import pytest


def test_bound_laplace_middle_piece_and_scale(cli, capsys):
    d = cli.json("bound", "laplace", "--epsilon", "4", "--prior-size", "10")
    assert d["gamma"] == pytest.approx(1 - math.exp(-4) / 0.4, abs=1e-14)  # 0.95421 (Cor. 3 alone: 1)
    assert d["gamma_dp"] == 1.0 and d["gamma_pure_dp_curve"] == pytest.approx(1 - 0.9 * math.exp(-4))
    s = cli.json("bound", "laplace", "--scale", "0.5", "--sensitivity", "1", "--prior-size", "10")
    assert s["epsilon"] == 2.0 and s["gamma"] == pytest.approx(1 - math.exp(-2) / 0.4, abs=1e-14)
    t = cli.json("bound", "laplace", "--epsilon", "2", "--log10-kappa", "-400")
    assert t["region"] == "kappa e^eps" and t["log10_gamma"] == pytest.approx(-400 + 2 / math.log(10))


def test_bound_laplace_needs_exactly_one_of_epsilon_and_scale(cli, capsys):
    from rerokit.cli import main

    assert main(["bound", "laplace", "--prior-size", "10"]) == 2
    assert main(["bound", "laplace", "--epsilon", "1", "--scale", "1", "--prior-size", "10"]) == 2
    assert "exactly one of --epsilon" in capsys.readouterr().err


def test_bound_finite_support(cli, capsys):
    d = cli.json("bound", "finite-support", "--epsilon", "1", "--prior-size", "10")
    assert d["gamma"] == pytest.approx(math.e / (9 + math.e), rel=1e-12) and d["support_size"] == 10
    d = cli.json("bound", "finite-support", "--epsilon", "1", "--kappa", "0.5", "--support-size", "4")
    assert d["gamma"] == pytest.approx(0.5 * 4 * math.e / (3 + math.e), rel=1e-12)
