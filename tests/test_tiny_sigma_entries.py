"""Every public entry at tiny noise (sigma = 1e-4): an answer, never a traceback (PLDTooWide was raised
from the membership risks' statistic window: 2e7 points over the 16.8M limit).

References: the never-sampled probability P = (1 - q)^T in mpmath (membership advantage = TV <= 1 - P,
and within 1e-6 of it here: the max test detects any sampled step); rero_dpsgd's own bracket (the
trade-off curve must give the same gamma); the PLD's epsilon at T = 100 (a second method: an upper bound
on the truth, which the closed form's lower end is below).
"""

from __future__ import annotations

import contextlib
import io
import json

import mpmath as mp
import numpy as np
import pytest

import rerokit
from rerokit.bounds.dpsgd import dpsgd_pld, epsilon_dpsgd, rero_dpsgd
from rerokit.bounds.options import Comparisons
from rerokit.bounds.tradeoff import dpsgd_tradeoff

SIGMA, Q = 1e-4, 1e-3
STEPS = [100, 1_000_000]


def _one_minus_never(T: int) -> float:
    return float(-mp.expm1(T * mp.log1p(-mp.mpf(Q))))


def _check_advantage(interval, T: int) -> None:
    lo, hi = interval
    tv_sup = _one_minus_never(T)
    assert lo <= hi and hi <= tv_sup * (1 + 1e-12) + 1e-15
    assert hi - lo <= 1e-6 * hi


@pytest.mark.parametrize("T", STEPS)
def test_reconstruction_risk_and_accountant(T: int) -> None:
    r = rerokit.reconstruction_risk(noise_multiplier=SIGMA, sample_rate=Q, steps=T, prior=1000)
    b = rero_dpsgd(SIGMA, Q, T, 1e-3, comparisons=False)
    assert r.gamma == b.value and r.gamma_interval == pytest.approx(b.interval, rel=1e-12, abs=0.0)
    _check_advantage(r.membership.advantage_interval, T)
    assert r.epsilon == epsilon_dpsgd(SIGMA, Q, T, 1e-5)
    pytest.importorskip("opacus")  # (RiskAccountant is an Opacus accountant)
    from rerokit.opacus import RiskAccountant

    a = RiskAccountant(prior=1000)
    a.history = [(SIGMA, Q, T)]
    assert a.get_risk().gamma == r.gamma


@pytest.mark.parametrize("T", STEPS)
def test_rero_dpsgd_with_membership(T: int) -> None:
    b = rero_dpsgd(SIGMA, Q, T, 1e-3, comparisons=Comparisons(membership=True))
    plain = rero_dpsgd(SIGMA, Q, T, 1e-3)
    assert b.method == "exact" and b.value == plain.value and b.interval == plain.interval
    m = b.extras["membership"]
    _check_advantage(m["advantage_interval"], T)
    for row in m["tpr_at_fpr"]:
        lo, hi = row["interval"]
        assert row["fpr"] <= hi and lo <= hi == row["tpr"]
    assert b.extras["epsilon"] == plain.extras["epsilon"]


@pytest.mark.parametrize("T", STEPS)
@pytest.mark.parametrize("adjacency", ["remove", "add_remove"])
def test_tradeoff_curve_methods(T: int, adjacency: str) -> None:
    c = dpsgd_tradeoff(SIGMA, Q, T, adjacency=adjacency)
    _check_advantage(c.advantage().interval, T)
    alphas = np.array([0.0, 1e-9, 1e-3, 0.1, 0.5, 0.9, 1.0])
    t = c.tpr_at_fpr(alphas)
    assert np.all(t.lower <= t.upper) and np.all(t.upper >= alphas) and np.all(t.lower >= 0.0)
    bt = c.beta(log_alpha=np.array([-700.0, -1.0]))
    assert np.all(bt.lower <= bt.upper)
    pts = c.curve(16)
    assert np.all(pts.beta_lower <= pts.beta_upper)
    for pi in (0.01, 0.5, 0.7):
        acc = c.bayes_accuracy(pi)
        assert acc.interval[0] <= acc.value <= 1.0
    g = c.reconstruction_success(1e-3)
    assert g.interval[0] <= g.value
    if adjacency == "remove":
        assert g.value == rero_dpsgd(SIGMA, Q, T, 1e-3, comparisons=False).value
    a = c.attribute_inference_success(10)
    assert a.interval[0] <= a.value
    assert c.epsilon(1e-5) == epsilon_dpsgd(SIGMA, Q, T, 1e-5)


def test_epsilon_closed_form_against_the_pld() -> None:
    e = epsilon_dpsgd(SIGMA, Q, 100, 1e-5)
    pld_eps = dpsgd_pld([(SIGMA, Q, 100)], lower=False, add_direction=True).epsilon(1e-5)
    assert e * (1 - 1e-6) <= pld_eps  # the PLD's epsilon bounds the truth, which the lower end is below
    assert e <= pld_eps  # (and here the closed form is the tighter of the two)


@pytest.mark.parametrize("T", STEPS)
@pytest.mark.parametrize("command", ["bound", "report"])
def test_cli(T: int, command: str) -> None:
    from rerokit.cli import main

    argv = (["bound", "dpsgd", "--prior-size", "1000"] if command == "bound" else ["report"]) + [
        "--noise-multiplier", str(SIGMA), "--sample-rate", str(Q), "--steps", str(T), "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    d = json.loads(out.getvalue())
    _check_advantage(d["membership"]["advantage_interval"], T)
