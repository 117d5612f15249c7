"""``rerokit report --audit`` of a one-run audit: its words (canaries, guesses, correct - never
"trials"), its numbers (those of the audit's JSON), the claim verdict named, and the comparison with
what the certified curve implies for the game it played.

The audit files are written by ``rerokit audit one-run`` itself at tiny scale (5 steps, q = 1, a
10-unit MLP on digits): a membership game (Bonferroni over the default guess counts), a
reconstruction game with k = 4 and one pre-registered guess count, and a membership game whose
real noise is 0.5 against a claimed sigma of about 2.4 (one run rejects its claim).
Independent checks at q = 1 (the run is exactly mu-GDP, mu = sqrt(T)/sigma, Dong, Roth & Su 2022):
the Bayes membership accuracy of G_mu at prior 1/2 is Phi(mu/2), and Hayes et al. 2023's gamma at
kappa is Phi(Phi^-1(kappa) + mu) (their Cor. 3, closed form).
"""

from __future__ import annotations

import json
import math

import pytest
from scipy.stats import norm

from rerokit.cli import main

TINY = ["--hidden", "10", "--steps", "5", "--n-known", "100", "--no-progress", "--seed", "0"]


@pytest.fixture(scope="module")
def one_run_files(tmp_path_factory):
    """{name: (path, the audit's JSON)} for the three tiny audits (each written by the CLI)."""
    d = tmp_path_factory.mktemp("onerun")
    runs = {
        "membership": ["--canaries", "300"],
        "reconstruction": ["--game", "reconstruction", "--options", "4", "--canaries", "200", "--guess-counts", "60"],
        "rejected": ["--canaries", "300", "--actual-noise-multiplier", "0.5"],
        "split": ["--canaries", "300", "--selection", "split", "--method", "steinke"],
    }
    out = {}
    for name, argv in runs.items():
        p = d / f"{name}.json"
        assert main(["audit", "one-run", *argv, *TINY, "--out", str(p)]) == 0
        out[name] = (str(p), json.loads(p.read_text()))
    return out


@pytest.fixture(scope="module")
def reports(one_run_files):
    from rerokit.report import build_report

    return {name: (build_report(audit=p, what_if=False), one) for name, (p, one) in one_run_files.items()}


def _audit_text(rep) -> str:
    from rerokit.report.build import verdict_sentences
    from rerokit.report.format import plain

    return next(plain(s) for k, s in verdict_sentences(rep.to_dict()) if k == "audit")


def _mu(one) -> float:
    st = one["settings"]
    return math.sqrt(st["steps"]) / st["noise_multiplier"]


@pytest.mark.parametrize("name", ["membership", "reconstruction", "rejected", "split"])
def test_the_numbers_are_the_audit_jsons(reports, name):
    from rerokit.report.build import key_numbers

    rep, one = reports[name]
    d = rep.to_dict()
    v = d["audit"]["one_run_view"]
    for k in ("canaries", "options", "guesses", "correct", "correct_upper", "epsilon_lower", "mu_lower",
              "certified_epsilon", "certified_mu", "claim_rejected", "accuracy_all"):
        assert v[k] == one[k], k
    assert v["abstentions"] == one["canaries"] - one["guesses"]
    assert v["accuracy_guesses"] == one["correct"] / one["guesses"]
    assert v["selection"] == one["bound"]["selection"] and v["claim"] == one["bound"]["claim"]["description"]
    kn = key_numbers(d)
    assert kn["audit_guesses"] == one["guesses"] and kn["audit_correct"] == one["correct"]
    assert kn["audit_correct_upper"] == one["correct_upper"]
    assert kn["audit_guess_accuracy"] == one["correct"] / one["guesses"]
    assert kn["audit_epsilon_lower"] == one["epsilon_lower"] and kn["audit_mu_lower"] == one["mu_lower"]
    assert kn["audit_certified_epsilon"] == one["certified_epsilon"]
    assert kn["audit_certified_mu"] == one["certified_mu"]
    # what the run proves never exceeds what is certified (same neighbouring relation)
    assert one["epsilon_lower"] <= one["certified_epsilon"] or name == "rejected"


@pytest.mark.parametrize("name", ["membership", "reconstruction", "rejected", "split"])
def test_one_run_words_canaries_guesses_correct_never_trials(reports, name):
    from rerokit.report.build import report_summary, tiles
    from rerokit.report.figures import figures
    from rerokit.report.format import plain

    rep, one = reports[name]
    d = rep.to_dict()
    m, g, c = one["canaries"], one["guesses"], one["correct"]
    s = _audit_text(rep)
    held_out = f" (a held-out part of the run's {one['settings']['canaries']})" if name == "split" else ""
    assert f"of {m} canary slots{held_out} the attack guessed {g} (abstaining on {m - g}) and {c} were correct" in s
    assert "trial" not in s
    # the headline is the accuracy over the guesses made, then epsilon/mu, then how g was chosen
    assert s.index(" of the guesses") < s.index("\u03b5 \u2265") < s.index("\u03bc \u2265")
    assert f"number of guesses: {one['bound']['selection']}" in s
    sections = [r.section for r in report_summary(d).rows if r.section and r.section.startswith("Audit")]
    assert sections == [f"Audit: one training run, {d['audit']['one_run_view']['game']} game, "
                        f"{one['settings']['canaries']} canary slots, "
                        f"k = {one['options']}"]
    labels = [r.label for r in report_summary(d).rows]
    assert f"Correct guesses ({g} guesses, {m - g} abstentions)" in labels
    assert f"Accuracy over all {one['settings']['canaries']} slots (no abstention)" in labels
    assert not any("trial" in lab for lab in labels)
    tile = next(t for t in tiles(d) if t[0].startswith("One-run audit"))
    assert plain(tile[1]) == f"{c} of {g} guesses correct"
    fig = next(f for f in figures(rep) if f.name == "audit")
    assert "trial" not in fig.caption and f"{c} correct of {g} guesses" in fig.caption
    col = dict(zip(fig.columns["quantity"], fig.columns["value"]))
    assert col["accuracy_guesses"] == c / g and col["claim_correct_upper_fraction"] == one["correct_upper"] / g
    assert col["epsilon_lower"] == one["epsilon_lower"] and col["mu_certified"] == one["certified_mu"]


def test_selection_words_pre_registered_and_bonferroni(reports):
    assert "number of guesses: pre-registered number of guesses" in _audit_text(reports["reconstruction"][0])
    n = reports["membership"][1]["bound"]["thresholds_tried"]
    assert n > 1
    assert f"number of guesses: best of {n} guess counts (Bonferroni)" in _audit_text(reports["membership"][0])


def test_claim_verdict_named_not_rejected(reports):
    rep, one = reports["membership"]
    assert one["claim_rejected"] is False
    s = _audit_text(rep)
    assert f"allows at most {one['correct_upper']} correct of {one['guesses']} guesses at 95%" in s
    assert s.endswith("the run's own claimed curve is not rejected at 95%.")
    au = rep.to_dict()["audit"]
    assert au["consistent"] is True and au["consistent_meaning"] == "the run's own claimed curve is not rejected"
    assert "consistent with the bound" not in s


def test_claim_verdict_named_rejected(reports):
    from rerokit.report.build import report_summary

    rep, one = reports["rejected"]
    assert one["claim_rejected"] is True and one["correct"] > one["correct_upper"]
    s = _audit_text(rep)
    assert "REJECTED: the run leaks more than its claim" in s and "not rejected" not in s
    assert rep.to_dict()["audit"]["consistent"] is False
    row = next(r for r in report_summary(rep.to_dict()).rows if r.label == "The run's own claim")
    assert row.value == "REJECTED"


def test_membership_compared_with_bayes_accuracy_not_gamma_at_one_half(reports):
    rep, one = reports["membership"]
    d = rep.to_dict()
    au = d["audit"]
    ps = au["one_run_view"]["per_slot_bound"]
    assert ps["value"] == d["membership"]["bayes_accuracy"] == au["gamma"]
    exact = norm.cdf(_mu(one) / 2)  # Bayes accuracy of G_mu at prior 1/2 (q = 1: the run is mu-GDP)
    assert exact <= ps["value"] <= exact + 1e-4
    assert ps["value"] < one["rero_gamma"] - 0.05  # gamma at kappa = 1/2 is a different game's (looser) number
    assert "\u03b3 at \u03ba" not in _audit_text(rep)


def test_reconstruction_per_slot_bound_is_gamma_at_one_over_k(reports):
    from rerokit.report.build import report_summary

    rep, one = reports["reconstruction"]
    au = rep.to_dict()["audit"]
    ps = au["one_run_view"]["per_slot_bound"]
    k = one["options"]
    exact = norm.cdf(norm.ppf(1.0 / k) + _mu(one))  # Hayes et al. 2023 closed form at q = 1 (add/remove)
    assert exact - 1e-4 <= ps["value"] <= exact + 1e-4 and ps["value"] == pytest.approx(one["rero_gamma"], abs=1e-4)
    assert ps["name"] == f"\u03b3 at \u03ba = 1/{k}" and "add/remove" in ps["method"]
    # epsilon / mu are compared in the family the bound used: replace-one (mu = 2 sqrt(T)/sigma)
    assert one["bound"]["adjacency"] == "replace_one" and one["certified_mu"] == pytest.approx(2 * _mu(one))
    assert "certified \u2264 " in _audit_text(rep) and "replace-one" in _audit_text(rep)
    row = next(r for r in report_summary(rep.to_dict()).rows if r.label.startswith("Per-slot bound"))
    assert row.label == f"Per-slot bound: \u03b3 at \u03ba = 1/{k}"


def test_report_cli_json_and_text(one_run_files, capsys):
    p, one = one_run_files["membership"]
    assert main(["report", "--audit", p, "--no-what-if"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the terminal wraps lines
    assert "canary slots" in out and "the run's own claimed curve is not rejected at 95%" in out
    assert main(["report", "--audit", p, "--no-what-if", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["audit"]["one_run_view"]["epsilon_lower"] == one["epsilon_lower"]


def test_split_selection_bounds_on_a_held_out_half_accuracy_over_all_slots(reports):
    from rerokit.report.build import report_summary

    rep, one = reports["split"]
    au = rep.to_dict()["audit"]
    m_all = one["settings"]["canaries"]
    assert one["canaries"] < m_all and au["one_run_view"]["slots"] == m_all == au["trials"]
    assert au["successes"] == round(one["accuracy_all"] * m_all)
    assert one["bound"]["selection"].startswith("split:") and one["bound"]["method"] == "steinke"
    row = next(r for r in report_summary(rep.to_dict()).rows if r.label.startswith("Correct guesses its claimed"))
    assert "Steinke et al. 2023 Thm 5.2" in row.method


@pytest.mark.parametrize("name", ["membership", "reconstruction", "split"])
def test_one_run_audit_is_typed_and_round_trips(reports, name):
    from rerokit.report.model import OneRunAudit, OneRunView, ReportData

    rep, one = reports[name]
    au = rep.sections.audit
    assert isinstance(au, OneRunAudit) and isinstance(au.one_run_view, OneRunView)
    assert au.one_run_view.epsilon_lower == one["epsilon_lower"] == au.lower_bounds.epsilon_lower
    assert au.gamma == au.one_run_view.per_slot_bound.value
    assert ReportData.from_dict(rep.to_dict()) == rep.sections


@pytest.mark.parametrize("name", ["membership", "split"])
def test_one_run_section_carries_every_field_of_the_audit_read(reports, name):
    from dataclasses import fields

    from rerokit.report.model import AuditRun

    rep, one = reports[name]
    a, au = rep.audit, rep.sections.audit
    assert a.one_run == one == au.one_run
    for f in fields(AuditRun):
        assert getattr(au, f.name) == getattr(a, f.name), f.name
    assert a.to_dict()["one_run"] == one  # written only for a one-run audit
