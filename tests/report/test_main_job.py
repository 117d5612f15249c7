"""The README's main job (audit --out, then report --audit) prints each number once, and the
training callbacks' ``card="README.md"`` writes a model card's Privacy section."""

from __future__ import annotations

import re

import pytest

from rerokit.report.format import fmt_bracket

pytest.importorskip("torch", reason="the audit trains models (torch extra)")


def test_audit_with_out_prints_one_pointer_and_the_report_prints_the_numbers(cli, tmp_path):
    out = tmp_path / "audit.jsonl"
    code, text, _ = cli.run("audit", "prior-aware", "--epsilon", 4, "--trials", 6, "--seed", 1, "--steps", 5,
                            "--n-known", 29, "--no-progress", "--out", out)
    assert code == 0
    flat = " ".join(text.split())
    assert text.startswith("\u2022 Audit: 6 trials written to") and text.count("\u2022") == 1
    assert "Quantity" not in text and f"rerokit report --audit {out}" in flat
    assert not re.search(r"\b0\.\d", flat.replace(str(out), ""))  # no result number here: the report prints them
    code, rep, _ = cli.run("report", "--audit", out)
    assert code == 0
    d = cli.json("report", "--audit", out)
    assert rep.count(fmt_bracket(d["audit"]["interval"], 4)) == 1  # the measured interval, once (the table)
    assert rep.count("Audit:") == 1


def test_monitor_writes_a_model_card_for_a_md_path(tmp_path):
    from rerokit.integrations._monitor import RiskMonitor

    m = RiskMonitor(noise_multiplier=1.0, sample_rate=0.01, prior=10, card=tmp_path / "README.md")
    s = m.finish(100)
    text = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert s["card"] == str(tmp_path / "README.md") and "## Privacy" in text and "privacy:" in text
