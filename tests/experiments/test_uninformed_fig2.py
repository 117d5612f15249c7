"""004 Fig. 2 experiment: files written, regimes behave as the paper's laws predict, resume, CLI."""

from __future__ import annotations

import csv
import json

import pytest

from rerokit.bounds import uninformed as U
from rerokit.executors import RunOptions
from rerokit.experiments.uninformed_fig2 import REGIMES, regime_settings, run_uninformed_fig2

pytestmark = pytest.mark.slow  # ~15-30 s on a loaded 2-core machine (plotting + torch import)


def test_regime_settings():
    assert regime_settings(REGIMES[0], 0.5, 2.0, 100) == (0.5, 100)
    c, m = regime_settings(REGIMES[1], 0.5, 2.0, 100)
    assert (c, m) == (pytest.approx(5.0), 100)
    assert U.optimal_rows(c, 0.5) == 100  # exactly Prop. 1's threshold for the smallest norm
    assert regime_settings(REGIMES[2], 0.5, 2.0, 100) == (4.0, 1)
    with pytest.raises(ValueError, match="regime"):
        regime_settings("nope", 0.5, 2.0, 100)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig2")
    res = run_uninformed_fig2(out, sigmas=(0.05, 0.3), seed=1, points=200, dim=4, rows=100,
                              digits_targets=60, datasets=("synthetic", "digits"))
    return out, res


def test_files_and_csv_content(small_run):
    out, res = small_run
    for key in ("png", "csv", "summary_csv", "jsonl"):
        assert (out / res["paths"][key].split("/")[-1]).stat().st_size > 0
    with open(res["paths"]["csv"]) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 * 2 * (200 + 60)
    r = rows[0]
    assert float(r["mse"]) >= 0 and float(r["variance_optimal"]) == pytest.approx(float(r["sigma"]) ** 2 * float(r["norm"]) ** 2)
    with open(res["paths"]["summary_csv"]) as f:
        assert len(list(csv.DictReader(f))) == 12


def test_optimal_regimes_follow_thm2_and_one_row_adds_noise(small_run):
    _, res = small_run
    for s in res["summary"]:
        z = (s["empirical_mse_mean"] - s["expected_mse_as_run"]) / s["empirical_mse_se"]
        assert abs(z) < 4.5, s  # empirical mean MSE vs the law of the attack as run (Eq. 17)
        if s["regime"] in REGIMES[:2]:
            # M rows make every gradient clipped: the optimal law sigma^2 ||X||^2 (Eq. 20, Prop. 2)
            assert s["expected_mse_as_run"] == pytest.approx(s["expected_mse_optimal"], rel=1e-5)
        else:
            # C = 2 max ||X||, M = 1: overproportional noise, variance sigma^2 C^2 > sigma^2 ||X||^2
            assert s["expected_mse_as_run"] == pytest.approx(s["sigma"] ** 2 * s["clip"] ** 2)
            assert s["empirical_mse_mean"] > 3 * s["expected_mse_optimal"]
        # Prop. 6: mean sample NCC within the bound plus sampling slack
        assert s["empirical_ncc_mean"] <= s["ncc_bound"] + 0.05


def test_empirical_mse_law_ks_in_optimal_regime(small_run):
    from scipy import stats

    out, res = small_run
    recs = [json.loads(line) for line in (out / "uninformed_fig2.jsonl").read_text().splitlines()[1:]]
    rec = next(r for r in recs if r["dataset"] == "digits" and r["regime"] == REGIMES[0] and r["sigma"] == 0.3)
    # PIT: P(MSE_i <= observed) under each record's own Thm 2 law is U(0, 1)
    u = [U.mse_cdf(m, 0.3, nrm, 64) for m, nrm in zip(rec["mse"], rec["norm"])]
    assert stats.kstest(u, "uniform").pvalue > 0.01


def test_resume_reuses_cells(small_run, tmp_path):
    out, res = small_run
    again = run_uninformed_fig2(out, sigmas=(0.05, 0.3), seed=1, points=200, dim=4, rows=100,
                                digits_targets=60, datasets=("synthetic", "digits"), options=RunOptions(resume=True))
    assert again["summary"] == res["summary"]
    # without resume the finished file is reported again; other settings name both ways on
    assert run_uninformed_fig2(out, sigmas=(0.05, 0.3), seed=1, points=200, dim=4, rows=100,
                               digits_targets=60, datasets=("synthetic", "digits"))["summary"] == res["summary"]
    with pytest.raises(ValueError, match="other settings.*--resume"):
        run_uninformed_fig2(out, sigmas=(0.05, 0.3), seed=2, points=200, dim=4, rows=100,
                            digits_targets=60, datasets=("synthetic", "digits"))


def test_cli_experiment(tmp_path, capsys):
    from rerokit.cli import main

    assert main(["experiment", "uninformed-fig2", "--out-dir", str(tmp_path), "--sigmas", "0.1",
                 "--points", "20", "--digits-targets", "10", "--datasets", "synthetic", "--json", "--no-progress"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["cells"] == 3 and (tmp_path / "uninformed_fig2.png").exists()
    assert main(["experiment", "uninformed-fig2", "--out-dir", str(tmp_path / "x"), "--sigmas", "-1"]) == 2
    assert "sigma" in capsys.readouterr().err
    assert main(["experiment", "uninformed-fig2", "--out-dir", str(tmp_path / "y"), "--datasets", "mnist"]) == 2
    assert "dataset" in capsys.readouterr().err
