"""The declared guarantee travels: an audit's result file keeps (epsilon, delta) and the sampler, and a
report made from the file states them (issue: certificates that follow the run)."""

from __future__ import annotations

import json
import math

import pytest

from rerokit.experiments.audit import AuditConfig, declared_guarantee, run_prior_aware_audit


def test_declared_guarantee_of_a_config():
    cfg = AuditConfig.resolve(epsilon=4.0, delta=1e-6, n_known=49, steps=5, clip=0.1, lr=2.0)
    assert declared_guarantee(cfg) == {"epsilon": 4.0, "delta": 1e-6, "sampler": "full_batch"}
    cfg = AuditConfig(noise_multiplier=2.0, n_known=49, steps=5, sample_rate=0.5)
    assert declared_guarantee(cfg) == {"epsilon": None, "delta": None, "sampler": "poisson"}


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_audit_at_epsilon_4_delta_1e6_is_reported_at_its_guarantee(tmp_path, cli, fmt):
    """An audit at --epsilon 4 --delta 1e-6, reported from its file: epsilon = 4 at delta = 1e-6."""
    out = tmp_path / "audit.jsonl"
    d = cli.json("audit", "prior-aware", "--dataset", "digits", "--prior-size", "10", "--epsilon", "4", "--delta",
                 "1e-6", "--steps", "3", "--trials", "2", "--seed", "0", "--out", str(out))
    header = json.loads(out.read_text().splitlines()[0])
    assert header["settings"]["epsilon"] == 4.0 and header["settings"]["delta"] == 1e-6
    assert header["settings"]["sampler"] == "full_batch"
    if fmt == "json":
        path = tmp_path / "audit.json"
        path.write_text(json.dumps(d))
    else:
        path = out
    r = cli.json("report", "--audit", str(path), "--no-what-if")
    assert r["delta"] == 1e-6
    assert r["epsilon"] == pytest.approx(4.0, abs=1e-6) and r["epsilon"] <= 4.0 + 1e-9
    assert r["declared_guarantee"]["epsilon"] == 4.0 and r["declared_guarantee"]["delta"] == 1e-6
    assert r["audit"]["certified_epsilon_delta"] == 1e-6
    assert r["privacy_facts"]["delta"] == 1e-6 and r["settings"]["sampler"] == "full_batch"
    assert r["settings"]["sampler_source"] == "declared"
    # an explicit --delta still wins
    r2 = cli.json("report", "--audit", str(path), "--no-what-if", "--delta", "1e-5")
    assert r2["delta"] == 1e-5 and r2["epsilon"] < r["epsilon"]


def test_report_json_never_holds_infinity(cli, tmp_path):
    code, text, _ = cli.run("report", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000",
                            "--delta", "1e-320", "--no-what-if", "--json")
    assert code == 0 and "Infinity" not in text and "NaN" not in text
    d = json.loads(text)
    assert math.isfinite(d["epsilon"]) and d["epsilon"] > 0
