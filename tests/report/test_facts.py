"""The privacy-facts header (rerokit.report.facts) and the sampler in the report's inputs."""

from __future__ import annotations

import json

import pytest

from rerokit.bounds.schedule import Schedule
from rerokit.report.facts import facts_html, facts_line, privacy_facts


def test_facts_of_a_poisson_run():
    f = privacy_facts(Schedule.from_settings(1.0, 0.01, 1000), 1e-5, "exact")
    assert f.unit_of_privacy == "one example" and f.sampler == "poisson" and f.sampler_source == "assumed"
    assert "add/remove" in f.neighbouring_relation and "ASSUMED" in f.sampler_text
    assert "every intermediate model" in f.released and "1000 steps" in f.released
    assert "PLD" in f.accountant and f.delta == 1e-5
    line = facts_line(f.to_dict())
    assert line.startswith("Privacy facts") and "unit of privacy: one example" in line
    h = facts_html(f.to_dict())
    assert h.startswith('<section id="privacy-facts">') and "<dt>sampler</dt>" in h
    assert facts_html(None) == ""


def test_facts_of_a_shuffled_group_run_and_escaping():
    f = privacy_facts(Schedule.from_settings(1.0, 0.1, 30, sampler="shuffle", examples_per_user=3,
                                             sampler_source="detected"), 1e-6, "closed-form")
    assert f.unit_of_privacy == "one user (3 examples)" and "zero-out" in f.neighbouring_relation
    assert "detected" in f.sampler_text and "closed-form" in f.accountant
    d = f.to_dict()
    d["accountant"] = "<script>"
    assert "<script>" not in facts_html(d) and "&lt;script&gt;" in facts_html(d)


def test_report_from_a_risk_accountant_state_dict_keeps_the_sampler(cli, tmp_path):
    p = tmp_path / "state.json"
    p.write_text(json.dumps({"history": [[1.0, 0.1, 30]], "mechanism": "rerokit", "sampler": "shuffle",
                             "sampler_source": "detected", "examples_per_user": 1}))
    d = cli.json("report", "--opacus-history", str(p), "--no-what-if")
    assert d["settings"]["sampler"] == "shuffle" and d["privacy_facts"]["sampler_source"] == "detected"
    assert d["poisson_assumption"]["gamma"] < d["informed"]["prior_10"]["gamma"]
    # --sampler on the command line overrides
    p2 = tmp_path / "hist.json"
    p2.write_text(json.dumps([[1.0, 0.1, 30]]))
    d2 = cli.json("report", "--opacus-history", str(p2), "--no-what-if", "--sampler", "shuffle")
    assert d2["informed"]["prior_10"]["gamma"] == pytest.approx(d["informed"]["prior_10"]["gamma"], rel=1e-12)
    d3 = cli.json("report", "--opacus-history", str(p2), "--no-what-if")
    assert d3["settings"]["sampler_source"] == "assumed" and "poisson_assumption" not in d3


def test_report_what_if_calibrates_under_the_sampler(cli):
    from scipy.stats import norm

    d = cli.json("report", "--noise-multiplier", "2", "--sample-rate", "0.1", "--steps", "30", "--sampler", "shuffle",
                 "--what-if")
    for t in d["what_would_change"]["targets"]:
        if t.get("noise_multiplier") is not None:
            assert norm.cdf(norm.ppf(0.1) + 3 ** 0.5 / t["noise_multiplier"]) <= t["target_gamma"] + 1e-9
