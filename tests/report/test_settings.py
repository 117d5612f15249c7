"""build_report's parameter objects (DataDescription, ReportSettings): validated fields, and the
objects give the report the keywords gave."""

from __future__ import annotations

import dataclasses

import pytest

from rerokit.bounds.schedule import Sampling
from rerokit.report import DataDescription, ReportSettings, build_report

RUN = dict(noise_multiplier=2.0, sample_rate=0.05, steps=50, what_if=False)


@pytest.mark.parametrize("kw,field,exc", [
    (dict(data_shape="28by28"), "data_shape", ValueError),
    (dict(data_shape=3.5), "data_shape", TypeError),
    (dict(dataset_size=0), "dataset_size", ValueError),
    (dict(dataset_size=1.5), "dataset_size", TypeError),
    (dict(clip=0.0), "clip", ValueError),
    (dict(min_norm=-1.0), "min_norm", ValueError),
    (dict(diameter=float("inf")), "diameter", ValueError),
    (dict(mse_threshold=0), "mse_threshold", ValueError),
    (dict(data_range="1"), "data_range", TypeError),
])
def test_data_description_validates_naming_the_field(kw, field, exc):
    with pytest.raises(exc, match=field):
        DataDescription(**kw)


@pytest.mark.parametrize("kw,field,exc", [
    (dict(label=3), "label must be a string", TypeError),
    (dict(source=b"x"), "source must be a string", TypeError),
    (dict(prior_sizes=[1]), r"prior_sizes\[0\] must be an integer >= 2", ValueError),
    (dict(prior_sizes=[]), "prior_sizes must list at least one", ValueError),
    (dict(prior_sizes="10"), "prior_sizes", TypeError),
])
def test_report_settings_validate_naming_the_field(kw, field, exc):
    with pytest.raises(exc, match=field):
        ReportSettings(**kw)


def test_objects_hold_parsed_values_and_are_frozen():
    d = DataDescription(data_shape="1x28x28", dataset_size=60_000, clip=1)
    assert d.data_shape == (1, 28, 28) and d.clip == 1.0 and d.mse_threshold == 0.01 and d.data_range == 1.0
    assert ReportSettings(prior_sizes=(10, 2, 10)).prior_sizes == (10, 2)  # duplicates dropped, order kept
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.clip = 2.0
    with pytest.raises(TypeError, match="data must be"):
        build_report(**RUN, data={"clip": 1.0})
    with pytest.raises(TypeError, match="settings must be"):
        build_report(**RUN, settings={"label": "x"})


def test_the_objects_reach_the_report():
    d = build_report(**RUN, sampler=Sampling("shuffle", examples_per_user=2),
                     data=DataDescription(data_shape=(1, 8, 8), dataset_size=1000, clip=1.0, diameter=1.0,
                                          mse_threshold=0.02, data_range=2.0),
                     settings=ReportSettings(label="m", source="unit test", prior_sizes=(10, 100))).to_dict()
    assert d["label"] == "m" and d["settings"]["source"] == "unit test"
    assert d["settings"]["sampler"] == "shuffle" and d["settings"]["examples_per_user"] == 2
    assert d["data"]["shape"] == [1, 8, 8] and d["data"]["dataset_size"] == 1000 and d["data"]["clip"] == 1.0
    assert d["data"]["mse_threshold"] == 0.02 and d["data"]["data_range"] == 2.0 and d["data"]["diameter"] == 1.0
    assert d["options"]["prior_sizes"] == [10, 100] and set(d["informed"]) >= {"prior_10", "prior_100"}
    assert d["guo_mse"].get("skipped") is None  # the diameter was used
    # defaults: the same report as without the objects
    a = build_report(**RUN).to_dict()
    b = build_report(**RUN, data=DataDescription(), settings=ReportSettings()).to_dict()
    a.pop("rerokit_version"), b.pop("rerokit_version")
    assert a == b
