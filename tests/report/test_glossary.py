"""The level (tiers of Ponomareva et al. 2023) and the glossary of the report."""

from __future__ import annotations

import math

import pytest

from rerokit.report.glossary import GLOSSARY, REFERENCES, SHORT, glossary_for, privacy_level


@pytest.mark.parametrize("eps, name, tier", [(0.0, "strong", 1), (1.0, "strong", 1), (1.0001, "reasonable", 2),
                                             (10.0, "reasonable", 2), (10.5, "weak", 3), (math.inf, "weak", 3)])
def test_level_tiers_and_their_provenance(eps, name, tier):
    lv = privacy_level(eps, 1e-5)
    assert (lv.name, lv.tier) == (name, tier)
    assert "Ponomareva et al. 2023" in lv.basis and "\u03b5 \u2264 1 strong" in lv.basis
    assert all(r in REFERENCES for r in lv.to_dict()["references"])


def test_glossary_keeps_what_occurs_and_single_letters_only_as_words():
    got = dict(glossary_for(["TPR at FPR 1% \u2264 0.02 (PLD)", "steps T = 100"]))
    assert set(got) == {"T", "TPR", "FPR", "PLD"}  # "T" as a word; not from inside "TPR"
    assert not glossary_for(["nothing here"])


def test_every_symbol_has_a_short_gloss_and_every_reference_a_year():
    assert {k for k, _ in GLOSSARY} == set(SHORT)
    for v in REFERENCES.values():
        assert "(20" in v  # authors (year). Title.
