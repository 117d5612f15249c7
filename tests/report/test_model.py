"""The report's typed sections (:mod:`rerokit.report.model`): built once, one JSON writer, read back.

``build_report`` returns typed sections (``Report.sections``); ``to_dict`` writes the JSON of
``rerokit report --json`` and ``ReportData.from_dict`` reads it back to equal objects, so the
renderers (which read attributes) give the same output from the object and from its printed dict.
Absent sections are None, sections not computed are ``Skipped``, and the audit is one of three
types (count of successes, mean of probabilities, one training run).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from rerokit.report import DataDescription, build_report
from rerokit.report.build import key_numbers, report_summary, tiles, verdict_sentences, what_if_table
from rerokit.report.model import (
    BinomialAudit, DiscretePriorRow, GuoSection, MeanAudit, PixelToleranceRow, ReportData, Skipped, UninformedSection,
    WhatIfSection, as_report_data,
)


@pytest.fixture(scope="module")
def plain_report():
    return build_report(noise_multiplier=1.0, sample_rate=0.01, steps=100, what_if=False)


@pytest.fixture(scope="module")
def full_report():
    return build_report(noise_multiplier=1.0, sample_rate=0.05, steps=40, what_if=True,
                        data=DataDescription(data_shape=(8, 8), clip=1.0, diameter=1.0, dataset_size=200))


def test_sections_are_typed_and_frozen(full_report):
    d = full_report.sections
    assert isinstance(d, ReportData)
    assert isinstance(d.informed["prior_10"], DiscretePriorRow)
    assert isinstance(d.informed["pixel_tolerance"], PixelToleranceRow) and d.pixel_tolerance is not None
    assert isinstance(d.uninformed, UninformedSection) and isinstance(d.guo_mse, GuoSection)
    assert isinstance(d.what_would_change, WhatIfSection) and d.what_would_change.targets
    assert d.audit is None and d.informed_mse is not None
    assert d.membership.tpr_at(0.01).tpr == d.membership.tpr_at_fpr[1].tpr
    assert d.verdict and d.verdict[0].threat_model == "level"
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.epsilon = 0.0  # type: ignore[misc]


def test_absent_and_skipped_sections(plain_report):
    d = plain_report.sections
    assert isinstance(d.uninformed, Skipped) and "--data-shape" in d.uninformed.skipped
    assert isinstance(d.guo_mse, Skipped) and isinstance(d.what_would_change, Skipped)
    assert d.pixel_tolerance is None and d.informed_mse is None and d.audit is None
    assert d.poisson_assumption is None and d.declared_guarantee is None
    j = plain_report.to_dict()
    # left out of the JSON when absent (keys present only in some reports), null where the schema says so
    assert "informed_mse" not in j and "poisson_assumption" not in j and j["audit"] is None
    assert j["uninformed"] == {"skipped": d.uninformed.skipped}


@pytest.mark.parametrize("name", ["plain_report", "full_report"])
def test_json_round_trip(name, request):
    rep = request.getfixturevalue(name)
    j = rep.to_dict()
    back = ReportData.from_dict(j)
    assert back == rep.sections
    assert json.dumps(back.to_dict()) == json.dumps(j)  # same keys, same order, same values
    assert rep.to_dict() is not rep.to_dict()  # a new dict each time: callers may change it


def test_renderers_read_the_object_and_its_dict_alike(full_report):
    d, j = full_report.sections, full_report.to_dict()
    assert verdict_sentences(d) == verdict_sentences(j)
    assert tiles(d) == tiles(j)
    assert key_numbers(d) == key_numbers(j) == dict(d.key_numbers)
    assert report_summary(d) == report_summary({**j, "written": {"html": "x.html"}})  # extra keys ignored
    assert what_if_table(d) == what_if_table(j)


def test_as_report_data_refuses_other_types():
    with pytest.raises(TypeError, match="ReportData"):
        as_report_data([1, 2])


def test_audit_types(audit_files, fx):
    rep = build_report(audit=audit_files[1], what_if=False)
    au = rep.sections.audit
    assert isinstance(au, BinomialAudit) and au.successes == fx.AUDIT_SUCCESSES
    assert au.lower_bounds.epsilon_lower >= 0 and au.certified_epsilon_delta == rep.sections.delta
    assert ReportData.from_dict(rep.to_dict()) == rep.sections


GRADIENT_HEADER = {
    "noise_multiplier": 2.417551391415801, "dataset": "digits", "data_path": None, "prior_size": 10, "n_known": 999,
    "steps": 5, "sample_rate": 1.0, "clip": 0.1, "lr": 10.0, "model": "mlp", "hidden": [10], "activation": "elu",
    "prior_weights": None, "seed": 0, "attack": "gradient", "iterations": 200, "restarts": 2, "attack_lr": 0.05,
    "prior_sizes": [10], "chunk_size": 8, "device": "cpu", "epsilon": 4.0, "delta": 1e-05, "sampler": "full_batch",
}
"""The header 'rerokit audit gradient --trials 3 --steps 5 --epsilon 4 --out FILE' writes."""


def test_mean_audit_has_no_lower_bounds(tmp_path):
    from rerokit.seeding import trial_seeds

    p = tmp_path / "grad.jsonl"
    lines = [{"kind": "header", "schema_version": 1, "settings": GRADIENT_HEADER}]
    for i, (seed, ps) in enumerate(zip(trial_seeds(0, 3), (4.7e-05, 0.65, 1.2e-10))):
        lines.append({"kind": "trial", "trial": i, "seed": seed, "target_index": 10 + i, "mse": 0.25,
                      "objective": 22000.0, "prior_success": {"10": ps}})
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rep = build_report(audit=str(p), what_if=False)
    au = rep.sections.audit
    assert isinstance(au, MeanAudit) and au.successes is None and au.lower_bounds is None
    j = rep.to_dict()["audit"]
    assert j["lower_bounds"] is None and "lower_bounds_note" in j and "certified_epsilon" not in j
    assert ReportData.from_dict(rep.to_dict()) == rep.sections
    assert any(r.method == "Student-t on the mean" for r in report_summary(rep.sections).rows)
