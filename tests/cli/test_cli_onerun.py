"""``rerokit audit one-run-bound`` and ``rerokit audit one-run``: JSON keys, human output, bad input."""

import pytest

from rerokit.cli import main


def test_one_run_bound_json_and_python_api_agree(cli):
    import rerokit

    d = cli.json(["audit", "one-run-bound", "--canaries", "1000", "--guesses", "100", "--correct", "95", "--json"])
    b = rerokit.one_run_bound(1000, 100, 95)
    assert d["epsilon_lower"] == pytest.approx(b.epsilon_lower) and d["mu_lower"] == pytest.approx(b.mu_lower)
    assert d["family"] == "gdp" and d["method"] == "fdp"


def test_one_run_bound_with_the_run_claim(cli):
    d = cli.json(["audit", "one-run-bound", "--canaries", "1000", "--guesses", "100", "--correct", "95",
                  "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "4", "--method", "steinke", "--json"])
    assert d["claim"]["rejected"] is False and d["claim"]["correct_upper"] <= 100
    assert 0 < d["epsilon_lower"] <= d["claim"]["epsilon"]


def test_one_run_bound_human_output(capsys):
    assert main(["audit", "one-run-bound", "--canaries", "500", "--guesses", "50", "--correct", "48"]) == 0
    out = capsys.readouterr().out
    assert "One run proves" in out and "μ proven" in out


@pytest.mark.parametrize("argv,msg", [
    (["--canaries", "10", "--guesses", "20", "--correct", "1"], "guesses"),
    (["--canaries", "10", "--guesses", "5", "--correct", "1", "--options", "3", "--method", "steinke"], "steinke"),
    (["--canaries", "10", "--guesses", "5", "--correct", "1", "--sample-rate", "0.1"], "together"),
    (["--canaries", "10", "--guesses", "5", "--correct", "1", "--noise-multiplier", "1"], "needs"),
])
def test_one_run_bound_bad_input_one_line_exit_2(capsys, argv, msg):
    assert main(["audit", "one-run-bound", *argv]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_one_run_engine_json(cli, tmp_path):
    out = tmp_path / "r.json"
    d = cli.json(["audit", "one-run", "--canaries", "300", "--hidden", "10", "--steps", "5", "--n-known", "100",
                  "--no-progress", "--out", str(out), "--json"])
    for k in ("epsilon_lower", "mu_lower", "certified_epsilon", "certified_mu", "claim_rejected", "settings", "seed"):
        assert k in d
    assert d["epsilon_lower"] <= d["certified_epsilon"]
    assert out.exists()


def test_report_shows_the_one_run_audit(cli, tmp_path):
    out = tmp_path / "r.json"
    cli.json(["audit", "one-run", "--canaries", "300", "--hidden", "10", "--steps", "5", "--n-known", "100",
              "--no-progress", "--out", str(out), "--json"])
    rep = cli.json(["report", "--audit", str(out), "--json"])
    au = rep["audit"]
    assert au["attack"] == "one-run.white-box" and au["trials"] == 300
    assert au["lower_bounds"]["epsilon_lower"] >= 0 and au["consistent"] is True
    assert au["certified_epsilon"] > 0
