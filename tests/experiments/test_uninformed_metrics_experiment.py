"""`uninformed-metrics`: the real analytic attack (vmap, one DP-SGD step) against the attack laws of
bounds.uninformed_metrics: mean PSNR and mean sample NCC within 4 standard errors."""

import csv

import pytest

pytest.importorskip("torch")

from rerokit.experiments.uninformed_metrics import run_uninformed_metrics  # noqa: E402


def test_measured_metrics_follow_the_attack_laws(tmp_path):
    res = run_uninformed_metrics(tmp_path, sigmas=[0.02, 0.2], repeats=200, seed=1)
    rows = list(csv.DictReader(open(res["csv"])))
    assert len(rows) == 2 and (tmp_path / "uninformed_metrics.png").stat().st_size > 0
    for r in rows:
        f = {k: float(v) for k, v in r.items()}
        assert abs(f["psnr_mean"] - f["expected_psnr"]) <= 4 * f["psnr_se"]
        assert abs(f["ncc_mean"] - f["ncc_law_mean"]) <= 4 * f["ncc_se"] + 1e-6
        assert f["psnr_prop2_expression"] < f["expected_psnr"]
        assert f["seed"] == 1 and f["repeats"] == 200
    nmi = [float(r["nmi_mean"]) for r in rows]
    assert nmi[0] > nmi[1] > float(rows[0]["nmi_independent"]) - 0.01  # more noise, less information
