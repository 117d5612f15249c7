"""The certified queries of DiscretePLD / GridPMF / ThresholdTests other than power: hockey_stick,
epsilon, mass_at_least's sides and ThresholdTests.points, against mpmath evaluations of the same
quantities on the stored masses at the exact losses (offset + i) h (no rerokit code in the
references): never on the wrong side, and within 1e-12 of the exact value."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.discrete import DiscretePLD, GridPMF, ThresholdTests, _TopSums

_REL = mp.mpf("1e-12")


def _pmf(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.arange(n) - n / 2
    pmf = np.exp(-0.5 * (x / (n / 8.0)) ** 2) * rng.uniform(0.5, 1.5, n)
    pmf[rng.random(n) < 0.1] = 0.0
    return pmf / pmf.sum()


def _pld(seed: int, n: int, h: float, offset: int, **errors: float) -> DiscretePLD:
    return DiscretePLD(h, offset, _pmf(seed, n), **errors)


def _mp_error(pld: DiscretePLD) -> mp.mpf:
    return mp.mpf(pld.inf_mass) + mp.mpf(pld.tail) + mp.mpf(pld.roundoff)


def _mp_delta(pld: DiscretePLD, eps: float) -> tuple[mp.mpf, mp.mpf]:
    """(delta at eps of the stored pair, errors included; the P-mass above eps - loss_shift), exact."""
    t = mp.mpf(float(eps)) - mp.mpf(pld.loss_shift)
    d, above = _mp_error(pld), mp.mpf(0)
    for i, p in enumerate(pld.pmf):
        lam = (pld.offset + i) * mp.mpf(pld.h)
        if p and lam > t:
            d += mp.mpf(float(p)) * -mp.expm1(t - lam)
            above += mp.mpf(float(p))
    return d, above


_CASES = [  # (seed, n, h, offset, errors); the last: losses beyond 700 (the running log-sums' path)
    (1, 1500, 2e-3, -700, {}),
    (2, 1200, 3e-3, -300, {"tail": 1e-13, "roundoff": 3e-15, "inf_mass": 1e-14, "loss_shift": 2.7e-11}),
    (3, 900, 0.7, -1200, {"tail": 1e-17, "loss_shift": 1e-13}),
]


@pytest.mark.parametrize("seed,n,h,offset,errors", _CASES)
def test_hockey_stick_against_mpmath(seed: int, n: int, h: float, offset: int, errors: dict) -> None:
    mp.mp.dps = 40
    pld = _pld(seed, n, h, offset, **errors)
    if seed == 3:
        assert pld.top_null is None  # (the test covers the fallback path)
    lo, hi = pld.losses[[n // 3, 2 * n // 3]]
    grid = pld.losses[np.linspace(n // 3, 2 * n // 3, 12).astype(int)]
    # grid points (where the computed losses decide which atoms lie above), midpoints, the shifted
    # grid points, and eps below / above every atom
    eps = np.concatenate((grid, grid + h / 2, grid + pld.loss_shift, [pld.losses[0] - 1.0, pld.losses[-1] + 1.0],
                          np.linspace(lo, hi, 7)))
    got = pld.hockey_stick(eps)
    for e, g in zip(eps, got):
        exact, above = _mp_delta(pld, e)
        g = mp.mpf(float(g))
        assert g >= exact, (e, g, exact)
        assert g - exact <= _REL * exact, (e, g, exact, above)


def _mp_epsilon(pld: DiscretePLD, delta: float) -> mp.mpf:
    """The smallest eps >= 0 with delta(eps) <= delta, by bisection on the exact profile."""
    if _mp_error(pld) >= delta:
        return mp.inf
    a, b = mp.mpf(-1000), mp.mpf(1000)
    for _ in range(140):
        mid = (a + b) / 2
        if _mp_delta_fast(pld, mid) <= delta:
            b = mid
        else:
            a = mid
    return max(mp.mpf(0), b)


def _mp_delta_fast(pld: DiscretePLD, t_eps: mp.mpf) -> mp.mpf:
    t = t_eps - mp.mpf(pld.loss_shift)
    d = _mp_error(pld)
    for lam, p in _LAMS[id(pld)]:
        if lam > t:
            d += p * -mp.expm1(t - lam)
    return d


_LAMS: dict[int, list] = {}


@pytest.mark.parametrize("seed,n,h,offset,errors", _CASES[:2] + [(3, 900, 0.05, 14500, {"tail": 1e-17})])
def test_epsilon_against_mpmath(seed: int, n: int, h: float, offset: int, errors: dict) -> None:
    mp.mp.dps = 40
    pld = _pld(seed, n, h, offset, **errors)
    _LAMS[id(pld)] = [((pld.offset + i) * mp.mpf(pld.h), mp.mpf(float(p))) for i, p in enumerate(pld.pmf) if p]
    try:
        for delta in (0.3, 1e-2, 1e-5, 1e-9, 1e-12):
            got = pld.epsilon(delta)
            exact = _mp_epsilon(pld, delta)
            if exact == mp.inf:
                assert got == math.inf
                continue
            assert mp.mpf(got) >= exact, (delta, got, exact)
            assert mp.mpf(got) - exact <= _REL * max(1, exact), (delta, got, exact)
    finally:
        del _LAMS[id(pld)]


@pytest.mark.parametrize("n", [1, 17, 5000])
def test_mass_at_least_sides(n: int) -> None:
    rng = np.random.default_rng(n)
    pmf = np.exp(rng.uniform(-50.0, 0.0, n)) * (rng.random(n) > 0.1)
    g = GridPMF(1e-3, -n // 2, pmf)
    labels = np.concatenate(([g.offset - 5, g.offset, g.offset + n, g.offset + n + 3],
                             rng.integers(g.offset, g.offset + n, 50)))
    mid, lo, hi = (g.mass_at_least(labels, s) for s in (0, -1, 1))
    for lab, m, a, b in zip(labels, mid, lo, hi):
        exact = math.fsum(pmf[max(0, lab - g.offset):])
        assert a <= exact <= b and a <= m <= b
        assert b - a <= 1e-14 * exact
    with pytest.raises(ValueError, match="side"):
        g.mass_at_least(labels, 2)


def test_points_against_mpmath() -> None:
    mp.mp.dps = 40
    rng = np.random.default_rng(7)
    n = 800
    pq = _pmf(8, n)
    pp = pq * np.exp((np.arange(n) - n / 2) / 200.0) * rng.uniform(0.8, 1.2, n)
    p = GridPMF(1e-3, -400 + 9, pp / pp.sum(), tail=1e-15, roundoff=3e-16)
    q = GridPMF(1e-3, -400, pq, tail=2e-15, roundoff=1e-16)
    p_lo, q_hi = ThresholdTests(p, q).points()
    labels = np.concatenate((np.arange(p.offset, p.offset + n + 1), np.arange(q.offset, q.offset + n + 1)))
    assert p_lo.shape == q_hi.shape == labels.shape

    def exact(g: GridPMF, s: int) -> mp.mpf:
        return mp.fsum(mp.mpf(float(v)) for v in g.pmf[max(0, s - g.offset):])

    for t in np.linspace(0, labels.size - 1, 60).astype(int):
        s = int(labels[t])
        e_p = exact(p, s) - mp.mpf(p.tail) - mp.mpf(p.roundoff)
        e_q = exact(q, s) + mp.mpf(q.tail) + mp.mpf(q.roundoff)
        assert mp.mpf(float(p_lo[t])) <= max(0, e_p) and mp.mpf(float(q_hi[t])) >= min(1, e_q), s
        assert mp.mpf(float(p_lo[t])) >= e_p - _REL * abs(e_p) and mp.mpf(float(q_hi[t])) <= e_q * (1 + _REL), s


def test_error_terms_rounded_up() -> None:
    pld = DiscretePLD(1e-3, 0, np.array([1.0]), tail=0.1, roundoff=0.2, inf_mass=0.3)
    assert mp.mpf(pld.error) >= mp.mpf(0.1) + mp.mpf(0.2) + mp.mpf(0.3)
    assert mp.mpf(pld.slack) >= mp.mpf(0.1) + mp.mpf(0.2)
    assert DiscretePLD(1e-3, 0, np.array([1.0])).error == 0.0


def test_top_sums_at_matches_count() -> None:
    """The vectorised sums at given counts are the sums :meth:`_TopSums.count` forms, in any batch."""
    rng = np.random.default_rng(11)
    t = np.exp(rng.uniform(-40.0, 0.0, 70_001))
    ts = _TopSums.of(t)
    cnt, val = ts.count(rng.uniform(0.0, t.sum(), 200), strict=True)
    assert np.array_equal(ts.at(cnt), val)
    assert np.array_equal(ts.at(cnt[:3]), val[:3])
    every = ts.at(np.arange(t.size + 1))
    assert every[0] == 0.0 and np.all(np.diff(every) >= 0)
    assert abs(every[-1] - math.fsum(t)) <= ts.rel * math.fsum(t)


@pytest.mark.parametrize("k,h", [(5, 0.1), (12345, 0.1), (-29, 0.1), (11, 0.3)])
def test_hockey_stick_atom_just_above_its_computed_loss(k: int, h: float) -> None:
    """One atom whose computed loss fl(k h) lies below its exact loss: at eps = fl(k h) its term
    1 - e^{eps - k h} is positive, and the bound must cover it (a computed comparison alone misses it)."""
    mp.mp.dps = 40
    lam = k * mp.mpf(h)
    eps = k * h
    assert mp.mpf(eps) < lam  # (the cases are chosen so)
    pld = DiscretePLD(h, k, np.array([1.0]))
    got = mp.mpf(float(pld.hockey_stick(eps)[0]))
    exact = -mp.expm1(mp.mpf(eps) - lam)
    assert exact <= got <= 8 * abs(mp.mpf(eps)) * mp.mpf(2) ** -52


@pytest.mark.parametrize("n", [0, 16, 33, 4096])
def test_top_sums_at_same_in_any_batch(n: int) -> None:
    """A count's sum does not depend on the batch it is asked in (one count, or every count)."""
    t = np.exp(np.random.default_rng(n).uniform(-30.0, 0.0, n))
    ts = _TopSums.of(t)
    every = ts.at(np.arange(n + 1))
    assert np.array_equal(every, [ts.at(np.array([c]))[0] for c in range(n + 1)])


def test_few_atoms_random_against_mpmath() -> None:
    """Few-atom PLDs at random grids: hockey_stick at the computed losses (where a computed
    comparison decides which atoms lie above eps) and epsilon at random levels, never on the
    wrong side of the exact values."""
    mp.mp.dps = 40
    rng = np.random.default_rng(1)
    for _ in range(40):
        n, h, off = int(rng.integers(1, 4)), float(rng.uniform(0.01, 1.0)), int(rng.integers(-5, 30))
        pmf = rng.uniform(0.0, 1.0, n)
        pmf /= pmf.sum() * rng.uniform(1.0, 3.0)
        pld = DiscretePLD(h, off, pmf)
        atoms = [((off + i) * mp.mpf(h), mp.mpf(float(p))) for i, p in enumerate(pmf)]

        def delta_at(t: mp.mpf) -> mp.mpf:
            return mp.fsum(p * -mp.expm1(t - lam) for lam, p in atoms if lam > t)

        for e, g in zip(pld.losses, pld.hockey_stick(pld.losses)):
            assert mp.mpf(float(g)) >= delta_at(mp.mpf(float(e)))
        delta = float(pmf.sum() * rng.uniform(0.01, 0.9))
        a, b = mp.mpf(-100), mp.mpf(100)
        for _ in range(150):
            mid = (a + b) / 2
            a, b = (a, mid) if delta_at(mid) <= delta else (mid, b)
        exact = max(mp.mpf(0), b)
        got = mp.mpf(pld.epsilon(delta))
        assert exact <= got <= exact + _REL * max(1, exact)
