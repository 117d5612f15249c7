"""The batched steps' row-wise pieces (rerokit.bounds.pld.batch) against their per-step references:
the exact excess against math.fsum (Shewchuk's exact summation), the suffix/prefix error bounds and
the mass flows against rerokit.bounds.pld.step's per-step functions on rows with many runs and long
flow chains, and whole steps in many small padded blocks against dpsgd_step_pld."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from rerokit.bounds.pld import batch

sys.path.insert(0, str(Path(__file__).parent))
from test_batch import assert_batched_equal_per_step  # noqa: E402 - batched steps against the per-step code

_step = sys.modules["rerokit.bounds.pld.step"]
_builder = sys.modules["rerokit.bounds.pld.builder"]


def _segments(rng):
    segs = []
    for n in (1, 2, 3, 8, 9, 100, 4000, 70_000):
        for kind in range(6):
            p = rng.random(n) ** rng.uniform(1.0, 40.0)
            p /= p.sum()
            if kind == 1:  # sums exactly to 1 (excess 0: the interval straddles a rounding)
                p = np.concatenate(([0.5, 0.25, 0.25], np.zeros(n)))
            elif kind == 2:
                p = p * (1.0 + 1e-13)
            elif kind == 3:  # subnormal and tiny masses
                p[rng.integers(0, p.size, size=min(5, p.size))] = 1e-310
                p[rng.integers(0, p.size, size=min(5, p.size))] = 2.0 ** -120
            elif kind == 4:  # an excess far below the masses' resolution
                p = np.concatenate(([1.0 - 2.0 ** -53, 2.0 ** -53], np.full(n, 1e-45)))
            elif kind == 5:
                p = p * 3.0  # sum > 1: excess 2
            segs.append(p)
    segs.append(np.array([9.0, 1.0]))  # sum >= 8: the extractions do not apply (fsum)
    segs.append(np.array([0.5, -0.25, 0.75]))  # a negative mass (fsum)
    return segs


def test_exact_excess_is_fsums_value():
    rng = np.random.default_rng(11)
    segs = _segments(rng)
    x = np.concatenate(segs)
    starts = np.cumsum([0] + [s.size for s in segs[:-1]])
    extra = rng.random(len(segs)) * 1e-12
    got = batch.exact_excess(x, starts, extra)
    ref = np.array([math.fsum(s.tolist() + [e, -1.0]) for s, e in zip(segs, extra)])
    assert np.array_equal(got, ref)
    assert np.array_equal(batch.exact_excess(x, starts), [math.fsum(s.tolist() + [-1.0]) for s in segs])


def test_segment_excesses_over_group_boundaries_and_empty_pmfs(monkeypatch):
    monkeypatch.setattr(batch, "_BLOCK_POINTS", 500)
    rng = np.random.default_rng(12)
    parts = [(s, float(rng.random()) * 1e-14) for s in _segments(rng)]
    parts.insert(3, (np.zeros(0), 0.25))
    got = batch.segment_excesses(parts)
    ref = [math.fsum(np.asarray(p).tolist() + [inf, -1.0]) for p, inf in parts]
    assert np.array_equal(got, ref)


def test_mass_defect_and_step_rounding_equal_their_fsum_formulas():
    rng = np.random.default_rng(13)
    parts = []
    for n in rng.integers(1, 3000, size=40):
        p = rng.random(int(n)) ** 8
        p /= p.sum()
        parts.append((p * (1.0 + float(rng.normal()) * 1e-15), float(rng.random()) * 1e-13, int(rng.integers(1, 9))))
    ref = sum(T * abs(math.fsum(p.tolist() + [inf, -1.0])) for p, inf, T in parts) * (1.0 + 1e-9) + 1e-300
    assert batch.mass_defect_batched(parts) == ref
    rows = [(p, inf, T, float(rng.random()) * 1e-12) for p, inf, T in parts]
    tot, exc = 0.0, 0.0
    for p, inf, T, err in rows:
        tot += T * err
        exc += T * max(0.0, math.fsum(p.tolist() + [inf, -1.0]))
    assert _builder._step_rounding(rows) == tot * math.exp(exc * (1.0 + 1e-9)) * (1.0 + 1e-9)


def _rows(rng, R, W):
    """Rows of decreasing tails with a noisy side choice (many runs of buckets), edge-padded."""
    m = rng.integers(3, W + 1, size=R)
    m[0] = W
    p_gt = np.sort(rng.random((R, W)) ** 3, axis=1)[:, ::-1].copy()
    p_le = 1.0 - p_gt
    for r in range(R):
        p_gt[r, m[r]:] = p_gt[r, m[r] - 1]
        p_le[r, m[r]:] = p_le[r, m[r] - 1]
    use = rng.random((R, W - 1)) < 0.5  # any side choice is covered by the bounds
    raw = np.where(use, p_gt[:, :-1] - p_gt[:, 1:], p_le[:, 1:] - p_le[:, :-1])
    e_gt = 1e-16 * p_gt + 1e-300 + rng.random((R, W)) * 1e-17
    e_le = 1e-16 * p_le + 1e-300 + rng.random((R, W)) * 1e-17
    for r in range(R):
        e_gt[r, m[r]:] = e_gt[r, m[r] - 1]
        e_le[r, m[r]:] = e_le[r, m[r] - 1]
    return p_gt, p_le, e_gt, e_le, use, raw, m


def test_suffix_prefix_rows_equal_step_suffix_errors():
    rng = np.random.default_rng(14)
    R, W = 7, 60
    p_gt, p_le, e_gt, e_le, use, raw, m = _rows(rng, R, W)
    colf = np.arange(W + 2)[None, :]
    scale_suf = np.where(colf > m[:, None], 0.0, 1.0 + 1e-9)
    scale_pre = np.where(colf > (m + 1)[:, None], 0.0, 1.0 + 1e-9)
    f_suf, f_pre, local = batch._suffix_prefix(e_gt, e_le, use, raw, m, scale_suf, scale_pre)
    for r in range(R):
        k = int(m[r])
        u = use[r, :k - 1]
        args = (p_gt[r, :k], p_le[r, :k], e_gt[r, :k], e_le[r, :k])
        ref_suf, ref_local = _step._suffix_errors(*args, u)
        ref_rev, _ = _step._suffix_errors(args[1][::-1], args[0][::-1], args[3][::-1], args[2][::-1], ~u[::-1])
        assert np.array_equal(f_suf[r, :k + 2], ref_suf) and not f_suf[r, k + 2:].any()
        assert np.array_equal(f_pre[r, :k + 2], ref_rev[::-1]) and not f_pre[r, k + 2:].any()
        assert np.array_equal(local[r, :k - 1], ref_local)


@pytest.mark.parametrize("up", [True, False])
def test_flow_rows_equal_step_flows_on_long_chains(up):
    rng = np.random.default_rng(15 + up)
    R, W = 6, 2000
    m = rng.integers(2, W + 1, size=R)
    p = np.zeros((R, W))
    F = np.zeros((R, W + 1))
    for r in range(R):
        k = int(m[r])
        p[r, :k] = rng.random(k) ** 4 * 1e-3
        # large bounds at a few cuts: chains of several hundred positions (beyond step's 256 sweeps)
        F[r, :k] = rng.random(k) * 1e-6
        F[r, rng.integers(0, k, size=3)] = 0.3
        F[r, k - 1] = 0.3
    got = batch._flow_rows(p, F, up)
    ref_fn = _step._flow_up if up else _step._flow_down
    for r in range(R):
        k = int(m[r])
        Fr = np.concatenate((F[r, :k], [0.0]))
        assert np.array_equal(got[r, :k], ref_fn(p[r, :k], Fr))
        assert not got[r, k:].any()


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_steps_in_small_padded_blocks_equal_the_per_step_code(monkeypatch, direction):
    rng = np.random.default_rng(16)
    segs = [(float(rng.uniform(0.5, 6.0)), float(10 ** rng.uniform(-4, -0.3)), 1) for _ in range(24)]
    segs += [(2.0, 1.0, 1), (0.9, 0.999, 1), (30.0, 1e-6, 1)]
    monkeypatch.setattr(batch, "_BLOCK_POINTS", 6000)  # several rows of different widths per block
    assert_batched_equal_per_step(monkeypatch, segs, 2e-3, direction, math.log(1e-17 / 30))


def _window_parts(rng, n):
    parts = []
    for _ in range(n):
        k = int(rng.integers(1, 3000))
        p = rng.random(k) ** 6
        parts.append((int(rng.integers(-2000, 500)), p / p.sum(), int(rng.integers(1, 40))))
    return parts


def test_window_in_groups_equals_the_window_on_all_parts(monkeypatch):
    rng = np.random.default_rng(17)
    parts = _window_parts(rng, 60)
    monkeypatch.setattr(batch, "_BLOCK_POINTS", 1 << 30)
    whole = batch.moment_window_batched(parts, 1e-3, math.log(1e-17))
    monkeypatch.setattr(batch, "_BLOCK_POINTS", 512)  # a group per few parts
    assert batch.moment_window_batched(parts, 1e-3, math.log(1e-17)) == whole


def test_chord_moments_bound_the_exact_moments():
    import mpmath

    rng = np.random.default_rng(18)
    parts = _window_parts(rng, 5)
    (mass, d, a, w, _, cstarts, nb) = batch._blocks(parts)
    for lam in (-0.02, -1e-3, 1e-3, 0.05):
        got = batch._log_chord_moments(mass, d, a, w, cstarts, lam, nb)
        for i, (off, p, _) in enumerate(parts):
            exact = mpmath.log(mpmath.fsum(mpmath.mpf(float(x)) * mpmath.exp(lam * (off + j)) for j, x in enumerate(p)))
            assert got[i] >= float(exact) - 1e-12 * max(1.0, abs(float(exact)))
            assert got[i] <= float(exact) + lam * lam * 64  # within the chords' stated slack (lam^2 B^2 / 8 per step)
