"""rerokit.report: one report of every risk of a DP-SGD run - terminal, JSON, HTML card, PNG + CSV.

::

    from rerokit.report import DataDescription, ReportSettings, build_report
    rep = build_report(noise_multiplier=1.0, sample_rate=0.01, steps=1000,
                       data=DataDescription(data_shape="1x28x28", clip=1.0),
                       settings=ReportSettings(label="mnist-cnn"))
    rep.render_terminal()            # verdict in plain words, then the table (rich)
    rep.to_dict()                    # what `rerokit report --json` prints
    rep.write_html("card.html")      # self-contained card: inline CSS + SVG, no scripts, offline
    rep.write_png("figures/")        # each figure as PNG with the CSV of its numbers

``rerokit.report.terminal.render`` is the one terminal renderer every CLI command uses.
Sub-modules: :mod:`~rerokit.report.build`, :mod:`~rerokit.report.inputs` (history / event /
audit files), :mod:`~rerokit.report.terminal`, :mod:`~rerokit.report.html`,
:mod:`~rerokit.report.figures`, :mod:`~rerokit.report.format`. Imports are lazy: matplotlib
only for the HTML card and the PNGs, rich only when printing, torch never.
"""

from __future__ import annotations

from rerokit import _lazy

_EXPORTS = {
    "build_report": "rerokit.report.build",
    "Report": "rerokit.report.build",
    "report_summary": "rerokit.report.build",
    "DataDescription": "rerokit.report.settings",
    "ReportSettings": "rerokit.report.settings",
    "render": "rerokit.report.terminal",
    "Row": "rerokit.report.terminal",
    "Summary": "rerokit.report.terminal",
    "AuditSummary": "rerokit.report.inputs",
    "load_audit": "rerokit.report.inputs",
    "load_history": "rerokit.report.inputs",
    "load_event": "rerokit.report.inputs",
    "event_from_json": "rerokit.report.inputs",
    "write_model_card": "rerokit.report.model_card",
    "privacy_level": "rerokit.report.glossary",
}

__all__ = list(_EXPORTS)


__getattr__ = _lazy.lazy_getattr(globals(), _EXPORTS)
