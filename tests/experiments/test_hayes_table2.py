"""`hayes-table2`: the three rows of Hayes et al. 2023 Table 2 written to CSV + PNG."""

import csv

import pytest

from rerokit.experiments.hayes_table2 import METHODS, table2


def test_table2_files_and_ordering(tmp_path):
    res = table2(tmp_path, prior_sizes=[10], sigmas=[1.0, 2.0], samples=20_000, seed=3)
    rows = list(csv.DictReader(open(res["csv"])))
    assert len(rows) == 6 and (tmp_path / "hayes_table2.png").stat().st_size > 0
    for sigma in ("1.0", "2.0"):
        adv = {r["method"]: float(r["advantage"]) for r in rows if r["noise_multiplier"] == sigma}
        # exact bound < Fano at the MC mutual information < Fano at Guo's closed-form mutual-information bound
        assert adv[METHODS["ours"]] < adv[METHODS["guo_mc"]] < adv[METHODS["guo"]]
    mc = [r for r in rows if r["method"] == METHODS["guo_mc"]]
    assert all(r["seed"] == "3" and r["samples"] == "20000" and float(r["se"]) > 0 for r in mc)
    # the printed value beside each number (sigma = 1: Table 2)
    assert {float(r["paper"]) for r in rows if r["noise_multiplier"] == "1.0"} == {0.593, 0.397, 0.322}
    guo = next(r for r in rows if r["method"] == METHODS["guo"] and r["noise_multiplier"] == "1.0")
    assert float(guo["advantage"]) == pytest.approx(0.593, abs=5e-4)
