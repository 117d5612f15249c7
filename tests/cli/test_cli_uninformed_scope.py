"""`rerokit bound uninformed`: the attack laws never carry the word "certified"; prior-free attacks
and the certified informed bound beside them."""

from __future__ import annotations

import re

import pytest


def _certified_numbers(text: str) -> list[float]:
    """The values of the table rows whose kind column says certified."""
    out = []
    for line in text.splitlines():
        if line.rstrip().endswith("certified"):
            m = re.search(r"[\u2264\u2265=]\s*([0-9.e+-]+)", line)
            if m:
                out.append(float(m.group(1)))
    return out


@pytest.mark.parametrize("argv", [
    ("--noise-multiplier", "0.1", "--min-norm", "1", "--dim", "3072", "--mse-threshold", "0.01"),
    ("--noise-multiplier", "0.1", "--min-norm", "3", "--dim", "100", "--mse-threshold", "0.05"),
    ("--noise-multiplier", "0.1", "--min-norm", "1", "--dim", "100", "--mse-threshold", "0.02", "--steps", "10",
     "--sample-rate", "0.2"),
])
def test_no_number_below_a_prior_free_success_is_called_certified(cli, argv):
    d = cli.json("bound", "uninformed", *argv)
    best = d["no_prior_attacks"]["best_known"]
    assert d["kind"] == "attack law" and best >= d["gamma"]
    assert d["certified"]["gamma"] >= best  # without a prior: 1
    code, out, _ = cli.run("bound", "uninformed", *argv)
    assert code == 0
    assert all(v >= best for v in _certified_numbers(out))
    assert "attack law" in out
    assert "(certified)" not in out


def test_issue_case_reads_as_an_attack_law(cli):
    code, out, _ = cli.run("bound", "uninformed", "--noise-multiplier", "0.1", "--min-norm", "1", "--dim", "3072",
                           "--mse-threshold", "0.01")
    assert "0.5034" in out and "not a bound" in out and "constant guess 0 does better: 1" in out
    line = next(x for x in out.splitlines() if "0.5034" in x and "unbiased attack" in x)
    assert "certified" not in line


def test_certified_bound_with_a_prior(cli):
    d = cli.json("bound", "uninformed", "--noise-multiplier", "0.5", "--min-norm", "1", "--dim", "16",
                 "--mse-threshold", "0.02", "--prior", "cube", "--prior-scale", "1")
    from scipy.stats import norm

    from rerokit.bounds.uninformed_scope import log_kappa_uniform_cube

    import math

    c = d["certified"]
    lk = log_kappa_uniform_cube(16, 0.02)
    assert c["kind"] == "certified" and c["log10_kappa"] == pytest.approx(lk / math.log(10))
    assert c["gamma"] >= norm.cdf(norm.ppf(math.exp(lk)) + 2.0) * (1 - 1e-9)
    assert c["gamma"] > 0


def test_dataset_prior_and_data_guesses(cli):
    d = cli.json("bound", "uninformed", "--noise-multiplier", "0.5", "--dataset", "digits", "--mse-threshold", "0.05")
    npa = d["no_prior_attacks"]
    assert 0 <= npa["data_mean_guess"] <= 1 and npa["best_known"] >= npa["data_mean_guess"]
    assert d["certified"]["gamma"] >= npa["data_mean_guess"]
    assert "samples" in d["certified"]["prior"]


def test_prior_options_are_validated(cli):
    code, _, err = cli.run("bound", "uninformed", "--noise-multiplier", "0.5", "--min-norm", "1", "--dim", "4",
                           "--mse-threshold", "0.02", "--prior", "ball")
    assert code == 2 and "prior_scale" in err
    code, _, err = cli.run("bound", "uninformed", "--noise-multiplier", "0.5", "--min-norm", "1", "--dim", "4",
                           "--mse-threshold", "0.02", "--prior", "samples")
    assert code == 2 and "dataset" in err
