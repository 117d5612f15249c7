"""The terminal renderer (rerokit.report.terminal) and the number formats (rerokit.report.format)."""

from __future__ import annotations

import io
import math
import re

import pytest

from rerokit.report.format import Lead, Num, fmt, fmt_bracket, fmt_log10, num, plain
from rerokit.report.terminal import FIELD_HELP, HIDDEN_FIELDS, Row, Table, generic_rows, render

ANSI = re.compile(r"\x1b\[[0-9;]*m")


# --------------------------------------------------------------------------- formats


def test_fmt_is_four_significant_digits():
    # documented precision (rerokit.report.format.SIGNIFICANT = 4): Python's '.4g' in [1e-4, 1e6)
    assert fmt(0.19420680184827102) == "0.1942"
    assert fmt(1.8283115563471366) == "1.828"
    assert fmt(0.02914037545598554) == "0.02914"
    assert fmt(123456.7) == "123457"  # no exponent below 1e6
    assert fmt(2.5e7) == "2.5e+07"
    assert fmt(9.66e-5) == "9.66e-05"
    assert fmt(5e-324) == "4.941e-324"  # the smallest double, written with its 4 digits
    assert (fmt(0.0), fmt(math.inf), fmt(None), fmt(1000)) == ("0", "inf", "n/a", "1000")


def test_fmt_log10_writes_underflowing_baselines():
    # kappa of "any 28x28 image within 32/256 per pixel" is 9.66e-473 (Hayes et al. App. I; README table):
    # PixelTolerancePrior(784, 32/256).log_kappa() / ln 10 = -472.01503...
    from rerokit.bounds.priors import PixelTolerancePrior

    l10 = PixelTolerancePrior(784, 32 / 256).log_kappa() / math.log(10)
    assert fmt_log10(l10) == "9.66e-473"
    # CIFAR-10 (d = 3072): 2.96e-1850 (Hayes et al. App. I)
    assert fmt_log10(PixelTolerancePrior(3072, 32 / 256).log_kappa() / math.log(10)) == "2.96e-1850"
    assert fmt_log10(-2.0) == "0.01"  # representable: plain fmt
    # the mantissa rounds up into the next power: 9.9996e-401 -> 1e-400
    assert fmt_log10(math.log10(9.9996) - 401) == "1e-400"


def test_num_uses_log10_only_when_the_value_underflows():
    assert num("k", 0.0, log10=-472.0150332).text == "9.66e-473"
    assert num("k", 0.25, log10=math.log10(0.25)).text == "0.25"
    assert fmt_bracket([0.19419829486088294, 0.19420680184827102]) == "[0.194198, 0.194207]"
    assert plain((Lead("A: "), "b ", Num("x", 1.0, "1"), ".")) == "A: b 1."


# --------------------------------------------------------------------------- render


def test_render_prints_the_verdict_first_then_the_table_without_colour_in_a_file():
    out = io.StringIO()
    render(verdict=[(Lead("Informed adversary: "), "at most ", Num("g", 0.1942, "0.1942"), ".")],
           rows=[Row("gamma, prior of 10", "<= 0.1942", "[0.194198, 0.194207]", "Hayes et al. Thm 2", "certified",
                     section="Informed adversary")],
           tables=[Table("What would change it", ("target", "sigma"), (("0.2", "0.9696"),))],
           notes=["a note"], title="Title", file=out)
    text = out.getvalue()
    assert not ANSI.search(text)  # StringIO is not a terminal: no colour codes
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines[0] == "Title"
    assert lines[1].startswith("\u2022 Informed adversary: at most 0.1942.")
    head = next(i for i, ln in enumerate(lines) if ln.startswith("Quantity"))
    assert head > 1  # the table comes after the verdict
    assert "Kind" in lines[head] and "Method" in lines[head]
    assert any("gamma, prior of 10" in ln and "[0.194198, 0.194207]" in ln for ln in lines)
    assert "What would change it" in text and "0.9696" in text and lines[-1] == "a note"


def test_render_colours_only_when_asked_or_on_a_terminal():
    out = io.StringIO()
    render(verdict=[("x ", Num("g", 1.0, "1"))], rows=[Row("a", "1")], file=out, color=True)
    assert ANSI.search(out.getvalue())


def test_render_drops_empty_columns():
    out = io.StringIO()
    render(rows=[Row("a", "1"), Row("b", "2")], file=out)
    head = out.getvalue().splitlines()[0]
    assert "Quantity" in head and "Value" in head and "Method" not in head and "Kind" not in head


def test_generic_rows_hide_internal_fields_and_explain_names():
    d = {"gamma": 0.19, "interval": [0.18, 0.19], "direction": "upper", "method": "exact",
         "details": {"lower": 0.18, "value_discretization_interval": 3e-4, "threshold_epsilon": 0.4, "floored": False},
         "mean_target_clipped_fraction": 0.9, "settings": {"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 10}}
    rows = generic_rows(d)
    labels = [r.label for r in rows]
    for hidden in ("direction", "floored", "threshold_epsilon", "value_discretization_interval"):
        assert hidden in HIDDEN_FIELDS and not any(hidden in lab for lab in labels)
    assert FIELD_HELP["mean_target_clipped_fraction"] in labels
    g = rows[labels.index(FIELD_HELP["gamma"])]
    assert g.value == "0.19" and g.detail == "[0.18, 0.19]"  # the interval beside its value, not a second row
    assert [r.section for r in rows if r.section] == ["settings"]  # "details" is all internal: no section


# --------------------------------------------------------------------------- the report's terminal output


@pytest.fixture(scope="module")
def settings_report():
    from rerokit.report import DataDescription, build_report

    # sigma = 1, q = 0.01, T = 1000: the README's example setting
    return build_report(noise_multiplier=1.0, sample_rate=0.01, steps=1000,
                        data=DataDescription(data_shape="1x8x8", clip=0.5), what_if=False)


def test_report_terminal_is_a_level_then_one_line_of_odds_per_threat_model(settings_report):
    import math

    out = io.StringIO()
    settings_report.render_terminal(file=out)
    text = out.getvalue()
    d = settings_report.to_dict()
    bullets = [ln for ln in text.splitlines() if ln.startswith("\u2022 ")]
    assert [v["threat_model"] for v in d["verdict"]] == ["level", "informed", "pixel_tolerance", "membership",
                                                          "uninformed", "informed_mse"]
    assert len(bullets) == len(d["verdict"]) + 1  # the privacy-facts header, then one bullet per threat model
    assert bullets[0].startswith("\u2022 Privacy facts")
    flat = " ".join(text.split())
    for v in d["verdict"]:
        assert " ".join(v["text"].split()) in flat  # the JSON verdict text is what the terminal shows
    # the level: epsilon 1.828 is in the middle tier of Ponomareva et al. 2023, and the line says so
    assert d["level"]["name"] == "reasonable" and d["level"]["tier"] == 2
    assert "Level: reasonable" in flat and "Ponomareva et al. 2023" in flat
    # odds against the blind guess, the count rounded up from the certified bound (never understated)
    g10 = d["informed"]["prior_10"]["gamma"]
    assert f"at most {math.ceil(100 * g10)} in 100 attempts, against 10 by chance" in flat
    tpr = next(p["tpr"] for p in d["membership"]["tpr_at_fpr"] if p["fpr"] == 0.01)
    assert f"catches at most {math.ceil(100 * tpr)} in 100 members" in flat
    # the exact numbers follow in the table, each once
    kn = d["key_numbers"]
    table = flat.split("Quantity", 1)[1]
    for key in ("gamma_prior_2", "gamma_prior_10", "gamma_prior_100", "epsilon", "membership_advantage",
                "membership_tpr_at_fpr_0p01", "uninformed_p_mse_over_steps"):
        assert fmt(kn[key]) in table
    assert all("." not in k for k in kn)  # jq-friendly keys
    assert "DP-SGD with \u03c3 = 1, q = 0.01, T = 1000 steps" in flat.split("\u2022")[0]  # the run, in the title
    assert text.index("\u2022 ") < text.index("Quantity")
    # a glossary of the symbols shown, each of which does occur above it
    head, gl = text.split("Symbols:", 1)
    for sym in ("\u03b3", "\u03ba", "\u03b5", "\u03b4", "PLD", "TPR", "FPR", "MSE", "NCC"):
        assert f"{sym} " in gl and sym in head, sym


def test_report_at_80_columns_keeps_the_kind_column_whole(settings_report):
    from rich.cells import cell_len

    from rerokit.report.terminal import render

    s = settings_report.summary()
    out = io.StringIO()
    render(verdict=s.verdict, rows=s.rows, tables=s.tables, file=out, width=80, glossary=s.glossary)
    lines = out.getvalue().splitlines()
    assert max(cell_len(ln) for ln in lines) <= 80  # terminal cells (a combining accent as in X\u0302 takes none)
    head = next(ln for ln in lines if ln.startswith("Quantity"))
    assert head.rstrip().endswith("Kind") and "Method" not in head  # Method goes first
    kinds = [r.status for r in s.rows]
    body = "\n".join(lines[lines.index(head):])
    for k in set(kinds):
        assert body.count(k) >= kinds.count(k), k  # every kind printed whole, never folded ("ce" / "es")
    wide = io.StringIO()
    render(rows=s.rows, file=wide, width=120)
    assert "Method" in wide.getvalue()


def test_report_terminal_shows_no_internal_field_names(settings_report):
    out = io.StringIO()
    settings_report.render_terminal(file=out)
    text = out.getvalue()
    for name in ("direction", "floored", "threshold_epsilon", "value_discretization_interval", "log10_gamma"):
        assert not re.search(rf"\b{name}\b", text)


# --------------------------------------------------------------------------- every command's human output


CHEAP = [
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000", "--prior-size", "10"],
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "2", "--prior-size", "10",
     "--method", "mc", "--mc-samples", "1000", "--seed", "0"],
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1", "--prior-size", "10",
     "--method", "closed-form"],
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000", "--log10-kappa", "-472"],
    ["bound", "dp", "--epsilon", "1", "--kappa", "0.1"],
    ["bound", "rdp", "--alpha", "2", "--epsilon", "1", "--kappa", "0.1"],
    ["bound", "zcdp", "--rho", "1", "--kappa", "0.1"],
    ["bound", "gdp", "--mu", "1", "--kappa", "0.1"],
    ["bound", "fano", "--noise-multiplier", "1", "--prior-size", "10"],
    ["bound", "fano", "--mutual-information", "1", "--prior-size", "10"],
    ["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "100", "--fpr", "0.01", "0.1"],
    ["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "100", "--grid", "8"],
    ["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--mse-threshold", "0.1",
     "--clip", "0.5", "--steps", "10", "--sample-rate", "0.1"],
    ["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--psnr-threshold", "20",
     "--data-range", "1"],
    ["bound", "mse-rdp", "--epsilon", "1", "--dim", "4"],
    ["kappa", "discrete", "--prior-size", "10"],
    ["kappa", "ball", "--dim", "4", "--eta", "0.5"],
    ["kappa", "gaussian", "--dim", "4", "--sigma", "1", "--eta", "1"],
    ["kappa", "pixels", "--dim", "784", "--delta", "0.125"],
    ["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "1", "--steps", "10", "--prior-size", "10"],
    ["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "1", "--noise-multiplier", "3", "--prior-size",
     "10"],
]


@pytest.mark.parametrize("argv", CHEAP, ids=[" ".join(a[:2]) + f" #{i}" for i, a in enumerate(CHEAP)])
def test_every_command_prints_a_verdict_then_a_table(argv, cli):
    from rerokit.report.verdicts import VERDICTS

    d = cli.json(argv)
    fn = VERDICTS[" ".join(argv[:2])]
    s = fn(d)  # the registered function itself reads the real output (no generic fallback)
    assert s.verdict and s.rows
    code, out, err = cli.run(argv)
    assert code == 0
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines[0].startswith("\u2022 ")  # a verdict in plain words first
    assert any(ln.startswith("Quantity") for ln in lines)
    # internal field names never reach the human output; JSON keys are unchanged (cli.json above)
    for name in ("direction", "floored", "threshold_epsilon", "value_discretization_interval", "log10_gamma",
                 "log10_kappa", "rerokit_version"):
        assert not re.search(rf"\b{name}\b", out), name
    # no number twice as two rows: each row label is unique
    labels = [r.label for r in s.rows]
    assert len(labels) == len(set(labels))


def test_bound_dpsgd_table_shows_gamma_once_with_its_bracket(cli):
    argv = CHEAP[0]
    d = cli.json(argv)
    out = cli.run(argv)[1]
    # gamma (rero_dpsgd, exact) as its value and its certified bracket on one row; the old duplicate rows
    # 'lower' (= interval[0]) and 'log10_gamma' are gone
    row = next(ln for ln in out.splitlines() if ln.startswith("\u03b3: success"))
    assert f"\u2264 {fmt(d['gamma'])}" in row and fmt_bracket(d["interval"]) in row
    assert out.count(fmt_bracket(d["interval"])) == 2  # gamma's row and TPR at FPR = kappa = 0.1 (same number)
    assert "lower" not in out.split("Quantity")[1]


def test_generic_summary_for_commands_without_a_verdict_function():
    from rerokit.report.verdicts import generic_summary, summary_for

    d = {"mse": 0.5, "ci_low": 0.4, "ci_high": 0.6, "confidence": 0.95, "direction": "upper",
         "png": "x.png", "settings": {"seed": 0, "noise_multiplier": 1.0, "clip": 1.0}}
    s = summary_for("experiment something", d)
    assert s == generic_summary("experiment something", d)
    assert plain(s.verdict[0]) == "rerokit experiment something: mean MSE 0.5 (95% CI [0.4, 0.6]); files written: x.png."
    mse = next(r for r in s.rows if r.label == "mse")
    assert mse.detail == "95% CI [0.4, 0.6]"  # the interval beside its metric, not as two more rows
    assert not [r for r in s.rows if r.label in ("ci low", "ci high", "direction")]
    # a registered function that cannot read an unusual result falls back to the generic summary
    assert plain(summary_for("bound dpsgd", {"odd": 1}).verdict[0]).startswith("rerokit bound dpsgd:")


def test_summary_for_checks_what_a_verdict_reads_instead_of_catching_errors():
    from rerokit.report.verdicts import VERDICTS, generic_summary, summary_for

    # a points list whose entries lack the TPR bracket: the generic summary, by an explicit check
    odd = {"advantage": 0.1, "points": [{"fpr": 0.1}]}
    assert summary_for("bound tradeoff", odd) == generic_summary("bound tradeoff", odd)
    # membership TPRs without an advantage: the dpsgd verdict would index it, so the generic summary
    dp = {"membership": {"tpr_at_fpr": [{"fpr": 0.01, "tpr": 0.1, "interval": [0.1, 0.1]}]}, "gamma": 0.2}
    assert summary_for("bound dpsgd", dp) == generic_summary("bound dpsgd", dp)
    # an audit claiming a proven mu without its epsilon
    au = {"gamma": 0.3, "kappa": 0.1, "trials": 10, "success": 0.2, "empirical_mu_lower": 0.1}
    assert summary_for("audit prior-aware", au) == generic_summary("audit prior-aware", au)
    # a result that passes the checks (bound tradeoff's: it reads back as its TradeoffOutput) is the verdict
    # function's own (nothing swallowed)
    good = {"settings": {"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 100, "adjacency": "remove",
                         "sampler": "poisson"},
            "method": "exact", "value_discretization_interval": 1e-4,
            "points": [{"fpr": 0.1, "beta": [0.79, 0.8], "tpr": [0.2, 0.21], "error": 0.01}], "max_error": 0.01,
            "advantage": 0.1, "advantage_interval": [0.09, 0.1], "bayes_accuracy": 0.55,
            "bayes_accuracy_interval": [0.54, 0.55], "prior_membership": 0.5}
    assert summary_for("bound tradeoff", good) == VERDICTS["bound tradeoff"](good)


def test_bound_dpsgd_membership_is_read_as_the_report_s_membership_facts(cli):
    from rerokit.report.model import MembershipFacts
    from rerokit.report.verdicts import VERDICTS, generic_summary, summary_for

    d = cli.json(CHEAP[0])
    m = MembershipFacts.from_dict(d["membership"])  # membership_summary's keys are MembershipFacts' fields
    assert m.to_dict() == {k: v for k, v in d["membership"].items() if k != "method"}
    assert summary_for("bound dpsgd", d) == VERDICTS["bound dpsgd"](d)
    rows = {r.label: r for r in summary_for("bound dpsgd", d).rows}
    assert rows["TPR at FPR 1%"].value == f"\u2264 {fmt(m.tpr_at(0.01).tpr)}"
    # a membership object without one of its fields is not bound dpsgd's: the generic summary, by the check
    for key in ("bayes_accuracy", "advantage_interval", "adjacency"):
        bad = dict(d, membership={k: v for k, v in d["membership"].items() if k != key})
        assert summary_for("bound dpsgd", bad) == generic_summary("bound dpsgd", bad), key
