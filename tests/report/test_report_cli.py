"""``rerokit report``: its JSON equals the ``bound`` / ``calibrate`` commands' JSON for the same
settings, ``--png`` writes PNG + CSV pairs, input files are read strictly, bad input is one line
with exit code 2, user strings are escaped, and the settings-only path stays light."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys

import pytest

# sigma = 1, q = 0.01, T = 1000 (the README's example), digits-sized data 1x8x8, C = 0.5, D = 1
SETTINGS = ["--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000"]
DATA = ["--data-shape", "1x8x8", "--clip", "0.5", "--diameter", "1"]


@pytest.fixture(scope="module")
def report_json():
    """The report's JSON, from the CLI in-process (module-scoped: the six calibrations run once)."""
    import contextlib
    import io

    from rerokit.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["report", *SETTINGS, *DATA, "--what-if", "--json"])
    assert code == 0
    lines = buf.getvalue().strip().splitlines()
    assert len(lines) == 1  # one JSON object
    return json.loads(lines[0])


def test_report_json_echoes_the_settings_and_version(report_json):
    from rerokit import __version__

    d = report_json
    assert d["settings"] == {"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 1000, "total_steps": 1000,
                             "source": "settings", "sampler": "poisson", "sampler_source": "assumed",
                             "examples_per_user": 1, "neighbouring_relation": d["privacy_facts"]["neighbouring_relation"]}
    assert d["data"]["shape"] == [1, 8, 8] and d["data"]["dim"] == 64 and d["data"]["clip"] == 0.5
    assert d["rerokit_version"] == __version__
    assert all(re.fullmatch(r"[a-z0-9_.]+", k) for k in _keys(d))  # snake_case throughout



def _keys(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if not re.fullmatch(r"[0-9.e-]+", k):  # number-valued keys ("0.01") of brackets
                yield k
            yield from _keys(v)
    elif isinstance(x, list):
        for v in x:
            yield from _keys(v)


@pytest.mark.parametrize("n", [2, 10, 100])
def test_gamma_equals_bound_dpsgd(report_json, cli, n):
    # gamma: the same composed PLD as 'rerokit bound dpsgd' (rero_dpsgd == TradeoffCurve.reconstruction_success,
    # both rerokit.bounds.dpsgd.exact_power_many): equal to the last bit, bracket too
    b = cli.json("bound", "dpsgd", *SETTINGS, "--prior-size", n)
    e = report_json["informed"][f"prior_{n}"]
    assert e["gamma"] == b["gamma"]
    assert e["gamma_interval"] == b["interval"]
    assert e["kappa"] == 1.0 / n
    assert report_json["key_numbers"][f"gamma_prior_{n}"] == b["gamma"]
    if n == 10:
        # epsilon at delta = 1e-5: rerokit's PLD of both directions (bound dpsgd's comparisons.epsilon), exact
        assert report_json["epsilon"] == b["comparisons"]["epsilon"]
        # membership: the same PLD read as a trade-off curve (bound dpsgd's membership object), exact
        for k in ("advantage", "tpr_at_fpr", "bayes_accuracy"):
            assert report_json["membership"][k] == b["membership"][k]


def test_membership_equals_bound_tradeoff(report_json, cli):
    # 'rerokit bound tradeoff --fpr 0.01': TradeoffCurve.tpr_at_fpr, the same curve object's method (exact)
    t = cli.json("bound", "tradeoff", *SETTINGS, "--fpr", "0.01")
    p01 = next(p for p in report_json["membership"]["tpr_at_fpr"] if p["fpr"] == 0.01)
    assert p01["tpr"] == t["points"][0]["tpr"][1]
    assert p01["interval"] == t["points"][0]["tpr"]
    assert report_json["membership"]["advantage"] == t["advantage"]


def test_pixel_tolerance_equals_kappa_pixels_and_bound_dpsgd(report_json, cli):
    e = report_json["informed"]["pixel_tolerance"]
    k = cli.json("kappa", "pixels", "--dim", 64, "--delta", 0.125)  # PixelTolerancePrior(64, 32/256)
    assert e["kappa"] == k["kappa"] and e["log10_kappa"] == k["log10_kappa"]
    b = cli.json("bound", "dpsgd", *SETTINGS, "--log10-kappa", repr(e["log10_kappa"]))
    # log10 -> ln round trip moves log kappa by a few ulps (|log kappa| ~ 89): relative 1e-9 on gamma
    assert e["gamma"] == pytest.approx(b["gamma"], rel=1e-9)


def test_uninformed_equals_bound_uninformed(report_json, cli):
    # min_norm defaults to C = 0.5 (the report's documented assumption); 'rerokit bound uninformed' with
    # --min-norm 0.5: mse_rero, mse_rero_over_steps, expected_mse, ncc_bound, optimal_rows - exact
    u = report_json["uninformed"]
    assert u["min_norm"] == 0.5 and u["min_norm_source"].startswith("clip")
    b = cli.json("bound", "uninformed", "--noise-multiplier", 1, "--dim", 64, "--min-norm", 0.5, "--clip", 0.5,
                 "--mse-threshold", 0.01, "--steps", 1000, "--sample-rate", 0.01)
    for k in ("gamma", "gamma_error", "log10_gamma", "expected_mse", "ncc_bound", "optimal_rows", "gamma_over_steps"):
        assert u[k] == b[k], k
    # PSNR reading of eta = 0.01 on data range 1: 10 log10(1 / 0.01) = 20 dB; 'bound uninformed --psnr-threshold 20'
    p = cli.json("bound", "uninformed", "--noise-multiplier", 1, "--dim", 64, "--min-norm", 0.5, "--psnr-threshold",
                 u["psnr_threshold_db"], "--data-range", 1)
    assert u["psnr_threshold_db"] == pytest.approx(20.0, abs=1e-12)
    assert u["gamma"] == pytest.approx(p["gamma"], rel=1e-12)  # eta recomputed as 10^(-20/10): same to rounding


def test_guo_equals_bound_mse_rdp(report_json, cli):
    # Guo et al. Thm 1 from the replace-one (2, eps)-RDP (accounting.events.replace_one_rdp_order2): exact
    g = report_json["guo_mse"]
    b = cli.json("bound", "mse-rdp", *SETTINGS, "--diameter", 1, "--dim", 64)
    assert g["mse_lower_bound"] == b["mse_lower_bound"] and g["epsilon_rdp2"] == b["epsilon_rdp2"]
    assert g["neighbouring_relation"] == b["neighbouring_relation"] == "replace-one"


def test_what_if_equals_calibrate_dpsgd(report_json, cli):
    # targets kappa + 0.05 / 0.1 / 0.2 at a prior of 10 (build.WHAT_IF_MARGINS): 'rerokit calibrate dpsgd'
    # (calibrate_noise_multiplier / calibrate_steps, the one solver) - exact
    w = report_json["what_would_change"]
    assert [t["target_gamma"] for t in w["targets"]] == pytest.approx([0.15, 0.2, 0.3], abs=1e-15)
    t = w["targets"][1]
    s = cli.json("calibrate", "dpsgd", "--target-gamma", t["target_gamma"], "--sample-rate", 0.01, "--steps", 1000,
                 "--prior-size", 10)
    assert t["noise_multiplier"] == s["noise_multiplier"] and t["epsilon"] == s["epsilon"]
    st = cli.json("calibrate", "dpsgd", "--target-gamma", t["target_gamma"], "--noise-multiplier", 1,
                  "--sample-rate", 0.01, "--prior-size", 10)
    assert t["steps"] == st["steps"]
    # monotone: a smaller target needs more noise and allows fewer steps
    sig = [x["noise_multiplier"] for x in w["targets"]]
    steps = [x["steps"] for x in w["targets"]]
    assert sig == sorted(sig, reverse=True) and steps == sorted(steps)


def test_human_output_is_a_verdict_then_tables(cli):
    code, out, err = cli.run("report", *SETTINGS, "--no-what-if")
    assert code == 0 and err == ""
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines[0] == "DP-SGD reconstruction-risk report: DP-SGD with \u03c3 = 1, q = 0.01, T = 1000 steps."
    assert lines[1].startswith("\u2022 Privacy facts \u2014 unit of privacy: one example")  # the header first
    bullets = [ln for ln in lines if ln.startswith("\u2022 ")]
    assert bullets[1].startswith("\u2022 Level: reasonable \u2014 (\u03b5 = 1.828")  # then the level
    assert "\u2022 Reconstruction, informed adversary:" in out and "\u2022 Membership inference:" in out
    assert "Quantity" in out and "\x1b[" not in out  # captured output is not a terminal: no colour
    assert "give --data-shape" in out  # the missing uninformed section says how to get it


# --------------------------------------------------------------------------- --png


def test_png_writes_png_and_csv_pairs(cli, tmp_path, audit_files):
    d = cli.json("report", "--audit", audit_files[0], "--no-what-if", "--png", tmp_path / "figs")
    files = d["written"]["png"]
    names = sorted(os.path.basename(f) for f in files)
    stems = {"gamma_vs_kappa", "over_steps", "tradeoff", "uninformed_mse_cdf", "audit"}
    assert names == sorted([s + ".png" for s in stems] + [s + ".csv" for s in stems])
    for f in files:
        assert os.path.getsize(f) > 0
        if f.endswith(".png"):
            with open(f, "rb") as fh:
                assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    # the CSV holds the plotted numbers: the prior markers of gamma_vs_kappa are the JSON's gammas (exact repr)
    with open(tmp_path / "figs" / "gamma_vs_kappa.csv") as fh:
        rows = list(csv.DictReader(fh))
    marks = {r["marker"]: float(r["gamma_upper"]) for r in rows if r["marker"]}
    for n in (2, 10, 100):
        assert marks[f"prior of {n}"] == d["informed"][f"prior_{n}"]["gamma"]
    # over_steps ends at the run's own numbers (its last point is the report's risk object)
    with open(tmp_path / "figs" / "over_steps.csv") as fh:
        last = list(csv.DictReader(fh))[-1]
    assert int(last["step"]) == 100 and float(last["gamma_prior_10"]) == d["informed"]["prior_10"]["gamma"]
    assert float(last["epsilon"]) == d["epsilon"]
    with open(tmp_path / "figs" / "audit.csv") as fh:
        a = {r["quantity"]: r for r in csv.DictReader(fh)}
    assert float(a["success"]["value"]) == 0.27 and float(a["gamma"]["value"]) == d["audit"]["gamma"]


# --------------------------------------------------------------------------- input files


def test_history_event_and_settings_give_the_same_numbers(cli, tmp_path, fx):
    h = tmp_path / "history.json"
    h.write_text(json.dumps(fx.HISTORY))
    sd = tmp_path / "state_dict.json"
    sd.write_text(json.dumps({"history": fx.HISTORY, "mechanism": "rdp"}))  # Opacus accountant.state_dict()
    ev = tmp_path / "event.json"
    ev.write_text(json.dumps(fx.EVENT))
    a = cli.json("report", "--opacus-history", h, "--no-what-if")
    b = cli.json("report", "--opacus-history", sd, "--no-what-if")
    c = cli.json("report", "--event", ev, "--no-what-if")
    assert a["settings"]["schedule"] == [[1.0, 0.01, 500], [1.5, 0.01, 500]]  # consecutive entries merged
    assert c["settings"]["schedule"] == a["settings"]["schedule"]
    assert a["settings"]["source"] == "opacus history history.json"
    # the practitioner entry point on the same history (rerokit.reconstruction_risk): exact
    import rerokit

    r = rerokit.reconstruction_risk(fx.HISTORY, prior=10)
    for d in (a, b, c):
        assert d["informed"]["prior_10"]["gamma"] == r.gamma and d["epsilon"] == r.epsilon
    assert a["what_would_change"]["skipped"].startswith("not requested")


def test_what_if_is_skipped_for_schedules(tmp_path, fx):
    from rerokit.report import build_report

    d = build_report(fx.HISTORY).to_dict()
    assert "several segments" in d["what_would_change"]["skipped"]


def test_audit_json_and_jsonl_agree_and_give_the_lower_bounds(cli, audit_files, fx):
    from rerokit.bounds.empirical import audit_lower_bounds
    from rerokit.stats import clopper_pearson

    j = cli.json("report", "--audit", audit_files[0], "--no-what-if")
    jl = cli.json("report", "--audit", audit_files[1], "--no-what-if")
    for d in (j, jl):
        a = d["audit"]
        assert (a["successes"], a["trials"], a["kappa"]) == (54, 200, 0.1)
        # exact two-sided Clopper-Pearson (rerokit.stats.clopper_pearson, what the audit prints)
        assert a["interval"] == list(clopper_pearson(54, 200))
        # audit_lower_bounds(54, 200, kappa=0.1, delta=1e-5): mu_lo, eps_lo - exact
        assert a["lower_bounds"] == audit_lower_bounds(54, 200, 0.1, delta=1e-5)
        assert a["gamma"] == d["informed"]["prior_10"]["gamma"]  # kappa = 1/10: the prior of 10's gamma
        assert a["consistent"] is True  # 0.21 (lower CI end) <= gamma = 0.3607
        # the settings come from the audit: sigma calibrated for epsilon = 4 at q = 1, T = 100
        assert d["settings"]["noise_multiplier"] == fx.AUDIT_SIGMA and d["data"]["shape"] == [1, 8, 8]
        assert d["gdp"]["kind"] == "mu_gdp" and d["gdp"]["mu"] == pytest.approx(math.sqrt(100) / fx.AUDIT_SIGMA,
                                                                                 rel=1e-15)
    assert j["audit"]["target_epsilon"] == 4.0 and jl["audit"]["target_epsilon"] is None
    assert j["verdict"][-1]["threat_model"] == "audit"
    # the same audit file next to matching settings is accepted
    ok = cli.json("report", "--noise-multiplier", repr(fx.AUDIT_SIGMA), "--sample-rate", 1, "--steps", 100,
                  "--audit", audit_files[1], "--no-what-if")
    assert ok["audit"]["lower_bounds"] == jl["audit"]["lower_bounds"]


def test_an_audit_above_the_bound_is_flagged(tmp_path, fx):
    from rerokit.report import build_report

    p = tmp_path / "strong.jsonl"
    fx.write_audit_jsonl(p, outcomes=[True] * 190 + [False] * 10)  # 95% success >> gamma = 0.36
    d = build_report(audit=str(p), what_if=False).to_dict()
    assert d["audit"]["consistent"] is False
    assert "ABOVE the bound" in d["verdict"][-1]["text"]


def test_real_audit_output_is_read(cli, tmp_path):
    pytest.importorskip("torch", reason="the audit trains models (torch extra)")
    out = tmp_path / "a.jsonl"
    printed = cli.json("audit", "prior-aware", "--trials", 3, "--steps", 3, "--epsilon", 8, "--seed", 1,
                       "--no-progress", "--out", out)
    pj = tmp_path / "a.json"
    pj.write_text(json.dumps(printed))
    a = cli.json("report", "--audit", pj, "--no-what-if")["audit"]
    b = cli.json("report", "--audit", out, "--no-what-if")["audit"]
    assert a["successes"] == b["successes"] == round(printed["success"] * 3)
    assert a["interval"] == [printed["ci_low"], printed["ci_high"]] == b["interval"]
    assert a["gamma"] == pytest.approx(printed["gamma"], rel=1e-12)  # same rero bound (kappa 0.1 vs 1/10: ulps)
    # what the attack proves: the audit's own numbers (bounds.empirical.audit_lower_bounds), exact
    assert a["lower_bounds"]["mu_gdp_lower"] == printed["empirical_mu_lower"]
    assert a["lower_bounds"]["epsilon_lower"] == printed["empirical_epsilon_lower"]


# --------------------------------------------------------------------------- bad input


@pytest.fixture
def bad_files(tmp_path, fx):
    f = {}

    def w(name, text):
        p = tmp_path / name
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
        f[name] = str(p)

    w("garbage.json", "not json at all")
    w("binary.json", b"\xff\xfe\x00\x81")
    w("entry.json", json.dumps([[1.0, 0.01, 100], [1.0, 0.01]]))
    w("nan.json", "[[NaN, 0.01, 100]]")
    w("steps.json", json.dumps([[1.0, 0.01, 10.5]]))
    w("sigma.json", json.dumps([[-1.0, 0.01, 10]]))
    w("empty.json", "[]")
    w("dict.json", json.dumps({"hist": []}))
    w("laplace.json", json.dumps({"LaplaceDpEvent": {"noise_multiplier": 1.0}}))
    w("extra_field.json", json.dumps({"GaussianDpEvent": {"noise_multiplier": 1.0, "eval": "__import__('os')"}}))
    w("count.json", json.dumps({"SelfComposedDpEvent": {"count": "10", "event": {"GaussianDpEvent":
                                                                                {"noise_multiplier": 1.0}}}}))
    deep = {"GaussianDpEvent": {"noise_multiplier": 1.0}}
    for _ in range(100):
        deep = {"SelfComposedDpEvent": {"count": 1, "event": deep}}
    w("deep.json", json.dumps(deep))
    w("noop.json", json.dumps({"NoOpDpEvent": {}}))
    w("audit_garbage.json", json.dumps({"hello": 1}))
    w("audit_noheader.jsonl", '{"kind": "trial", "trial": 0}\n{"kind": "trial", "trial": 1}\n')
    w("audit_notrials.jsonl", json.dumps({"kind": "header", "settings": fx.AUDIT_SETTINGS}) + "\n")
    d = fx.audit_json_dict()
    d["success"] = 0.2701
    w("audit_success.json", json.dumps(d))
    d = fx.audit_json_dict()
    d["settings"]["noise_multiplier"] = 0.0
    w("audit_nonoise.json", json.dumps(d))
    d = fx.audit_json_dict()
    d["attack"] = "$\\alpha$<b>"
    w("audit_attack.json", json.dumps(d))
    return f


BAD = [
    (["report"], "give the run"),
    (["report", "--noise-multiplier", "1", "--sample-rate", "0.01"], "missing --steps"),
    (["report", *SETTINGS, "--event", "{f}/x"], "give the run once"),
    (["report", "--noise-multiplier", "nan", "--sample-rate", "0.01", "--steps", "10"], "noise_multiplier"),
    (["report", *SETTINGS, "--delta", "1"], "delta"),
    (["report", *SETTINGS, "--data-shape", "28by28"], "data_shape"),
    (["report", *SETTINGS, "--data-shape", "0x8"], "data_shape"),
    (["report", *SETTINGS, "--data-shape", "1x8x8", "--clip", "-1"], "clip"),
    (["report", *SETTINGS, "--data-shape", "1x8x8", "--min-norm", "0"], "min_norm"),
    (["report", *SETTINGS, "--diameter", "inf"], "diameter"),
    (["report", *SETTINGS, "--mse-threshold", "0"], "mse_threshold"),
    (["report", *SETTINGS, "--dataset-size", "0"], "dataset_size"),
    (["report", "--opacus-history", "{f}/missing.json"], "opacus history"),
    (["report", "--opacus-history", "{f}"], "is a directory"),
    (["report", "--opacus-history", "{garbage.json}"], "not valid JSON"),
    (["report", "--opacus-history", "{binary.json}"], "not UTF-8"),
    (["report", "--opacus-history", "{entry.json}"], "entry 1 must be [noise_multiplier, sample_rate, steps]"),
    (["report", "--opacus-history", "{nan.json}"], "not valid JSON"),
    (["report", "--opacus-history", "{steps.json}"], "steps must be an integer"),
    (["report", "--opacus-history", "{sigma.json}"], "noise_multiplier must be a finite number > 0"),
    (["report", "--opacus-history", "{empty.json}"], "history is empty"),
    (["report", "--opacus-history", "{dict.json}"], "\"history\" key"),
    (["report", "--event", "{laplace.json}"], "unknown event class"),
    (["report", "--event", "{extra_field.json}"], "unknown ['eval']"),
    (["report", "--event", "{count.json}"], "count must be an integer"),
    (["report", "--event", "{deep.json}"], "nested deeper than 64"),
    (["report", "--event", "{noop.json}"], "no Gaussian steps"),
    (["report", "--audit", "{audit_garbage.json}"], "missing \"settings\""),
    (["report", "--audit", "{audit_noheader.jsonl}"], "not valid JSON"),
    (["report", "--audit", "{audit_notrials.jsonl}"], "holds no finished trial"),
    (["report", "--audit", "{audit_success.json}"], "is not a count out of trials"),
    (["report", "--audit", "{audit_nonoise.json}"], "without noise"),
    (["report", "--audit", "{audit_attack.json}"], "attack name"),
    (["report", *SETTINGS, "--audit", "{audit_notrials.jsonl}"], "holds no finished trial"),
    (["report", "--noise-multiplier", "2", "--sample-rate", "1", "--steps", "100", "--audit", "{audit}"],
     "not the report's settings"),
    (["report", *SETTINGS, "--html", "{f}"], "html must be a file path"),
    (["report", *SETTINGS, "--png", "{garbage.json}"], "png must be a folder"),
]


@pytest.mark.parametrize("argv,needle", BAD, ids=[f"{i}-{n[:24]}" for i, (_, n) in enumerate(BAD)])
def test_bad_input_is_one_line_naming_the_problem(cli, bad_files, audit_files, argv, needle):
    folder = os.path.dirname(next(iter(bad_files.values())))
    subs = {"f": folder, "audit": audit_files[1], **bad_files}
    args = []
    for a in argv:
        for k, v in subs.items():
            a = a.replace("{" + k + "}", v)
        args.append(a)
    line = cli.error(*args)  # exit code 2, one 'error: ...' line, no traceback
    assert needle in line, line
    for flag in ("--opacus-history", "--event", "--audit"):  # file errors name the file
        if flag in args and needle not in ("give the run once",):
            assert os.path.basename(args[args.index(flag) + 1]) in line or "missing" in needle


# --------------------------------------------------------------------------- escaping, imports


def test_user_strings_are_escaped_in_the_html(cli, tmp_path, fx):
    name = 'h<script>alert("x")</script>\'q.json'.replace("/", "_")  # no '/' in a file name
    h = tmp_path / name
    h.write_text(json.dumps(fx.HISTORY))
    label = '<script>alert("label")</script> & "quotes" \'single\''
    out = tmp_path / "card.html"
    d = cli.json("report", "--opacus-history", h, "--label", label, "--no-what-if", "--html", out)
    text = out.read_text(encoding="utf-8")
    assert "<script" not in text.lower()  # neither ours (none) nor the user's
    assert html_escape(label) in text and html_escape(os.path.basename(str(h))) in text
    assert d["label"] == label  # the JSON keeps the raw string


def html_escape(s: str) -> str:
    import html

    return html.escape(s, quote=True)


def test_settings_only_report_and_audit_json_import_no_torch_no_matplotlib(audit_files, tmp_path):
    # the fast paths: settings only, and reading an audit's JSON / JSON lines (no training)
    code = (
        "import sys, io, contextlib; from rerokit.cli import main\n"
        "for argv in (['report', '--noise-multiplier', '1', '--sample-rate', '0.01', '--steps', '100', '--json'],\n"
        f"             ['report', '--audit', {audit_files[0]!r}, '--json', '--no-what-if'],\n"
        f"             ['report', '--audit', {audit_files[1]!r}, '--json', '--no-what-if']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main(argv) == 0\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'matplotlib', 'opacus'}))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
