"""Two choices of computation in the schedule PLD's sizing (rerokit.bounds.pld.builder): the windows of
the statistic (and the ADD direction) left to first use where their parts' whole support fits
MAX_FFT (the same windows, the same brackets, as computed eagerly), the shallowest truncation
with a small mass at +infinity found by bisection (the same as the linear scan it replaced), and the
moments' support from a first label and known nonzero indices (the same arrays as from the labels)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld
from rerokit.bounds.pld import builder
from rerokit.bounds.pld.compose import chernoff_window, moment_support


def test_short_schedules_size_the_statistic_windows_on_first_use(monkeypatch) -> None:
    segs = [(1.338, 3.06e-5, 21)]
    pld = dpsgd_pld(segs)
    assert ("window", "remove") in pld._built  # noqa: SLF001 - the sizing's own window stays eager
    assert ("window", "stat_p") not in pld._built and ("window", "stat_q") not in pld._built  # noqa: SLF001
    levels = np.log([1e-3, 1e-6, 1e-9])
    lazy = pld.power_lower(levels)
    _, pp, qq = pld._stat_parts()  # noqa: SLF001
    assert pld._built[("window", "stat_p")] == chernoff_window(pp, pld.h, pld.log_tau)  # noqa: SLF001
    assert pld._built[("window", "stat_q")] == chernoff_window(qq, pld.h, pld.log_tau)  # noqa: SLF001
    # every window eager again: the limit at the whole support (no longer below it), above every window
    monkeypatch.setattr(builder, "MAX_FFT", min(sum(T * (p.size - 1) for _, p, T in parts) for parts in (pp, qq)))
    eager = dpsgd_pld(segs)
    assert ("window", "stat_p") in eager._built  # noqa: SLF001
    np.testing.assert_array_equal(eager.power_lower(levels), lazy)


def test_long_schedules_keep_the_eager_windows() -> None:
    """T 1e5 steps of ~1e3 labels: T (size - 1) is above MAX_FFT, so a window could be too wide and
    is sized now (a too-wide one coarsens the grid here, never at query time)."""
    pld = dpsgd_pld([(1.0, 1e-2, 100_000)])
    _, pp, _ = pld._stat_parts()  # noqa: SLF001
    assert sum(T * (pmf.size - 1) for _, pmf, T in pp) >= builder.MAX_FFT
    assert ("window", "stat_p") in pld._built and ("window", "stat_q") in pld._built  # noqa: SLF001


def _scan(pld: builder.SchedulePLD, log_alpha: float) -> float | None:
    """The linear scan that _find_inf_truncation replaced: up in steps of 0.5 from the target."""
    target = log_alpha - builder._INF_DEPTH
    best = None
    lt = min(max(target, math.log(1e-300)), pld.log_tau)
    while lt <= pld.log_tau:
        inf = pld._inf_mass(lt)  # noqa: SLF001
        if not (inf > 0.0 and math.log(inf) <= target):
            break
        best = lt
        lt += 0.5
    return best


@pytest.mark.parametrize("segs, kappa", [
    ([(1.338, 3.06e-5, 21)], 1.28e-20),
    ([(0.988, 3.08e-5, 361)], 1.9e-13),
    ([(1.0, 1e-4, 100_000)], 1e-9),
    ([(2.0, 1e-3, 10_000)], 1e-30),
    ([(0.731, 1.05e-7, 86_529)], 1.9e-13),
    ([(1.5, 0.01, 1000), (3.0, 2e-3, 5000)], 1e-20),
    ([(1.0, 1e-4, 1000)], math.exp(-700.0)),
])
def test_inf_truncation_bisection_equals_the_scan(segs, kappa) -> None:
    pld = dpsgd_pld(segs)
    la = math.log(kappa) if kappa > 0 else -700.0
    got = pld._find_inf_truncation(la)  # noqa: SLF001
    assert got == _scan(pld, la)


@pytest.mark.parametrize("density", [0.01, 0.4, 0.6, 1.0])
def test_moment_support_from_a_first_label_is_the_labels_form(density) -> None:
    """compose.moment_support(off, pmf, nonzero): the labels off, off + 1, ... made only where needed
    (the sparse steps' nonzero masses alone below half, else all), bit for bit the arrays that
    moment_support(off + arange, pmf) gives, with the nonzero indices computed or passed in."""
    rng = np.random.default_rng(3)
    pmf = np.where(rng.random(5000) < density, rng.random(5000), 0.0)
    off = -1234
    want = moment_support(off + np.arange(pmf.size, dtype=float), pmf)
    for got in (moment_support(off, pmf), moment_support(off, pmf, np.flatnonzero(pmf))):
        assert got[0].dtype == want[0].dtype and np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])
    assert (want[1].size < pmf.size) == (density < 0.5)
