"""rerokit.experiments.audit_outcome: the audit command's outcome, written by the audit and read back
by the report and the command's verdict through the same class.

The round trips are checked on outcomes written out by hand (every field set to a distinct value,
so a field read from the wrong key shows), and on the real output of tiny audits; the gradient
audit's printed JSON is read by the report as its results file is (the two readers agree).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields

import pytest

from rerokit.experiments.audit_outcome import AuditOutcome, EmpiricalBounds, MetricSummary

SETTINGS = {"noise_multiplier": 2.0, "sample_rate": 1.0, "steps": 5, "dataset": "digits", "seed": 3, "prior_size": 10}


def _prior_aware(out: str | None = "run.jsonl") -> AuditOutcome:
    res = MetricSummary("success", 0.25, 0.125, 0.375)
    return AuditOutcome(kind="prior-aware", attack="alg2", result=res,
                        attacks={"alg2": res, "alg3": MetricSummary("success", 0.5, 0.375, 0.625)}, gamma=0.75,
                        kappa=0.1, noise_multiplier=2.0, trials=8, seed=3, settings=dict(SETTINGS), epsilon=4.0,
                        delta=1e-5, empirical=EmpiricalBounds(0.0625, 0.5, 0.25, 0.95),
                        mean_target_clipped_fraction=0.875, out=out)


def _gradient() -> AuditOutcome:
    mse = MetricSummary("mse", 0.3, 0.2, 0.4)
    res = MetricSummary("success", 0.0625, 0.0, 0.125)
    return AuditOutcome(kind="gradient", attack="prior_success_10", result=res,
                        attacks={"mse": mse, "prior_success_10": res,
                                 "prior_success_100": MetricSummary("success", 0.03125, 0.0, 0.0625)},
                        gamma=0.75, kappa=0.1, noise_multiplier=2.0, trials=4, seed=3,
                        settings=dict(SETTINGS, attack="gradient"), epsilon=None, delta=None, mse=mse)


@pytest.mark.parametrize("make", [_prior_aware, lambda: _prior_aware(None), _gradient])
def test_from_dict_inverts_to_dict(make):
    o = make()
    d = json.loads(json.dumps(o.to_dict()))  # through JSON, as the report and the verdict receive it
    assert AuditOutcome.kind_of(d) == o.kind
    assert AuditOutcome.from_dict(d) == o
    assert AuditOutcome.from_dict({**d, "rerokit_version": "0"}) == o  # the CLI's extra key is ignored


def test_from_dict_names_what_is_missing():
    d = _prior_aware().to_dict()
    for key in ("gamma", "settings", "attack", "ci_low", "mean_target_clipped_fraction"):
        with pytest.raises(ValueError, match=f"missing '{key}'"):
            AuditOutcome.from_dict({k: v for k, v in d.items() if k != key})
    with pytest.raises(ValueError, match="missing 'empirical_confidence'"):  # all of the empirical keys or none
        AuditOutcome.from_dict({k: v for k, v in d.items() if k != "empirical_confidence"})
    with pytest.raises(ValueError, match="attacks.alg3: missing 'ci_high'"):
        AuditOutcome.from_dict({**d, "attacks": {**d["attacks"], "alg3": {"metric": "success", "value": 0.5,
                                                                         "ci_low": 0.4}}})
    with pytest.raises(TypeError, match="'attacks' must be a JSON object"):
        AuditOutcome.from_dict({**d, "attacks": []})
    with pytest.raises(TypeError, match="expected a JSON object"):
        AuditOutcome.from_dict([])
    g = _gradient().to_dict()
    with pytest.raises(ValueError, match="none of 'attacks'"):
        AuditOutcome.from_dict({**g, "success": 0.5})


def test_module_is_torch_free():
    code = "import sys, rerokit.experiments.audit_outcome; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_old_name_is_a_deprecated_alias():
    from rerokit.experiments import audit

    with pytest.warns(DeprecationWarning, match="use AuditOutcome"):
        assert audit.AuditSummary is AuditOutcome
    assert audit.MetricSummary is MetricSummary and audit.EmpiricalBounds is EmpiricalBounds
    with pytest.raises(AttributeError):
        audit.NoSuchName  # noqa: B018


@pytest.fixture(scope="module")
def tiny_audits(tmp_path_factory):
    """The outcomes of a tiny prior-aware and a tiny gradient audit, each with its results file."""
    from rerokit.executors import RunOptions
    from rerokit.experiments.audit import AuditConfig, GradientAttack, run_audit

    d = tmp_path_factory.mktemp("audits")
    cfg = AuditConfig.resolve(epsilon=4, steps=5, n_known=29)
    out = {}
    for kind, n in (("prior-aware", 6), ("gradient", 3)):
        p = str(d / f"{kind}.jsonl")
        kw = {"attack": GradientAttack(iterations=5, restarts=1)} if kind == "gradient" else {}
        rep = run_audit(kind, cfg, trials=n, seed=1, options=RunOptions(progress=False, out=p), **kw)
        out[kind] = (rep.summary(), p)
    return out


@pytest.mark.parametrize("kind", ["prior-aware", "gradient"])
def test_real_outcomes_round_trip_and_the_report_reads_them_as_their_files(tiny_audits, kind):
    from rerokit.report.inputs import audit_from_dict, load_audit
    from rerokit.report.model import AuditRun

    o, path = tiny_audits[kind]
    printed = json.loads(json.dumps(o.to_dict()))
    assert AuditOutcome.from_dict(printed) == o
    a, b = audit_from_dict(printed), load_audit(path)  # the printed JSON and the results file
    for name in (f.name for f in fields(AuditRun)):
        if name not in ("source", "path", "target_epsilon", "delta"):
            assert getattr(a, name) == pytest.approx(getattr(b, name)), name
    assert (a.target_epsilon, a.delta) == (b.target_epsilon, b.delta) == (4.0, 1e-5)
