"""The HTML card in headless Chromium: not blank, no console errors, nothing requested beyond the
file itself, the JSON's numbers in the DOM (``data-key``), user strings shown literally, light and
dark, printable.

Needs playwright (``pip install playwright``; the browser is the system's chromium, e.g.
``apt-get install chromium``, never downloaded). Without either the tests skip, saying why.
"""

from __future__ import annotations

import json
import math
import os
import shutil

import pytest

from rerokit.report.format import fmt, fmt_log10


def _chromium() -> str:
    for p in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
              shutil.which("chromium-browser")):
        if p and os.path.exists(p):
            return p
    pytest.skip("no chromium found (set CHROMIUM or install it with apt-get install chromium): HTML card not rendered")


LABEL = '<script>alert("label")</script> & "quotes" \'single\''


@pytest.fixture(scope="module")
def card(tmp_path_factory, audit_files):
    """(html path, the report's JSON) for a run read from a history file with a hostile name, with a
    hostile label, data description, Guo's diameter and the audit (every section of the card)."""
    from rerokit.report import DataDescription, ReportSettings, build_report
    from rerokit.report.inputs import load_history

    d = tmp_path_factory.mktemp("card")
    name = 'h<script>alert("x")</script>\'q.json'.replace("/", "_")
    h = d / name
    sigma = 10.811618500608592  # the audit's (conftest): sigma for epsilon = 4 at q = 1, T = 100
    h.write_text(json.dumps([[sigma, 1.0, 60], [sigma, 1.0, 40]]))  # merged: one segment, the audited run
    rep = build_report(load_history(h), settings=ReportSettings(source=f"opacus history {name}", label=LABEL),
                       data=DataDescription(data_shape="1x8x8", diameter=1.0, dataset_size=1000),
                       audit=audit_files[1])
    path = d / "card.html"
    rep.write_html(path)
    return str(path), rep.to_dict(), name


@pytest.fixture(scope="module")
def page_data(card):
    """Load the card once in headless Chromium (light), collect everything the tests check."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    exe = _chromium()
    path, d, name = card
    out: dict = {"console": [], "requests": [], "errors": []}
    with sync_api.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        except Exception as exc:  # pragma: no cover - broken local browser
            pytest.skip(f"chromium at {exe} does not start under playwright: {exc}")
        try:
            for scheme in ("light", "dark"):
                page = browser.new_page(viewport={"width": 1200, "height": 900}, color_scheme=scheme)
                page.on("console", lambda m: out["console"].append((m.type, m.text)))
                page.on("pageerror", lambda e: out["errors"].append(str(e)))
                page.on("request", lambda r: out["requests"].append(r.url))
                page.goto("file://" + path)
                page.wait_for_load_state("load")
                out[f"shot_{scheme}"] = page.screenshot(full_page=True)
                out[f"bg_{scheme}"] = page.evaluate("getComputedStyle(document.body).backgroundColor")
                if scheme == "dark":
                    out["ink_dark"] = page.eval_on_selector_all(
                        "figure svg [style*=currentColor]", "els => els.slice(0, 3).map(e => "
                        "[getComputedStyle(e).fill, getComputedStyle(e).stroke])")
                    out["panel_dark"] = page.evaluate(
                        "getComputedStyle(document.querySelector('figure .panel')).backgroundColor")
                if scheme == "dark":  # printing from a dark-mode browser still gives black on white
                    page.emulate_media(media="print")
                    out["print_dark"] = page.evaluate(
                        "[getComputedStyle(document.querySelector('main')).backgroundColor, "
                        "getComputedStyle(document.querySelector('main')).color]")
                if scheme == "light":
                    out["keys"] = page.eval_on_selector_all(
                        "[data-key]", "els => els.map(e => [e.dataset.key, e.dataset.value, e.dataset.log10 || null, "
                        "e.textContent])")
                    out["verdict"] = page.eval_on_selector_all(
                        "ul.verdict li", "els => els.map(e => [e.dataset.threat, e.textContent])")
                    out["scripts"] = page.eval_on_selector_all("script", "els => els.length")
                    out["h1"] = page.inner_text("h1")
                    out["source"] = page.inner_text(".source")
                    out["svgs"] = page.eval_on_selector_all(
                        "figure svg", "els => els.map(e => [e.getBoundingClientRect().width, "
                        "e.getBoundingClientRect().height, e.viewBox.baseVal.width])")
                    page.emulate_media(media="print")
                    out["pdf"] = page.pdf(format="A4")
                page.close()
            for scheme in ("light", "dark"):  # a 390 px phone
                page = browser.new_page(viewport={"width": 390, "height": 844}, color_scheme=scheme,
                                        device_scale_factor=2, is_mobile=True, has_touch=True)
                page.on("console", lambda m: out["console"].append((m.type, m.text)))
                page.goto("file://" + path)
                page.wait_for_load_state("load")
                out[f"phone_{scheme}"] = page.evaluate(
                    "[document.documentElement.scrollWidth, window.innerWidth, "
                    "Math.max(...Array.from(document.querySelectorAll('.table-scroll'), e => e.scrollWidth - "
                    "e.clientWidth)), Array.from(document.querySelectorAll('main *')).filter(e => "
                    "!e.closest('.table-scroll') && e.getBoundingClientRect().right > window.innerWidth + 0.5)"
                    ".map(e => e.tagName + '.' + e.className).slice(0, 5)]")
                page.close()
        finally:
            browser.close()
    return out


def _variance(png: bytes) -> float:
    import io

    from PIL import Image

    import numpy as np

    return float(np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float).var())


def test_card_is_not_blank_in_light_and_dark(page_data):
    pytest.importorskip("PIL", reason="Pillow measures the screenshot's pixel variance")
    for scheme in ("light", "dark"):
        v = _variance(page_data[f"shot_{scheme}"])
        assert v > 200.0, (scheme, v)  # a blank page has variance 0; this card has text, tables, figures
    assert page_data["bg_light"] != page_data["bg_dark"]  # prefers-color-scheme switches the palette


def test_no_console_errors_and_nothing_leaves_the_file(page_data, card):
    assert not page_data["errors"]
    assert not [m for m in page_data["console"] if m[0] in ("error", "warning")], page_data["console"]
    assert page_data["requests"], "the page itself is requested"
    bad = [u for u in page_data["requests"] if not u.startswith(("file:", "data:"))]
    assert not bad, bad
    # and the file names no external resource at all
    text = open(card[0], encoding="utf-8").read()
    assert "http://" not in text.replace("http://www.w3.org/", "") and "https://" not in text
    assert "@import" not in text and "<link" not in text and "<img" not in text


def test_figures_are_inline_svgs_that_scale(page_data, card):
    from rerokit.report.figures import CARD_FONT_PX, FONT_PT

    d = card[1]
    n_fig = 5  # gamma_vs_kappa, over_steps, tradeoff, uninformed_mse_cdf, audit
    assert len(page_data["svgs"]) == n_fig
    for w, h, vb in page_data["svgs"]:
        assert w > 300 and h > 150
        # one text size: every figure shows its FONT_PT-point text at CARD_FONT_PX pixels (same scale)
        assert w / vb == pytest.approx(CARD_FONT_PX / FONT_PT, rel=0.01)
    assert d["audit"] is not None and not d["uninformed"].get("skipped")


def test_every_data_key_shows_the_json_number(page_data, card):
    d = card[1]
    kn = d["key_numbers"]
    seen = {}
    for key, value, log10, text in page_data["keys"]:
        assert key in kn, key
        assert value == repr(kn[key]), key  # data-value: the JSON value, repr (every digit)
        # text: the documented precision (report.format: 4 significant digits; log10 form when it underflows)
        want = fmt_log10(float(log10)) if log10 is not None and (kn[key] == 0 or abs(kn[key]) < 1e-300) else fmt(kn[key])
        assert text == want, (key, text, want)
        if log10 is None and kn[key] != 0 and math.isfinite(kn[key]):
            assert float(text) == pytest.approx(kn[key], rel=5e-4)  # 4 significant digits: half a unit in the 4th
        seen[key] = text
    for key in ("gamma_prior_2", "gamma_prior_10", "gamma_prior_100", "kappa_prior_10", "gamma_pixel_tolerance",
                "epsilon", "mu_gdp", "membership_tpr_at_fpr_0p01", "membership_advantage",
                "uninformed_p_mse_over_steps", "uninformed_p_mse_one_release", "uninformed_expected_mse",
                "uninformed_ncc", "guo_mse_lower_bound", "audit_success", "audit_gamma", "audit_epsilon_lower",
                "audit_mu_lower", "noise_multiplier_for_gamma_0p2", "steps_for_gamma_0p2"):
        assert key in seen, key


def test_each_threat_models_verdict_is_the_jsons(page_data, card):
    d = card[1]
    got = [(t, " ".join(txt.split())) for t, txt in page_data["verdict"]]
    want = [(v["threat_model"], " ".join(v["text"].split())) for v in d["verdict"]]
    assert got == want
    assert [t for t, _ in got] == ["level", "informed", "pixel_tolerance", "membership", "uninformed", "informed_mse",
                                   "guo_mse", "audit"]


def test_user_strings_are_shown_literally_and_never_run(page_data, card):
    assert page_data["scripts"] == 0  # the label and the file name made no <script> element
    assert page_data["h1"] == LABEL  # shown as text, quotes and all
    assert page_data["source"] == f"opacus history {card[2]}"


def test_figures_follow_dark_mode(page_data):
    # the ink of the figures is the page's text colour (light on dark), their panel the card's dark colour
    assert page_data["ink_dark"]
    light = "rgb(230, 233, 238)"  # --fg of the dark palette
    for fill, stroke in page_data["ink_dark"]:
        assert light in (fill, stroke), (fill, stroke)
    assert page_data["panel_dark"] == "rgb(27, 33, 41)"  # --card of the dark palette, not a white block


def test_no_horizontal_page_scroll_on_a_390px_phone(page_data):
    for scheme in ("light", "dark"):
        scroll_w, inner_w, table_overflow, sticking_out = page_data[f"phone_{scheme}"]
        assert scroll_w <= inner_w, (scheme, scroll_w, inner_w, sticking_out)
        assert not sticking_out, sticking_out
        assert table_overflow > 0  # the wide table scrolls inside its own box instead


def test_card_prints_to_pdf(page_data):
    assert page_data["print_dark"] == ["rgb(255, 255, 255)", "rgb(0, 0, 0)"]
    pdf = page_data["pdf"]
    assert pdf[:5] == b"%PDF-" and len(pdf) > 20_000
