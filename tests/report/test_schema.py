"""``rerokit report --json`` against its JSON Schema (src/rerokit/report/report.schema.json), on real output.

Needs ``jsonschema`` (the test extra); skips with the reason without it.
"""

from __future__ import annotations

import copy
import json
from importlib import resources

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="needs jsonschema (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(resources.files("rerokit.report").joinpath("report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, audit_files):
    """Real outputs: settings only; settings + data + Guo + what-if; an audit; a two-segment history."""
    from rerokit.report import DataDescription, build_report
    from rerokit.report.inputs import load_history

    d = tmp_path_factory.mktemp("schema")
    h = d / "h.json"
    h.write_text(json.dumps([[1.0, 0.01, 400], [1.5, 0.01, 600]]))
    reps = {
        "settings": build_report(noise_multiplier=1.0, sample_rate=0.01, steps=1000, what_if=False),
        "data": build_report(noise_multiplier=2.0, sample_rate=0.05, steps=50, what_if=True,
                             data=DataDescription(data_shape="1x8x8", clip=1.0, diameter=1.0, dataset_size=1000)),
        "audit": build_report(audit=audit_files[1], what_if=False),
        "history": build_report(load_history(h), what_if=True),
    }
    return {k: json.loads(json.dumps(r.to_dict())) for k, r in reps.items()}


@pytest.mark.parametrize("case", ["settings", "data", "audit", "history"])
def test_real_output_matches_the_schema(validator, outputs, case):
    errors = sorted(validator.iter_errors(outputs[case]), key=str)
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def test_cli_json_matches_the_schema(validator, cli):
    d = cli.json("report", "--noise-multiplier", 1, "--sample-rate", 0.01, "--steps", 100, "--data-shape", "1x8x8",
                 "--clip", 1)
    assert not list(validator.iter_errors(d))


@pytest.mark.parametrize("mutate, what", [
    (lambda d: d["membership"].__setitem__("tpr_at_fpr_0.01", 0.1), "a key with a dot"),
    (lambda d: d["membership"].__setitem__("membership_advantage", d["membership"]["advantage"]), "a second name"),
    (lambda d: d.pop("schema_version"), "no schema_version"),
    (lambda d: d["membership"]["tpr_at_fpr"][0].pop("interval"), "a TPR without its bracket"),
    (lambda d: d["key_numbers"].__setitem__("membership_tpr_at_fpr_0.01", 0.1), "a dotted key number"),
    (lambda d: d["informed"]["prior_10"].__setitem__("gamma", 1.5), "a probability above 1"),
])
def test_the_schema_rejects_what_the_contract_forbids(validator, outputs, mutate, what):
    d = copy.deepcopy(outputs["data"])
    mutate(d)
    assert list(validator.iter_errors(d)), what
