"""Skipping the extended-precision recomposition where the double bracket is already within
rerokit.bounds.dpsgd_exact._PRECISE_ENOUGH (5e-3) of gamma: the bracket then contains the one the
recomposition gives (the previous rule, 2e-3, as the reference path) and stays within 5e-3."""

from __future__ import annotations

import pytest

import rerokit.bounds.dpsgd_exact as dpsgd_exact
from rerokit.bounds.dpsgd import rero_dpsgd


@pytest.mark.parametrize("sigma", [2.0, 5.0])
def test_skipped_recomposition_brackets_the_recomposed_one(sigma, monkeypatch):
    args = (sigma, 1e-3, 30_000, 1e-6)
    b = rero_dpsgd(*args, comparisons=False)
    monkeypatch.setattr(dpsgd_exact, "_PRECISE_ENOUGH", 2e-3)
    ref = rero_dpsgd(*args, comparisons=False)
    # the reference recomposes in extended precision: a narrower bracket, inside this one
    assert ref.value - ref.interval[0] < b.value - b.interval[0]
    assert b.interval[0] <= ref.interval[0] <= ref.value <= b.value
    assert (b.value - b.interval[0]) / b.value <= 5e-3
