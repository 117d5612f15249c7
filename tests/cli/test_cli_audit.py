"""``rerokit audit prior-aware`` / ``rerokit audit gradient``: JSON keys, resume, bad input."""

import json

import pytest

from rerokit.cli import main

TINY = ["--steps", "5", "--n-known", "29", "--no-progress", "--json"]


def test_prior_aware_json_keys_and_bound(cli, capsys):
    d = cli.json(["audit", "prior-aware", "--epsilon", "4", "--trials", "6", "--seed", "1", *TINY])
    for k in ("success", "ci_low", "ci_high", "gamma", "kappa", "noise_multiplier", "epsilon", "delta",
              "trials", "seed", "settings", "attack"):
        assert k in d
    assert d["kappa"] == pytest.approx(0.1) and d["trials"] == 6 and d["seed"] == 1 and d["attack"] == "alg2"
    assert d["ci_low"] <= d["success"] <= d["ci_high"]
    assert 0.1 <= d["gamma"] <= 1
    # sigma calibrated for (4, 1e-5) with q = 1, T = 5: Gaussian mechanism with mu = sqrt(5)/sigma
    assert 0.5 < d["noise_multiplier"] < 5
    assert d["settings"]["steps"] == 5 and d["settings"]["n_known"] == 29
    assert d["attacks"]["alg2"]["value"] == d["success"]
    assert d["success"] * 6 == pytest.approx(round(d["success"] * 6))  # k/n with n = 6 trials


def test_prior_aware_resume_via_cli(cli, capsys, tmp_path):
    out = tmp_path / "r.jsonl"
    base = ["audit", "prior-aware", "--noise-multiplier", "1", "--seed", "2", "--out", str(out), *TINY]
    cli.json([*base, "--trials", "3"])
    d = cli.json([*base, "--trials", "5", "--resume"])
    assert d["trials"] == 5
    ids = [json.loads(s)["trial"] for s in out.read_text().splitlines()[1:]]
    assert sorted(ids) == [0, 1, 2, 3, 4]
    # without --resume: the finished file is reported again; one with trials missing is refused,
    # naming both ways on
    assert cli.json([*base, "--trials", "5"])["success"] == d["success"]
    assert main([*base, "--trials", "6"]) == 2
    err = capsys.readouterr().err
    assert "holds 5 of the 6 trials" in err and "--resume" in err and "--overwrite" in err


def test_gradient_json_keys(cli, capsys):
    d = cli.json(["audit", "gradient", "--noise-multiplier", "0", "--trials", "1", "--iterations", "20",
                          "--restarts", "1", "--prior-size", "8", *TINY])
    for k in ("mse", "mse_ci_low", "mse_ci_high", "success", "ci_low", "ci_high", "gamma", "kappa", "settings"):
        assert k in d
    assert d["kappa"] == pytest.approx(1 / 8) and d["gamma"] == 1.0 and d["mse"] >= 0


@pytest.mark.parametrize(
    "argv, word",
    [
        (["audit", "prior-aware", "--epsilon", "0"], "epsilon"),
        (["audit", "prior-aware", "--epsilon", "-1"], "epsilon"),
        (["audit", "prior-aware", "--epsilon", "nan"], "epsilon"),
        (["audit", "prior-aware", "--epsilon", "1", "--prior-size", "1"], "prior_size"),
        (["audit", "prior-aware", "--epsilon", "1", "--trials", "0"], "trials"),
        (["audit", "prior-aware", "--epsilon", "1", "--delta", "1.5"], "delta"),
        (["audit", "prior-aware", "--epsilon", "1", "--sample-rate", "0"], "sample_rate"),
        (["audit", "prior-aware", "--epsilon", "1", "--clip", "-0.1"], "clip"),
        (["audit", "prior-aware", "--epsilon", "1", "--attack", "alg9"], "attack"),
        (["audit", "prior-aware", "--epsilon", "1", "--model", "rnn"], "model"),
        (["audit", "prior-aware", "--epsilon", "1", "--n-known", "1790"], "n_known"),
        (["audit", "prior-aware", "--noise-multiplier", "0", "--attack", "loglik", "--steps", "1"], "loglik"),
        (["audit", "prior-aware"], "epsilon"),
        (["audit", "prior-aware", "--epsilon", "1", "--noise-multiplier", "1"], "not allowed"),
        (["audit", "gradient", "--epsilon", "1", "--restarts", "0", "--trials", "1"], "restarts"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, word):
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and word in err


def _hayes_parser():
    import argparse

    import rerokit.cli.experiment_hayes as eh

    p = argparse.ArgumentParser()
    eh.register(p.add_subparsers())
    return p


def test_experiment_hayes_fig3_module(tmp_path):
    """The figure commands' module (to be wired into the "experiment" group): a tiny Fig. 3 run
    returns the PNG/CSV paths and one row per (epsilon, attack); bad epsilons raise ValueError."""
    p = _hayes_parser()
    a = p.parse_args(["hayes-fig3", "--out-dir", str(tmp_path), "--trials", "3", "--steps", "2", "--n-known", "9",
                      "--epsilons", "2", "8", "--attacks", "alg2", "loglik", "--no-progress"])
    d = a.func(a)
    assert d["png"].endswith("fig3.png") and d["csv"].endswith("fig3.csv") and d["points"] == 4
    assert {(r["x"], r["attack"]) for r in d["rows"]} == {(2.0, "alg2"), (2.0, "loglik"), (8.0, "alg2"), (8.0, "loglik")}
    g = {r["x"]: r["gamma"] for r in d["rows"]}
    assert 0.1 < g[2.0] < g[8.0] <= 1
    a = p.parse_args(["hayes-fig3", "--out-dir", str(tmp_path / "x"), "--epsilons", "-1", "--no-progress"])
    with pytest.raises(ValueError, match="epsilon"):
        a.func(a)
