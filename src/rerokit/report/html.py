"""The HTML card: one self-contained file - inline CSS and inline SVG, no scripts, nothing fetched.

Layout: header (label, run, source), key numbers, the verdict (one sentence per threat model),
every number with its bracket / interval, method and kind, "what would change it", the figures
(:mod:`rerokit.report.figures`), the threat models in plain words, the inputs.

Guarantees (tested in headless Chromium):

* Nothing leaves the file: no ``<script>``, no external stylesheet, font, image or link; a
  ``Content-Security-Policy`` meta tag (``default-src 'none'``) forbids any request even if a
  browser extension injected one. Figures are inline ``<svg>`` with text drawn as paths.
* Every user-provided string (label, file names, anything read from input files) passes
  ``html.escape``; so does every other text, constant or not.
* Key numbers carry ``data-key`` (the key of ``key_numbers`` in ``rerokit report --json``),
  ``data-value`` (the JSON value, ``repr``) and, for numbers that underflow, ``data-log10``; the
  text shown is that value with the documented precision of :mod:`rerokit.report.format`.
* Light and dark (``prefers-color-scheme``): the figures' ink is ``currentColor`` and their
  backgrounds the card's colour, so they follow the page; every figure text has one size
  (:data:`rerokit.report.figures.FONT_PT`, shown at the same pixel size in every figure).
* Any width down to a 390 px phone without page-level horizontal scrolling: tables scroll in
  their own box, long words wrap, figures scale down.
* ``@media print`` for a clean PDF (no backgrounds, no page break inside a figure or table row).
"""

from __future__ import annotations

import datetime as _dt
import html
from typing import Any

from rerokit.report.format import Lead, Num, Sentence, fmt
from rerokit.report.model import ReportData, Skipped

__all__ = ["render_html", "CSS"]

CSS = """
:root { color-scheme: light dark; --bg: #f4f5f7; --card: #ffffff; --fg: #1c2430; --muted: #5b6675;
  --line: #d9dde3; --accent: #0b5cad; --num: #0b4f96; --ok-bg: #e3f4ea; --ok-fg: #16603a;
  --est-bg: #fff1d6; --est-fg: #7a4b00; --emp-bg: #efe5f7; --emp-fg: #5d2a85; --warn: #a4262c;
  --tile: #f7f9fc; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #12161c; --card: #1b2129; --fg: #e6e9ee; --muted: #a3adba; --line: #333c48;
    --accent: #6cb4ff; --num: #8cc8ff; --ok-bg: #163526; --ok-fg: #8fe0b0; --est-bg: #3d2f12;
    --est-fg: #ffd38a; --emp-bg: #33233f; --emp-fg: #dcb8f5; --warn: #ff8a8f; --tile: #222a34; }
}
* { box-sizing: border-box; }
html { background: var(--bg); }
body { margin: 0; padding: 24px 12px; color: var(--fg); background: var(--bg); overflow-wrap: break-word;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1080px; margin: 0 auto; background: var(--card); border: 1px solid var(--line);
  border-radius: 12px; padding: 28px 32px; }
h1 { font-size: 1.6rem; margin: 0.1rem 0 0.3rem; line-height: 1.25; }
h2 { font-size: 1.15rem; margin: 2rem 0 0.6rem; padding-bottom: 0.25rem; border-bottom: 1px solid var(--line); }
.eyebrow { color: var(--muted); font-size: 0.85rem; margin: 0; text-transform: uppercase; letter-spacing: 0.04em; }
.run { color: var(--muted); margin: 0.2rem 0 0; }
.num { font-variant-numeric: tabular-nums; font-weight: 600; color: var(--num); white-space: nowrap; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; margin-top: 1.2rem; }
.tile { background: var(--tile); border: 1px solid var(--line); border-radius: 10px; padding: 10px 12px; }
.tile .label { color: var(--muted); font-size: 0.8rem; line-height: 1.3; }
.tile .big { font-size: 1.45rem; margin-top: 2px; }
.tile .sub { color: var(--muted); font-size: 0.78rem; }
ul.verdict { padding-left: 1.1rem; margin: 0; }
ul.verdict li { margin: 0.45rem 0; }
ul.verdict li .tm { font-weight: 700; }
.table-scroll { max-width: 100%; overflow-x: auto; }
table.numbers td:first-child { min-width: 11rem; }
table { width: 100%; border-collapse: collapse; font-size: 0.9rem; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { font-size: 0.82rem; color: var(--muted); font-weight: 600; }
tr.section th { padding-top: 14px; font-size: 0.92rem; border-bottom: 2px solid var(--line); }
td.value { white-space: nowrap; }
td.detail { font-variant-numeric: tabular-nums; color: var(--muted); white-space: nowrap; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 0.76rem; font-weight: 600;
  white-space: nowrap; }
.badge.certified { background: var(--ok-bg); color: var(--ok-fg); }
.badge.estimate { background: var(--est-bg); color: var(--est-fg); }
.badge.empirical { background: var(--emp-bg); color: var(--emp-fg); }
.figs { display: grid; grid-template-columns: minmax(0, 1fr); gap: 18px; }
figure { margin: 0; min-width: 0; }
figure.wide { grid-column: 1 / -1; }
.panel { background: var(--card); color: var(--fg); border: 1px solid var(--line); border-radius: 10px; padding: 6px; }
.panel svg { display: block; margin: 0 auto; }
figcaption { font-size: 0.85rem; color: var(--muted); margin-top: 6px; }
figcaption b { color: var(--fg); }
.notes li { margin: 0.3rem 0; }
.warn { color: var(--warn); font-weight: 600; }
dl.inputs { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; font-size: 0.88rem; margin: 0; }
dl.inputs dt { color: var(--muted); }
dl.inputs dd { margin: 0; overflow-wrap: anywhere; min-width: 0; }
dl.glossary dt { font-weight: 700; }
ol.refs { font-size: 0.85rem; padding-left: 1.3rem; }
code { overflow-wrap: anywhere; }
footer { margin-top: 2rem; color: var(--muted); font-size: 0.8rem; }
@media (max-width: 640px) { body { padding: 8px 4px; } main { padding: 16px 12px; } .figs { grid-template-columns: 1fr; }
  dl.inputs { grid-template-columns: 1fr; } dl.inputs dd { margin-bottom: 6px; } }
@media print {
  :root { color-scheme: light; --bg: #fff; --card: #fff; --fg: #000; --muted: #444; --accent: #000; --num: #000;
    --line: #bbb; --tile: #fff; --ok-bg: #fff; --ok-fg: #000; --est-bg: #fff; --est-fg: #000; --emp-bg: #fff;
    --emp-fg: #000; --warn: #000; }
  html, body, main { background: #fff !important; color: #000 !important; }
  body { padding: 0; font-size: 11pt; }
  main { border: none; border-radius: 0; padding: 0; max-width: none; }
  .badge { border: 1px solid #888; }
  h2 { break-after: avoid; }
  figure, tr, .tile, ul.verdict li { break-inside: avoid; }
  .figs { display: block; }
  figure { margin-bottom: 14pt; }
  .panel { border: none; padding: 0; }
}
"""


def _e(s: Any) -> str:
    return html.escape("" if s is None else str(s), quote=True)


def _num_html(n: Num) -> str:
    if not n.key:
        return f'<span class="num">{_e(n.text)}</span>'
    attrs = f' data-key="{_e(n.key)}" data-value="{_e(repr(n.value))}" title="{_e(repr(n.value))}"'
    if n.log10 is not None:
        attrs += f' data-log10="{_e(repr(n.log10))}"'
    return f'<span class="num"{attrs}>{_e(n.text)}</span>'


def _sentence_html(s: Sentence | str | Num) -> str:
    if isinstance(s, Num):
        return _num_html(s)
    if isinstance(s, str):
        return _e(s)
    return "".join(_num_html(p) if isinstance(p, Num) else f"<strong>{_e(p)}</strong>" if isinstance(p, Lead) else _e(p)
                   for p in s)


def _badge(status: str) -> str:
    kind = ("certified" if status.startswith(("certified", "exact")) else
            "empirical" if status.startswith("empirical") else "estimate")
    return f'<span class="badge {kind}">{_e(status)}</span>'


def _tiles(d: ReportData) -> str:
    from rerokit.report.build import tiles

    out = ['<section class="tiles" aria-label="key numbers">']
    for label, big, sub in tiles(d):
        out.append(f'<div class="tile"><div class="label">{_e(label)}</div><div class="big">{_sentence_html(big)}</div>'
                   f'<div class="sub">{_sentence_html(sub)}</div></div>')
    out.append("</section>")
    return "\n".join(out)


def _rows_html(rows: Any) -> str:
    out = ['<div class="table-scroll" role="region" aria-label="every number" tabindex="0">'
           '<table class="numbers"><thead><tr><th scope="col">Quantity</th><th scope="col">Value</th>'
           '<th scope="col">Certified bracket / interval</th><th scope="col">Method</th><th scope="col">Kind</th>'
           "</tr></thead><tbody>"]
    for r in rows:
        if r.section:
            out.append(f'<tr class="section"><th colspan="5" scope="rowgroup">{_e(r.section)}</th></tr>')
        out.append(f'<tr><td>{_e(r.label)}</td><td class="value">{_sentence_html(r.value)}</td>'
                   f'<td class="detail">{_e(r.detail)}</td><td>{_e(r.method)}</td><td>{_badge(r.status)}</td></tr>')
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _table_html(t: Any) -> str:
    out = ['<div class="table-scroll" role="region" aria-label="what would change it" tabindex="0">'
           '<table class="what-if"><thead><tr>']
    out += [f'<th scope="col">{_e(c)}</th>' for c in t.columns]
    out.append("</tr></thead><tbody>")
    for r in t.rows:
        out.append("<tr>" + "".join(f"<td>{_sentence_html(x) if isinstance(x, (Num, tuple)) else _e(x)}</td>"
                                    for x in r) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _inputs(d: ReportData) -> str:
    st = d.settings
    items: list[tuple[str, str]] = []
    if st.schedule is not None:
        items.append(("schedule (\u03c3, q, T)", "; ".join(f"({fmt(s)}, {fmt(q)}, {t})" for s, q, t in st.schedule)))
    else:
        items += [("noise multiplier \u03c3", fmt(st.noise_multiplier)), ("sampling rate q", fmt(st.sample_rate)),
                  ("steps T", str(st.steps))]
    items.append(("source", str(st.source)))
    items.append(("\u03b4", fmt(d.delta)))
    dd = d.data
    if dd.shape:
        items.append(("data shape", "x".join(map(str, dd.shape)) + (f" ({dd.source})" if dd.source else "")))
    for v, lab in ((dd.dataset_size, "training records N"), (dd.expected_batch_size, "expected batch qN"),
                   (dd.epochs, "epochs Tq"), (dd.clip, "clipping norm C"), (dd.diameter, "diameter per coordinate")):
        if v is not None:
            items.append((lab, fmt(v)))
    au = d.audit
    if au is not None:
        items.append(("audit", f"{au.path or 'dict'} ({au.source}; dataset {au.dataset}, seed {au.seed})"))
    return ('<dl class="inputs">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items) + "</dl>")


_THREAT_TEXT = [
    ("Informed adversary (worst case)",
     "Knows every training record except the target, the training algorithm and a set of candidates the target was "
     "drawn from (the prior). Before seeing the model it guesses right with probability \u03ba; after seeing the "
     "model, or every gradient of training, with probability at most \u03b3 (Balle et al. 2022; Hayes et al. 2023, "
     "Thm 2). The bound holds against every attack."),
    ("Membership inference",
     "Decides whether a record was in the training set. Every test's true-positive rate at a given false-positive "
     "rate is bounded by the f-DP trade-off curve of the same mechanism (Kulynych et al. 2025)."),
    ("Uninformed gradient inversion",
     "No prior: a malicious server plants a linear layer and reads the input out of its gradient. Under DP-SGD the "
     "optimal unbiased such attack reconstructs X + N(0, \u03c3\u00b2\u2016X\u2016\u00b2 I), so its MSE has an "
     "exact law (Riess et al. 2024): an attack law, not a bound on every attacker - a constant guess or a shrunk estimate "
     "can do better. The law needs the smallest record norm r; without --min-norm the report assumes r \u2265 C. "
     "The certified statement is the informed bound for a continuous data prior at the same MSE threshold."),
    ("Released model, error view",
     "Guo et al. 2022, Thm 1: an unbiased attacker's mean squared error is at least a number computed from the "
     "replace-one (2, \u03b5)-RDP guarantee (the target swapped for another record: DP-SGD's sensitivity 2C) and "
     "the data's diameter."),
    ("Audits",
     "An audit trains models and attacks them; its measured success (exact Clopper-Pearson interval) must stay "
     "below \u03b3, and its one-sided lower end proves the mechanism is not \u03b5-DP / \u03bc-GDP for smaller "
     "parameters (Jagielski et al. 2020; Balle et al. 2022, Cor. 3). A one-run audit trains ONE model with m "
     "canary slots instead and guesses some of them: more correct guesses than the run's claimed trade-off curve "
     "allows reject that claim, and the count proves lower bounds on \u03b5 and \u03bc (Steinke et al. 2023; "
     "Mahloujifar et al. 2025)."),
]


def render_html(rep: Any) -> str:
    """The card of a :class:`~rerokit.report.build.Report` as one HTML document.

    Args:
      rep: the report.

    Returns:
      The HTML text (UTF-8; inline CSS and SVG; no scripts; no external resources).
    """
    from rerokit.report.build import report_summary, verdict_sentences
    from rerokit.report.facts import facts_html
    from rerokit.report.figures import figures, render_svg

    d: ReportData = rep.sections
    s = report_summary(d)
    title = d.label or d.title
    st = d.settings
    if st.schedule is not None:
        run = f"{len(st.schedule)} segments, {st.total_steps} steps"
    else:
        run = f"\u03c3 = {fmt(st.noise_multiplier)}, q = {fmt(st.sample_rate)}, T = {st.steps}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'\">",
        '<meta name="referrer" content="no-referrer">',
        f'<meta name="generator" content="rerokit {_e(d.rerokit_version)}">',
        f"<title>{_e(title)} \u2014 rerokit report</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        "<header>",
        f'<p class="eyebrow">rerokit {_e(d.rerokit_version)} \u00b7 reconstruction-risk report \u00b7 '
        f"{_e(_dt.date.today().isoformat())}</p>",
        f'<h1 id="title">{_e(title)}</h1>',
        f'<p class="run">DP-SGD, {_e(run)} \u00b7 source: <span class="source">{_e(st.source)}</span></p>',
        "</header>",
        facts_html(d.privacy_facts),
        _tiles(d),
        '<section><h2 id="verdict">Verdict</h2><ul class="verdict">',
    ]
    for tm, sent in verdict_sentences(d):
        parts.append(f'<li data-threat="{_e(tm)}">{_sentence_html(sent)}</li>')
    parts.append("</ul></section>")
    parts.append('<section><h2 id="numbers">Every number</h2>')
    parts.append(_rows_html(s.rows))
    parts.append('<p class="precision" style="font-size:0.8rem;color:var(--muted)">Values show 4 significant digits, '
                 "brackets 6 (rounded; the JSON of <code>rerokit report --json</code> has every digit). \u2264 / \u2265: "
                 "the value is a bound; certified brackets contain the exact value.</p></section>")
    for t in s.tables:
        parts.append(f'<section><h2 id="what-if">What would change it</h2><p>{_e(t.title)}</p>{_table_html(t)}</section>')
    wc = d.what_would_change
    if isinstance(wc, Skipped) and not wc.skipped.startswith("not requested"):
        parts.append(f'<section><h2 id="what-if">What would change it</h2><p>{_e(wc.skipped)}</p></section>')
    parts.append('<section><h2 id="figures">Figures</h2><div class="figs">')
    for i, fd in enumerate(figures(rep)):
        wide = ' class="wide"' if fd.size[0] > 7 else ""
        parts.append(f'<figure{wide} data-figure="{_e(fd.name)}"><div class="panel">{render_svg(fd, f"f{i}")}</div>'
                     f"<figcaption><b>{_e(fd.title)}.</b> {_e(fd.caption)}</figcaption></figure>")
    parts.append("</div></section>")
    if s.notes:
        parts.append('<section><h2 id="notes">Notes</h2><ul class="notes">'
                     + "".join(f'<li class="warn">{_e(n)}</li>' if "not below" in n else f"<li>{_e(n)}</li>"
                               for n in s.notes) + "</ul></section>")
    parts.append('<section><h2 id="threat-models">Threat models in plain words</h2><dl class="inputs">')
    parts += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in _THREAT_TEXT]
    parts.append("</dl></section>")
    if s.glossary:
        parts.append('<section><h2 id="glossary">Symbols</h2><dl class="inputs glossary">'
                     + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in s.glossary) + "</dl></section>")
    from rerokit.report.glossary import REFERENCES

    parts.append('<section><h2 id="references">References</h2><ol class="refs">'
                 + "".join(f"<li>{_e(v)}</li>" for v in REFERENCES.values()) + "</ol></section>")
    parts.append(f'<section><h2 id="inputs">Inputs</h2>{_inputs(d)}</section>')
    parts.append("<footer>Made by rerokit from the settings above; every number is recomputed by "
                 "<code>rerokit report --json</code> and equals what <code>rerokit bound dpsgd / tradeoff / uninformed "
                 "/ mse-rdp</code> print for the same settings. This file loads nothing from the network and runs "
                 "no scripts.</footer>")
    parts += ["</main>", "</body>", "</html>", ""]
    return "\n".join(parts)
