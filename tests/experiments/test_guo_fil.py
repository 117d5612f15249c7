"""Guo et al. (2022) Figs. 2 and 5 at tiny scale; the spectral-norm FIL against the full FIM."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rerokit.experiments.guo_fil import DFIL_WARNING, GuoGrid, guo_fig2, guo_fig5


def test_spectral_fil_is_the_largest_eigenvalue_of_the_fisher_matrix():
    from rerokit.experiments.fil_glm import fil_glm_setup
    from rerokit.training.fil import output_perturbation_jacobians
    from rerokit.training.fil_spectral import output_perturbation_fil_spectral

    s = 1e-2
    st = fil_glm_setup(noise_std=s)
    eta2 = output_perturbation_fil_spectral(st["model"], st["X"], st["y"], s, chunk=64)
    sl, J = next(output_perturbation_jacobians(st["model"], st["X"], st["y"], chunk=5))
    for k in range(5):
        J_k = J[k].numpy()
        fim = J_k.T @ J_k / s**2  # I_h(x) = J^T J / s^2 (d x d)
        assert eta2[k] == pytest.approx(np.linalg.eigvalsh(fim).max(), rel=1e-8)
        assert st["dfil"][k] == pytest.approx(np.trace(fim) / fim.shape[0], rel=1e-8)
    # Thm 2's chain for unbiased attacks: 1/eta^2 <= 1/dFIL <= Tr(I^-1)/d
    assert np.all(1 / eta2 <= st["bound"] * (1 + 1e-9))
    fin = np.isfinite(st["bound_trinv"])
    assert np.all(st["bound"][fin] <= st["bound_trinv"][fin] * (1 + 1e-9))


def test_fig2_writes_both_histograms_and_the_warning(tmp_path, capsys):
    res = guo_fig2(tmp_path, progress=True)
    assert res["warning"] == DFIL_WARNING and "leak" in capsys.readouterr().err
    assert res["spectral_bound_median"] <= res["dfil_bound_median"]
    assert (tmp_path / "guo_fig2.png").stat().st_size > 0
    assert len((tmp_path / "guo_fig2.csv").read_text().splitlines()) == res["n"] + 1


def test_fig5_rdp_bound_is_the_full_batch_closed_form_and_resume_skips(tmp_path):
    # q = 1: T Gaussian steps of sensitivity 1.1153 C (GELU-clipped gradients) under noise sigma C are
    # (2, T 1.1153^2 / sigma^2)-RDP, and Thm 1 over [0, 1]^d gives 1 / (4 (e^eps - 1))
    grid = GuoGrid(noise_multipliers=(2.0,), steps=(3,), sample_rate=1.0, hidden=2, test_size=1650)
    res = guo_fig5(tmp_path, grid, progress=False)
    (row,) = res["rows"]
    eps = 3 * 1.1153**2 / 4
    assert row["epsilon_rdp2"] == pytest.approx(eps, rel=1e-4)
    assert row["rdp_mse_bound"] == pytest.approx(0.25 / math.expm1(eps), rel=1e-4)
    assert 0 < row["max_dfil_mse_bound"] <= row["median_dfil_mse_bound"]
    assert 0 <= row["test_accuracy"] <= 1 and res["warning"] == DFIL_WARNING
    text = (tmp_path / "guo_fig5.jsonl").read_text()
    again = guo_fig5(tmp_path, grid, resume=True, progress=False)
    assert (tmp_path / "guo_fig5.jsonl").read_text() == text and again["rows"] == res["rows"]


def test_grid_refuses_bad_settings():
    with pytest.raises(ValueError, match="noise_multipliers"):
        GuoGrid(noise_multipliers=(0.0,))
    with pytest.raises(ValueError, match="sample_rate"):
        GuoGrid(sample_rate=1.5)
