"""The audit as the report reads it and as each audit section shows it: one declaration of the
audited-run fields (:class:`rerokit.report.model.AuditRun`), copied by name, none lost.

The audit section used to list these 17 fields by hand (a field added to the reader and forgotten in
the list was silently missing from the report); it now copies :meth:`AuditRun.run_fields`. These
tests check the copy against the reader's own values and against the key list of the JSON written
before the change (``AUDIT_RUN_KEYS``, an independent statement of the format).
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from rerokit.report.build import build_report
from rerokit.report.inputs import AuditSummary, audit_from_dict, load_audit
from rerokit.report.model import AuditRun, BinomialAudit, MeanAudit

AUDIT_RUN_KEYS = ["attack", "successes", "trials", "success", "interval", "kappa", "noise_multiplier", "sample_rate",
                  "steps", "clip", "dataset", "target_epsilon", "delta", "seed", "source", "path", "sampler"]
"""The keys every audit section of ``rerokit report --json`` starts with, in order (schema version 2)."""


def _gradient_jsonl(tmp_path, fx) -> str:
    from rerokit.seeding import trial_seeds

    s = dict(fx.AUDIT_SETTINGS, attack="gradient", prior_sizes=[10])
    s.pop("attacks")
    p = tmp_path / "g.jsonl"
    seeds = trial_seeds(s["seed"], 3)
    with open(p, "w") as f:
        f.write(json.dumps({"kind": "header", "settings": s}) + "\n")
        for i, v in enumerate([0.1, 0.2, 0.6]):
            f.write(json.dumps({"kind": "trial", "trial": i, "seed": seeds[i], "target_index": i, "mse": 0.1,
                                "objective": 0.5, "prior_success": {"10": v}}) + "\n")
    return str(p)


def test_audit_run_fields_are_the_json_keys_in_order():
    assert [f.name for f in fields(AuditRun)] == AUDIT_RUN_KEYS
    # the report's input is an AuditRun with one more (optional) field, the one-run result
    assert [f.name for f in fields(AuditSummary)] == AUDIT_RUN_KEYS + ["one_run"]


def test_audit_summary_to_dict_is_unchanged(audit_files, fx):
    a = load_audit(audit_files[1])
    d = a.to_dict()
    assert list(d) == AUDIT_RUN_KEYS  # one_run left out when None
    assert d["interval"] == list(a.interval) and isinstance(d["interval"], list)
    assert (d["successes"], d["trials"], d["source"], d["sampler"]) == (fx.AUDIT_SUCCESSES, fx.AUDIT_TRIALS, "jsonl",
                                                                        None)
    assert AuditSummary.from_dict(d) == a  # the section machinery reads it back


@pytest.mark.parametrize("which", ["json", "jsonl", "gradient"])
def test_report_audit_section_carries_every_field_of_the_audit_read(which, audit_files, tmp_path, fx):
    path = {"json": audit_files[0], "jsonl": audit_files[1]}.get(which) or _gradient_jsonl(tmp_path, fx)
    a = load_audit(path)
    rep = build_report(audit=path, what_if=False)
    sec = rep.sections.audit
    assert isinstance(sec, MeanAudit if which == "gradient" else BinomialAudit)
    assert rep.audit == a
    for name in AUDIT_RUN_KEYS:
        assert getattr(sec, name) == getattr(a, name), name
    d = rep.to_dict()["audit"]
    assert list(d)[: len(AUDIT_RUN_KEYS)] == AUDIT_RUN_KEYS
    assert {k: d[k] for k in AUDIT_RUN_KEYS} == a.to_dict()


def test_audit_summary_is_keyword_only_and_frozen(audit_files):
    a = load_audit(audit_files[1])
    with pytest.raises(TypeError):
        AuditSummary(*[getattr(a, k) for k in AUDIT_RUN_KEYS])  # noqa: the fields are keyword-only
    with pytest.raises(AttributeError):
        a.trials = 3  # type: ignore[misc]


def test_gradient_audit_json_as_printed_is_read(tmp_path, fx):
    """'rerokit audit gradient --json' prints its primary result as "success" next to the MSE
    (AuditOutcome.to_dict); the report reads that as the mean success of the gradient audit, not as
    a count of 0/1 successes (which refused it: 0.25 is not a count out of 3 trials)."""
    s = dict(fx.AUDIT_SETTINGS, attack="gradient", prior_sizes=[10])
    s.pop("attacks")
    printed = {"mse": 0.1, "mse_ci_low": 0.05, "mse_ci_high": 0.2, "success": 0.3, "ci_low": 0.1, "ci_high": 0.5,
               "gamma": 0.36, "kappa": 0.1, "noise_multiplier": fx.AUDIT_SIGMA, "trials": 3, "seed": 0,
               "attacks": {"mse": {"metric": "mse", "value": 0.1, "ci_low": 0.05, "ci_high": 0.2},
                           "prior_success_10": {"metric": "success", "value": 0.3, "ci_low": 0.1, "ci_high": 0.5}},
               "epsilon": 4.0, "delta": 1e-5, "settings": s}
    a = audit_from_dict(printed)
    assert (a.attack, a.successes, a.trials, a.success, a.interval) == ("gradient", None, 3, 0.3, (0.1, 0.5))
    assert isinstance(build_report(audit=printed, what_if=False).sections.audit, MeanAudit)
    # a prior-aware success that is not a count is still refused
    with pytest.raises(ValueError, match="is not a count out of trials"):
        audit_from_dict(dict(fx.audit_json_dict(), success=0.2701))


def test_build_report_takes_the_audit_outcome(fx):
    from rerokit.experiments.audit_outcome import AuditOutcome

    o = AuditOutcome.from_dict(fx.audit_json_dict())
    assert build_report(audit=o, what_if=False).to_dict() == build_report(audit=fx.audit_json_dict(),
                                                                          what_if=False).to_dict()


def test_audit_verdict_reads_the_outcome_the_audit_wrote(fx):
    from rerokit.report.format import plain
    from rerokit.report.verdicts import VERDICTS, generic_summary, summary_for

    d = {k: v for k, v in fx.audit_json_dict().items() if k != "out"}
    s = summary_for("audit prior-aware", d)
    assert s == VERDICTS["audit prior-aware"](d)
    text = plain(s.verdict[0])
    assert "the alg2 attack on 200 DP-SGD models" in text and "rate 0.27 (95% CI" in text and "consistent" in text
    assert [r.label for r in s.rows][:3] == ["attack success (alg2)", "\u03b3: certified bound at \u03ba",
                                             "\u03ba: success of a blind guess"]
    # not the command's output (no settings): the generic summary, by the check, not a None in the verdict
    bad = {k: v for k, v in d.items() if k != "settings"}
    assert summary_for("audit prior-aware", bad) == generic_summary("audit prior-aware", bad)
