"""Extremes found by the hostile probe (issue 20) and fixed at their root: memory of the threshold
tests between far-apart windows, dp-accounting's negative RDP round-off, the memory estimate of
the PLD accounting, the neighbouring relation of ``bound fano --rdp-epsilon``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rerokit.bounds.pld.discrete import GridPMF, ThresholdTests


def _pmf(offset: int, n: int, seed: int) -> GridPMF:
    w = np.random.default_rng(seed).random(n)
    return GridPMF(0.01, offset, w / w.sum() * (1 - 1e-12), 1e-15, 1e-16, 1e-18)


def _brute_points(t: ThresholdTests):
    """Every label from the lowest window start to the highest window end (the former evaluation)."""
    lo = min(t.p.offset, t.q.offset)
    hi = max(t.p.offset + t.p.pmf.size, t.q.offset + t.q.pmf.size)
    labels = np.arange(lo, hi + 1)
    p_lo = np.maximum(0.0, t.p.mass_at_least(labels) - t.p.slack)
    q_hi = np.minimum(1.0, t.q.mass_at_least(labels) + t.q.slack)
    return p_lo, q_hi


@pytest.mark.parametrize("p_off, q_off", [(300, -200), (-200, 300), (0, 5), (40, 0), (-7, -7)])
def test_threshold_points_are_the_same_set_without_the_gap(p_off, q_off):
    """The points between two far-apart windows repeat the window edges' points: the maxima the
    membership numbers take over them are unchanged (overlapping, adjacent and far windows)."""
    t = ThresholdTests(_pmf(p_off, 50, 1), _pmf(q_off, 60, 2))
    p_lo, q_hi = t.points()
    bp, bq = _brute_points(t)
    assert set(zip(p_lo.tolist(), q_hi.tolist())) == set(zip(bp.tolist(), bq.tolist()))
    for s in (1.0, math.e, 0.3):
        assert np.max(p_lo - s * q_hi) == np.max(bp - s * bq)
        assert np.max((1 - q_hi) - s * (1 - p_lo)) == np.max((1 - bq) - s * (1 - bp))


def test_threshold_points_hold_the_windows_not_the_gap():
    """sigma 1, q 0.5, T 3e6 put the windows 6e7 labels apart: 2.7 GB of label arrays. Now the size
    is that of the windows, whatever the gap."""
    t = ThresholdTests(_pmf(10**12, 100, 3), _pmf(-(10**12), 100, 4))
    p_lo, q_hi = t.points()
    assert p_lo.size == q_hi.size <= 202
    assert np.max(p_lo - q_hi) > 0.99  # the two laws are told apart with certainty


def test_pld_memory_estimate_follows_the_window_not_the_steps():
    """The estimate of ``bound dpsgd --noise-multiplier 1 --sample-rate 0.5`` grows like the
    window (sqrt of the steps) and is bounded by the engine's largest window; the issue's T = 1e7
    is answered on a machine with a few GB."""
    from rerokit._resources import _PLD_MAX_BYTES, dpsgd_accounting_bytes

    est = [dpsgd_accounting_bytes([(1.0, 0.5, t)]) for t in (10**6, 10**7, 10**8, 10**9, 10**12)]
    assert all(a <= b for a, b in zip(est, est[1:]))
    assert est[1] < 2e9
    assert est[-1] == _PLD_MAX_BYTES
    assert dpsgd_accounting_bytes([(1.0, 0.001, 10**6)]) < est[0]


@pytest.mark.parametrize("seg", [(1e6, 1e-6, 10), (1e6, 1e-6, 1), (1e150, 1e-6, 10), (1e3, 0.5, 10**6)])
def test_add_remove_order2_rdp_at_extreme_sigma_is_a_positive_number(seg):
    """dp-accounting returns a negative RDP at sigma 1e6, q 1e-6 (round-off); it raised. Order 2
    now has the closed form T log(1 + q^2 (e^{1/sigma^2} - 1)) there, never below the truth."""
    from rerokit.accounting.events import rdp_epsilon_order2

    eps, order = rdp_epsilon_order2([seg])
    sigma, q, steps = seg
    truth = steps * math.log1p(q * q * math.expm1(1 / sigma**2))
    assert order == 2.0 and eps > 0 and math.isfinite(eps)
    assert eps == pytest.approx(max(truth, steps * 1e-300), rel=1e-9)


def test_fano_rdp_epsilon_help_names_the_neighbouring_relation(capsys):
    from rerokit.cli import main

    with pytest.raises(SystemExit):
        main(["bound", "fano", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")
    assert "REPLACE-ONE neighbours" in text and "add/remove" in text
