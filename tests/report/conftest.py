"""Fixtures of the report tests: audit result files in both formats, an Opacus history, an event.

The audit files mirror what ``rerokit audit prior-aware --dataset digits --prior-size 10
--epsilon 4 --steps 100 --trials 200 --seed 0 --json --out FILE`` writes (field for field; the
header settings are ``AuditConfig.to_dict()`` plus seed and attacks), with 54 successes out of
200 trials. sigma = 10.811618500608592 is what that command calibrated for epsilon = 4,
delta = 1e-5 (``noise_multiplier_for_epsilon(4, 1e-5, 1.0, 100)``).
"""

from __future__ import annotations

import json

import pytest

AUDIT_SIGMA = 10.811618500608592
AUDIT_SUCCESSES = 54
AUDIT_TRIALS = 200
AUDIT_SETTINGS = {
    "noise_multiplier": AUDIT_SIGMA, "dataset": "digits", "data_path": None, "prior_size": 10, "n_known": 999,
    "steps": 100, "sample_rate": 1.0, "clip": 0.1, "lr": 10.0, "model": "mlp", "hidden": [10], "activation": "elu",
    "prior_weights": None, "seed": 0, "attacks": ["alg2"],
}


def audit_outcomes() -> list[bool]:
    """54 successes in 200 trials, spread out (trial i succeeds iff i * 54 // 200 changes)."""
    return [(i + 1) * AUDIT_SUCCESSES // AUDIT_TRIALS != i * AUDIT_SUCCESSES // AUDIT_TRIALS for i in range(AUDIT_TRIALS)]


def audit_json_dict() -> dict:
    """The object 'rerokit audit prior-aware ... --json' prints (numbers of a 54/200 run)."""
    from rerokit.stats import clopper_pearson

    lo, hi = clopper_pearson(AUDIT_SUCCESSES, AUDIT_TRIALS)
    s = AUDIT_SUCCESSES / AUDIT_TRIALS
    return {
        "success": s, "ci_low": lo, "ci_high": hi, "gamma": 0.36070589383747026, "kappa": 0.1,
        "noise_multiplier": AUDIT_SIGMA, "trials": AUDIT_TRIALS, "seed": 0,
        "attacks": {"alg2": {"metric": "success", "value": s, "ci_low": lo, "ci_high": hi}},
        "attack": "alg2", "epsilon": 4.0, "delta": 1e-05, "mean_target_clipped_fraction": 0.9077,
        "settings": dict(AUDIT_SETTINGS), "out": "audit.jsonl", "rerokit_version": "0.2.0",
    }


def write_audit_jsonl(path, outcomes=None, settings=None) -> None:
    """The JSON lines 'rerokit audit prior-aware --out' writes: header, then one line per trial."""
    from rerokit.seeding import trial_seeds

    outcomes = audit_outcomes() if outcomes is None else outcomes
    settings = settings or AUDIT_SETTINGS
    seeds = trial_seeds(settings.get("seed", 0), max(1, len(outcomes)))  # each trial's seed, as the audit derives it
    with open(path, "w") as f:
        f.write(json.dumps({"kind": "header", "settings": settings}) + "\n")
        for i, ok in enumerate(outcomes):
            f.write(json.dumps({"kind": "trial", "trial": i, "seed": seeds[i], "prior": list(range(10)), "target": 3,
                                "guess": {"alg2": 3 if ok else 4}, "success": {"alg2": ok},
                                "target_clipped_fraction": 1.0}) + "\n")


@pytest.fixture(scope="session")
def audit_files(tmp_path_factory):
    """(json_path, jsonl_path) of the same 54/200 audit."""
    d = tmp_path_factory.mktemp("audit")
    j = d / "audit.json"
    j.write_text(json.dumps(audit_json_dict()))
    jl = d / "audit.jsonl"
    write_audit_jsonl(jl)
    return str(j), str(jl)


HISTORY = [[1.0, 0.01, 400], [1.0, 0.01, 100], [1.5, 0.01, 500]]
"""A two-segment run as Opacus' accountant.history (the first two entries merge)."""

EVENT = {"ComposedDpEvent": {"events": [
    {"SelfComposedDpEvent": {"count": 500, "event": {"PoissonSampledDpEvent": {
        "sampling_probability": 0.01, "event": {"GaussianDpEvent": {"noise_multiplier": 1.0}}}}}},
    {"SelfComposedDpEvent": {"count": 500, "event": {"PoissonSampledDpEvent": {
        "sampling_probability": 0.01, "event": {"GaussianDpEvent": {"noise_multiplier": 1.5}}}}}},
]}}
"""The same run as a dp-accounting event in the report's JSON schema."""


@pytest.fixture(scope="session")
def fx():
    """The constants and writers above, for tests (conftest modules are not importable by name)."""
    import types

    return types.SimpleNamespace(
        AUDIT_SIGMA=AUDIT_SIGMA, AUDIT_SUCCESSES=AUDIT_SUCCESSES, AUDIT_TRIALS=AUDIT_TRIALS,
        AUDIT_SETTINGS=AUDIT_SETTINGS, audit_json_dict=audit_json_dict, write_audit_jsonl=write_audit_jsonl,
        audit_outcomes=audit_outcomes, HISTORY=HISTORY, EVENT=EVENT,
    )
