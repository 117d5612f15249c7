"""--sampler and --examples-per-user on bound dpsgd / bound tradeoff / calibrate dpsgd (closed forms by scipy)."""

from __future__ import annotations

import json
import math

import pytest
from scipy.optimize import brentq
from scipy.stats import norm


def _gdp(kappa: float, mu: float) -> float:
    return float(norm.cdf(norm.ppf(kappa) + mu))


def test_bound_dpsgd_shuffle_is_unamplified_with_the_poisson_number_beside(cli):
    d = cli.json("bound", "dpsgd", "--noise-multiplier", "0.708", "--sample-rate", "0.1", "--steps", "30",
                 "--prior-size", "10", "--sampler", "shuffle")
    exact = _gdp(0.1, math.sqrt(3) / 0.708)
    assert exact <= d["gamma"] <= exact + 1e-5
    assert d["settings"]["sampler"] == "shuffle" and d["settings"]["sampler_source"] == "declared"
    assert "zero-out" in d["settings"]["neighbouring_relation"]
    assert d["certification"] == {"amplified": False, "releases": 3, "group_size": 1}
    pa = d["poisson_assumption"]
    assert pa["kind"] == "assumption" and pa["gamma"] < d["gamma"]
    p = cli.json("bound", "dpsgd", "--noise-multiplier", "0.708", "--sample-rate", "0.1", "--steps", "30",
                 "--prior-size", "10")
    assert pa["gamma"] == p["gamma"] and "poisson_assumption" not in p
    assert p["settings"]["sampler_source"] == "assumed"
    code, out, _ = cli.run("bound", "dpsgd", "--noise-multiplier", "0.708", "--sample-rate", "0.1", "--steps", "30",
                           "--prior-size", "10", "--sampler", "shuffle")
    assert code == 0 and "sampler: shuffle" in out and "assumption" in out


def test_bound_dpsgd_without_prior_and_groups(cli):
    d = cli.json("bound", "dpsgd", "--noise-multiplier", "2", "--sample-rate", "1", "--steps", "4",
                 "--examples-per-user", "3", "--sampler", "full-batch")
    from rerokit.bounds.gaussian import gaussian_epsilon

    assert d["epsilon"] >= gaussian_epsilon(1e-5, 3 * 2 / 2.0) * (1 - 1e-9)
    assert d["settings"]["examples_per_user"] == 3
    e = cli.json("bound", "dpsgd", "--noise-multiplier", "2", "--sample-rate", "0.25", "--steps", "8",
                 "--prior-size", "10", "--sampler", "shuffle", "--examples-per-user", "2")
    exact = _gdp(0.1, 2 * math.sqrt(2) / 2.0)
    assert exact <= e["gamma"] <= exact + 1e-5


def test_bound_tradeoff_shuffle_at_fpr(cli):
    d = cli.json("bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "0.25", "--steps", "8",
                 "--fpr", "0.01", "--sampler", "shuffle")
    exact = _gdp(0.01, math.sqrt(2))
    lo, hi = d["points"][0]["tpr"]
    assert lo - 1e-12 <= exact <= hi
    assert d["settings"]["sampler"] == "shuffle"


def test_calibrate_dpsgd_under_shuffling(cli):
    d = cli.json("calibrate", "dpsgd", "--target-gamma", "0.2", "--sample-rate", "0.1", "--steps", "30",
                 "--prior-size", "10", "--sampler", "shuffle")
    s_min = brentq(lambda s: _gdp(0.1, math.sqrt(3) / s) - 0.2, 0.1, 100)
    assert s_min * (1 - 1e-12) <= d["noise_multiplier"] <= s_min * 1.001
    assert d["settings"]["sampler"] == "shuffle"
    pa = d["poisson_assumption"]
    assert pa["kind"] == "assumption" and pa["noise_multiplier"] < d["noise_multiplier"]
    s = cli.json("calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "0.1", "--noise-multiplier", "1",
                 "--prior-size", "10", "--sampler", "shuffle")
    # T = 10 steps is one epoch (gamma = Phi(Phi^-1(0.1) + 1) < 0.5); T = 11 touches a second epoch
    assert s["steps"] == 10 and _gdp(0.1, math.sqrt(2)) > 0.5 >= _gdp(0.1, 1.0)
    assert s["poisson_assumption"]["steps"] > 10
    code, out, _ = cli.run("calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "0.1", "--noise-multiplier",
                           "1", "--prior-size", "10", "--sampler", "shuffle")
    assert code == 0 and "steps T if the batches had been" in " ".join(out.split())


def test_epsilon_below_the_pld_floor_is_finite_in_json(cli, capsys):
    code, out, _ = cli.run("bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000",
                           "--prior-size", "10", "--delta", "1e-320", "--json")
    assert code == 0 and "Infinity" not in out and "NaN" not in out
    d = json.loads(out)
    assert math.isfinite(d["comparisons"]["epsilon"]) and d["comparisons"]["epsilon"] > 10


@pytest.mark.parametrize("argv,name", [(("--sampler", "uniform"), "sampler"),
                                       (("--examples-per-user", "0"), "examples_per_user")])
def test_bad_sampling_options_are_one_line(cli, argv, name):
    code, out, err = cli.run("bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10",
                             "--prior-size", "10", *argv)
    assert code == 2 and name in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
