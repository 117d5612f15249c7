"""Library level: rerokit.risk.reconstruction_risks, rerokit.report.build helpers and input readers."""

from __future__ import annotations

import json
import math

import pytest

import rerokit
from rerokit.bounds.schedule import Schedule
from rerokit.report.build import build_report, schedule_prefix, step_grid
from rerokit.report.settings import DataDescription, ReportSettings
from rerokit.report.inputs import (
    MAX_TOTAL_STEPS,
    audit_from_dict,
    event_from_json,
    load_audit,
    parse_data_shape,
)


def test_reconstruction_risks_equal_one_prior_calls():
    # one composed PLD for several priors: each equals rerokit.reconstruction_risk of that prior, exactly
    from rerokit.bounds.priors import PixelTolerancePrior

    priors = [2, 10, PixelTolerancePrior(64, 32 / 256)]
    many = rerokit.reconstruction_risks(noise_multiplier=1.0, sample_rate=0.01, steps=300, priors=priors)
    for p, r in zip(priors, many):
        one = rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.01, steps=300, prior=p)
        assert r.to_dict() == one.to_dict()
        assert r.curve is many[0].curve  # shared, not rebuilt
    with pytest.raises(ValueError, match="priors must be a non-empty list"):
        rerokit.reconstruction_risks(noise_multiplier=1.0, sample_rate=0.01, steps=3, priors=[])


def test_schedule_prefix_and_step_grid():
    s = Schedule.from_segments([(1.0, 0.01, 400), (1.5, 0.01, 600)])
    assert schedule_prefix(s, 250).as_triples() == [[1.0, 0.01, 250]]
    assert schedule_prefix(s, 401).as_triples() == [[1.0, 0.01, 400], [1.5, 0.01, 1]]
    assert schedule_prefix(s, 1000) == s
    with pytest.raises(ValueError, match="steps must be an integer >= 1 and <= 1000"):
        schedule_prefix(s, 1001)
    g = step_grid(1000, 25)
    assert g[0] == 1 and g[-1] == 1000 and len(g) == 25 and g == sorted(set(g))
    assert step_grid(5, 25) == [1, 2, 3, 4, 5]


def test_event_json_builds_the_dp_accounting_event_of_the_schedule(fx):
    # the whitelisted JSON form maps one-to-one on dp-accounting's classes: Schedule.to_event of the same
    # segments is the same object tree (attrs equality)
    ev = event_from_json(fx.EVENT)
    want = Schedule.from_segments([(1.0, 0.01, 500), (1.5, 0.01, 500)])
    assert Schedule.from_event(ev) == want
    import dp_accounting as dpa

    assert ev == dpa.ComposedDpEvent([Schedule((seg,)).to_event() for seg in want])
    big = {"SelfComposedDpEvent": {"count": MAX_TOTAL_STEPS + 1, "event": {"GaussianDpEvent": {"noise_multiplier": 1}}}}
    with pytest.raises(ValueError, match=r"count must be an integer in \[1, 1000000000\]"):
        event_from_json(big)
    with pytest.raises(ValueError, match="sampling_probability must be a number in"):
        event_from_json({"PoissonSampledDpEvent": {"sampling_probability": True, "event": {"NoOpDpEvent": {}}}})


def test_data_shape():
    assert parse_data_shape("1x28x28") == (1, 28, 28)
    assert parse_data_shape("3X32X32") == (3, 32, 32)
    assert parse_data_shape((1, 8, 8)) == (1, 8, 8)
    for bad in ("", "1x", "-1x3", "1x2x3x4x5", "100000x100000", "1.5x2"):
        with pytest.raises(ValueError, match="data_shape must"):
            parse_data_shape(bad)
    with pytest.raises(TypeError, match="data_shape must"):
        parse_data_shape(3)


def test_gradient_audit_files_are_read_without_lower_bounds(tmp_path, fx):
    # 'rerokit audit gradient' reports a mean of per-trial probabilities (Student-t interval): the report shows
    # it against gamma but proves nothing from it (no count of successes for Clopper-Pearson)
    s = dict(fx.AUDIT_SETTINGS, attack="gradient", prior_sizes=[10])
    s.pop("attacks")
    p = tmp_path / "g.jsonl"
    from rerokit.seeding import trial_seeds

    seeds = trial_seeds(s["seed"], 4)  # each trial's seed as the audit derives it (the reader checks them)
    with open(p, "w") as f:
        f.write(json.dumps({"kind": "header", "settings": s}) + "\n")
        for i, v in enumerate([0.1, 0.2, 0.3, 0.4]):
            f.write(json.dumps({"kind": "trial", "trial": i, "seed": seeds[i], "target_index": i, "mse": 0.1, "objective": 0.5,
                                "prior_success": {"10": v}}) + "\n")
        f.write('{"kind": "trial", "tri')  # a line cut by an interruption: skipped, as the audit does
    a = load_audit(p)
    assert (a.attack, a.successes, a.trials, a.kappa) == ("gradient", None, 4, 0.1)
    assert a.success == pytest.approx(0.25, abs=1e-15)  # mean of 0.1..0.4
    from rerokit.attacks.result import AttackResult

    assert a.interval == AttackResult.from_values([0.1, 0.2, 0.3, 0.4], seed=0, metric="success",
                                                  support=(0, 1)).interval
    d = build_report(audit=a, what_if=False).to_dict()
    assert d["audit"]["lower_bounds"] is None and "no Clopper-Pearson" in d["audit"]["lower_bounds_note"]
    j = {"mse": 0.1, "mse_ci_low": 0.05, "mse_ci_high": 0.2, "prior_success_10": 0.25, "ci_low": 0.1, "ci_high": 0.4,
         "gamma": 0.36, "kappa": 0.1, "trials": 4, "settings": s}
    assert audit_from_dict(j).interval == (0.1, 0.4)


def test_build_report_errors_name_the_parameter(fx):
    with pytest.raises(ValueError, match="give the training run"):
        build_report()
    with pytest.raises(TypeError, match="label must be a string"):
        build_report(noise_multiplier=1, sample_rate=0.1, steps=3, settings=ReportSettings(label=3))
    with pytest.raises(ValueError, match=r"prior_sizes\[0\] must be an integer >= 2"):
        build_report(noise_multiplier=1, sample_rate=0.1, steps=3, settings=ReportSettings(prior_sizes=[1]))
    with pytest.raises(TypeError, match="audit must be a path"):
        build_report(noise_multiplier=1, sample_rate=0.1, steps=3, audit=3.0)
    with pytest.raises(ValueError, match="delta must be a number in"):
        build_report(noise_multiplier=1, sample_rate=0.1, steps=3, delta=0)


def test_min_norm_and_dataset_size():
    from rerokit.bounds import uninformed as U

    d = build_report(noise_multiplier=2.0, sample_rate=0.1, steps=50, what_if=False,
                     data=DataDescription(data_shape="3x32x32", clip=1.0, min_norm=4.0, dataset_size=50_000)).to_dict()
    u = d["uninformed"]
    # a given min_norm replaces the clip assumption: 004 Prop. 3 with r = 4 (mse_rero), exact
    assert u["min_norm_source"] == "--min-norm"
    assert u["gamma"] == U.mse_rero(0.01, 2.0, 3072, min_norm=4.0, clip=1.0).value
    assert u["expected_mse"] == 2.0**2 * 4.0**2  # Prop. 2: sigma^2 r^2
    assert u["ncc_bound"] == pytest.approx(math.sqrt(1 / (1 + 4 * 3072)), rel=1e-15)  # Prop. 6
    assert d["data"]["expected_batch_size"] == pytest.approx(5000) and d["data"]["epochs"] == pytest.approx(5)
    assert not any("not below" in n for n in d["notes"])  # delta = 1e-5 < 1/50000
    d = build_report(noise_multiplier=2.0, sample_rate=0.1, steps=50, data=DataDescription(dataset_size=10),
                     delta=0.2, what_if=False).to_dict()
    assert any("is not below 1/N" in n for n in d["notes"])  # delta = 0.2 >= 1/10 is flagged


def test_every_number_appears_once_in_the_table(audit_files):
    from rerokit.report.build import table_rows

    d = build_report(audit=audit_files[1], data=DataDescription(diameter=1.0), what_if=False).to_dict()
    rows = table_rows(d)
    labels = [r.label for r in rows]
    assert len(labels) == len(set(labels))
    # the audit's kappa is 1/10: its bound is the prior-of-10 row, not a second row with the same number
    assert not any(lab.startswith("Bound at the audit") for lab in labels)
    d2 = build_report(audit=audit_files[1], settings=ReportSettings(prior_sizes=(2, 100)), what_if=False).to_dict()
    assert any(r.label.startswith("Bound at the audit") for r in table_rows(d2))
    # same curve, same kappa; log(0.1) (BaselinePrior) and -log(10) (prior of 10) differ by an ulp: rel 1e-12
    assert d2["audit"]["gamma"] == pytest.approx(d["informed"]["prior_10"]["gamma"], rel=1e-12)
