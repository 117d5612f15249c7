"""``rerokit report --model-card FILE``: a Privacy section (facts, verdict, numbers) with YAML metadata."""

from __future__ import annotations

import json
import sys

import pytest

SETTINGS = ["--noise-multiplier", 1, "--sample-rate", 0.01, "--steps", 1000]


def _check_section(text: str, d: dict) -> None:
    assert text.count("## Privacy") == 1
    for v in d["verdict"]:
        assert v["text"] in text  # the verdict, line for line
    assert "| \u03b3, prior of 10 (\u03ba = 0.1) | \u2264 0.1942 |" in text  # the numbers table
    assert "Poisson subsampling" in text and "add-or-remove" in text  # the facts


def test_new_card_through_huggingface_hub(cli, tmp_path):
    hub = pytest.importorskip("huggingface_hub", reason="needs huggingface_hub (integrations extra)")
    p = tmp_path / "README.md"
    d = cli.json("report", *SETTINGS, "--model-card", p)
    assert d["written"]["model_card"] == str(p)
    card = hub.ModelCard.load(p)
    meta = card.data.privacy
    assert meta["epsilon"] == d["epsilon"] and meta["delta"] == d["delta"] and meta["level"] == d["level"]["name"]
    assert meta["reconstruction_gamma"]["prior_10"]["gamma"] == d["informed"]["prior_10"]["gamma"]
    assert meta["membership_tpr_at_fpr"] == [{"fpr": q["fpr"], "tpr": q["tpr"]} for q in d["membership"]["tpr_at_fpr"]]
    assert "differential-privacy" in card.data.tags
    _check_section(card.text, d)


def test_existing_card_keeps_its_metadata_and_text_and_replaces_its_privacy_section(cli, tmp_path):
    hub = pytest.importorskip("huggingface_hub", reason="needs huggingface_hub (integrations extra)")
    p = tmp_path / "README.md"
    p.write_text("---\nlicense: mit\ntags:\n- vision\n---\n\n# My model\n\n## Privacy\n\nold words\n\n## Usage\n\nrun it\n")
    d = cli.json("report", *SETTINGS, "--model-card", p)
    cli.json("report", *SETTINGS, "--model-card", p)  # twice: still one section
    card = hub.ModelCard.load(p)
    assert card.data.license == "mit" and card.data.tags == ["vision", "differential-privacy"]
    text = card.text
    assert "old words" not in text and "# My model" in text and text.rstrip().endswith("run it")
    assert text.index("## Privacy") < text.index("## Usage")
    _check_section(text, d)


def test_plain_markdown_without_huggingface_hub(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails as if not installed
    p = tmp_path / "card.md"
    d = cli.json("report", *SETTINGS, "--model-card", p)
    text = p.read_text(encoding="utf-8")
    head, body = text.split("\n---\n", 1)
    assert head.startswith("---\ntags: ")
    meta = json.loads(head.split("privacy: ", 1)[1])  # YAML flow mapping = JSON
    assert meta["epsilon"] == d["epsilon"] and meta["steps"] == 1000 and meta["sampler"] == "poisson"
    _check_section(body, d)
    cli.json("report", *SETTINGS, "--model-card", p)  # its own output can be updated again
    other = tmp_path / "other.md"
    other.write_text("---\nlicense: mit\n---\n# x\n")
    err = cli.error("report", *SETTINGS, "--model-card", other)
    assert "huggingface_hub" in err  # never silently drops metadata it cannot parse


def test_model_card_path_is_checked_before_any_work(cli, tmp_path):
    err = cli.error("report", *SETTINGS, "--model-card", tmp_path)
    assert "model-card" in err and "directory" in err
