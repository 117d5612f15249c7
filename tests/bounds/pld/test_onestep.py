"""One step beside a composed schedule with the step in closed form (rerokit.bounds.pld.onestep,
SchedulePLD.one_step_upper, dpsgd._one_step_into): an upper end of the power, against references
independent of the engine.

References: (1) one subsampled step (sigma_a, q_a) beside T Gaussian steps of q = 1 (sigma_b),
whose loss is N(mu^2 / 2, mu^2) under P and N(-mu^2 / 2, mu^2) under Q with mu = sqrt(T) / sigma_b
(Dong, Roth & Su 2022): the test L_A + L_B > l has P- and Q-probabilities
int p(x) Phi((L_A(x) -+ mu^2/2 - l) / mu) dx, by mpmath quadrature at 30 digits (its error far
below the 1e-9 slack used); that test is most powerful at its own level, so its P-probability is
the power there. (2) The importance-sampled Monte Carlo of the exact outputs
(tests/bounds/pld/_mc_reference.py) for one step beside a long subsampled segment, 4 standard errors.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mpmath as mp
import pytest

from rerokit.bounds import dpsgd
from rerokit.bounds.dpsgd import dpsgd_pld

sys.path.insert(0, str(Path(__file__).parent))
from _mc_reference import mc_one_plus_bulk  # noqa: E402


def _gaussian_rest(sa: float, qa: float, sb: float, tb: int, l: float) -> tuple[float, float]:
    """(log power, log level) of the test L > l for one step (sa, qa) beside tb steps (sb, q = 1)."""
    with mp.workdps(30):
        mu = mp.sqrt(tb) / sb
        s, q = mp.mpf(sa), mp.mpf(qa)

        def loss_a(x):
            return mp.log(1 - q + q * mp.exp((2 * x - 1) / (2 * s * s)))

        pts = [-mp.inf, -10 * s, 0, 1, 5 * s, 10 * s, 20 * s, 40 * s, mp.inf]
        level = mp.quad(lambda x: mp.npdf(x, 0, s) * mp.ncdf((loss_a(x) - mu * mu / 2 - l) / mu), pts)
        power = mp.quad(lambda x: ((1 - q) * mp.npdf(x, 0, s) + q * mp.npdf(x, 1, s))
                        * mp.ncdf((loss_a(x) + mu * mu / 2 - l) / mu), pts)
        return float(mp.log(power)), float(mp.log(level))


@pytest.mark.parametrize("sa,qa,sb,tb,l,width", [
    (1.0, 1e-4, 20.0, 100, 3.0, 1e-3),  # measured 5.1e-4 above the truth (log power -19.2276)
    (1.3, 2e-4, 40.0, 400, 4.0, 1e-3),  # 4.2e-4 (log power -33.0139)
    (0.9, 1e-3, 50.0, 1000, 6.0, 0.1),  # 4.4e-2: valid, loose (the composed tilt answers there)
])
def test_one_step_upper_is_above_the_exact_power(sa, qa, sb, tb, l, width) -> None:
    """The upper end never below the exact power (quadrature), within ``width`` in log of it; the
    full bracket (the better ends of every path) contains it."""
    log_power, log_level = _gaussian_rest(sa, qa, sb, tb, l)
    segs = [(sa, qa, 1), (sb, 1.0, tb)]
    up = dpsgd_pld(segs).one_step_upper(log_level, l)
    assert up is not None
    assert log_power - 1e-9 <= up <= log_power + width
    b = dpsgd.rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    assert math.log(b.interval[0]) - 1e-9 <= log_power <= math.log(b.value) + 1e-9


def test_one_jump_bracket_with_the_step_in_closed_form(monkeypatch) -> None:
    """sigma 1.298, q 1.3e-4 once beside sigma 3.024, q 2.6e-4 for 1585 steps, at the level of the
    test L >= 0.483 (~e^-68): the composed tilts' upper end was e^-67.588, 2.4 % above the lower
    end; with the step in closed form the bracket is 2.6e-4 wide (measured), the Monte Carlo
    estimate inside."""
    segs = [(1.298, 1.3e-4, 1), (3.024, 2.6e-4, 1585)]
    log_power, log_level, se = mc_one_plus_bulk(1.298, 1.3e-4, 3.024, 2.6e-4, 1585, 0.483, 60_000, seed=1)
    tol = 4.0 * se
    b = dpsgd.rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    lo, up = math.log(b.interval[0]), math.log(b.value)
    assert lo - tol <= log_power <= up + tol
    assert up - lo <= 1e-3
    monkeypatch.setattr(dpsgd, "_one_step_into", lambda r, pld, lks: r)
    off = dpsgd.rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    assert math.log(off.value) - math.log(off.interval[0]) > 0.01
    assert up <= math.log(off.value)


def test_one_step_upper_not_applicable() -> None:
    """None without a segment of one step, with a group of examples, or with a single segment."""
    lk = math.log(1e-30)
    assert dpsgd_pld([(1.2, 1e-3, 2), (3.0, 1e-3, 100)]).one_step_upper(lk, 0.5) is None
    assert dpsgd_pld([(1.2, 1e-3, 1), (3.0, 1e-3, 100)], group_size=2).one_step_upper(lk, 0.5) is None
    assert dpsgd_pld([(1.2, 1e-3, 1)]).one_step_upper(lk, 0.5) is None
