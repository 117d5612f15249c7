"""Many distinct DP-SGD steps at once: the per-step work of :mod:`rerokit.bounds.pld.step`,
:func:`rerokit.bounds.pld.compose.chernoff_window` and the builder's mass defect, vectorised across
steps on one flat array (a schedule whose noise multiplier or sampling rate changes every step, e.g.
an Opacus noise scheduler, has thousands of distinct steps; one call per step cost ~20 ms each).

Every function here computes the same quantities with the same floating-point expressions as its
per-step twin (element-wise, so the step masses are bit-identical while the flat array stays below
:data:`rerokit.bounds.pld.normal.SCIPY_ABOVE` points per chunk; above it scipy's vectorised ``ndtr``
is used, as the per-step code does for large grids); only sums over a step's points may be taken
in another order (window choice: any window is valid; mass defect: a proven bound, below).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.normal import SCIPY_ABOVE, ndtr, normal_isf_log
from rerokit.bounds.pld.step import MAX_STEP_WIDTH, StepPLD, StepTooWide, remove_loss, step_from_tails

__all__ = ["BATCH_MIN", "step_plds_batched", "moment_window_batched", "mass_defect_batched"]

BATCH_MIN = 16  # distinct steps from which the builder uses the batched functions
_CHUNK_POINTS = 4_000_000  # grid points per vectorised chunk (bounds the temporaries' memory)


def _ranges(sigmas: np.ndarray, qs: np.ndarray, direction: str, log_tau: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rerokit.bounds.pld.step.loss_range` (k = 1) for many steps (the same scalar calls,
    with the normal quantile computed once)."""
    z = normal_isf_log(log_tau)
    lo = np.empty(sigmas.size)
    hi = np.empty(sigmas.size)
    for i, (s, q) in enumerate(zip(sigmas.tolist(), qs.tolist())):
        if direction == "remove":
            lo[i], hi[i] = float(remove_loss(-s * z, s, q)), float(remove_loss(1 + s * z, s, q))
        else:
            lo[i], hi[i] = -float(remove_loss(s * z, s, q)), -float(remove_loss(-s * z, s, q))
    return lo, hi


def _x_of_remove_loss_flat(l: np.ndarray, s2: np.ndarray, q: np.ndarray, logq: np.ndarray,
                           one_m_q: np.ndarray) -> np.ndarray:
    """:func:`rerokit.bounds.pld.step._x_of_remove_loss` (k = 1) with per-point sigma^2, q, log q, 1-q
    (each branch evaluated on its own points only: the same values)."""
    pos = l > 0
    lg = np.empty(l.size)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lp = l[pos]
        lg[pos] = lp + np.log1p(-one_m_q[pos] * np.exp(-lp))
        neg = ~pos
        lg[neg] = np.log(np.expm1(l[neg]) + q[neg])
        x = s2 * (lg - logq) + 0.5
        x[np.isnan(x)] = -np.inf
        full = q == 1.0  # q = 1: x = sigma^2 l + 1/2
        if full.any():
            x = np.where(full, s2 * l + 0.5, x)
    return x


def _ndtr_pairs(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Phi(-t), Phi(t)). For large arrays (scipy's ``ndtr``, which for |t| >= 1 returns
    y = erfc(|t|/sqrt2)/2 on the lower side and 1 - y on the upper) one evaluation serves both,
    with the same values as two calls; small arrays: :func:`ndtr` twice (libm's erfc)."""
    if 2 * t.size <= SCIPY_ABOVE:
        both = ndtr(np.concatenate((-t, t)))
        return both[: t.size], both[t.size:]
    from scipy.special import ndtr as _scipy_ndtr  # what ndtr uses at this size

    a = np.abs(t)
    y = _scipy_ndtr(-a)  # Phi(-|t|)
    hi = 1.0 - y
    lo_side = np.where(t >= 0, y, hi)
    hi_side = np.where(t >= 0, hi, y)
    mid = a < 1.0  # scipy uses erf there: evaluate those directly
    if mid.any():
        tm = t[mid]
        v = _scipy_ndtr(np.concatenate((-tm, tm)))
        lo_side[mid] = v[: tm.size]
        hi_side[mid] = v[tm.size:]
    return lo_side, hi_side


def step_plds_batched(segs: Sequence[tuple[float, float, int]], h: float, direction: str,
                      log_tau: float) -> list[StepPLD]:
    """:func:`rerokit.bounds.pld.step.dpsgd_step_pld` (group size 1, ``"remove"`` or ``"add"``) for
    many (sigma, q) at once: the grids of all steps on one flat array, one ``ndtr`` call per chunk.

    Args:
      segs: (sigma, q, T) triples (T unused).
      h: grid step.
      direction: "remove" or "add".
      log_tau: natural log of the tail mass cut off on each side of each step.

    Returns:
      One :class:`StepPLD` per triple, in order (their arrays are views of shared flat arrays).

    Raises:
      StepTooWide: if one step's grid would exceed :data:`MAX_STEP_WIDTH` points.
    """
    if direction not in ("remove", "add"):
        raise ValueError(f"batched steps support 'remove' and 'add', got {direction!r}")
    sig = np.array([float(s) for s, _, _ in segs])
    qs = np.array([float(q) for _, q, _ in segs])
    l_lo, l_hi = _ranges(sig, qs, direction, log_tau)
    j_lo = np.floor(l_lo / h).astype(np.int64)
    j_hi = np.ceil(l_hi / h).astype(np.int64)
    width = j_hi - j_lo
    if width.size and int(width.max()) > MAX_STEP_WIDTH:
        raise StepTooWide(f"{int(width.max())} grid points for one step (max {MAX_STEP_WIDTH})")
    j_hi = np.maximum(j_hi, j_lo + 1)
    npts = (j_hi - j_lo + 1).astype(np.int64)
    out: list[StepPLD] = []
    i = 0
    while i < len(segs):  # chunks of at most ~_CHUNK_POINTS points (at least one step)
        cum = np.cumsum(npts[i:])
        j = i + max(1, int(np.searchsorted(cum, _CHUNK_POINTS, side="right")))
        out.extend(_chunk(sig[i:j], qs[i:j], j_lo[i:j], npts[i:j], h, direction))
        i = j
    return out


def _chunk(sig: np.ndarray, qs: np.ndarray, j_lo: np.ndarray, npts: np.ndarray, h: float,
           direction: str) -> list[StepPLD]:
    n = int(npts.sum())
    S = npts.size
    starts = np.zeros(S, dtype=np.int64)
    starts[1:] = np.cumsum(npts)[:-1]
    l = (np.arange(n, dtype=np.int64) + np.repeat(j_lo - starts, npts)) * h  # np.arange(j_lo, j_hi + 1) * h
    # per-step scalars computed as the per-step code does (Python floats), then spread
    s_l, q_l = sig.tolist(), qs.tolist()
    s2 = np.repeat(np.array([s * s for s in s_l]), npts)
    logq = np.repeat(np.array([math.log(q) for q in q_l]), npts)
    one_m_q = np.repeat(np.array([1.0 - q for q in q_l]), npts)
    qp = np.repeat(qs, npts)
    sp = np.repeat(sig, npts)
    x = _x_of_remove_loss_flat(l if direction == "remove" else -l, s2, qp, logq, one_m_q)
    del s2, logq
    # the four normal CDFs of step._tails: Phi(-x/s), Phi(x/s), Phi((1-x)/s), Phi((x-1)/s)
    n_neg, n_pos = _ndtr_pairs(x / sp)
    n_1mx, n_xm1 = _ndtr_pairs((x - 1.0) / sp)
    del sp
    mix_sf = one_m_q * n_neg + qp * n_1mx
    mix_cdf = one_m_q * n_pos + qp * n_xm1
    del n_1mx, n_xm1, one_m_q, qp
    if direction == "remove":
        tails = (mix_sf, mix_cdf, n_neg, n_pos, x)
    else:
        tails = (n_pos, n_neg, mix_cdf, mix_sf, x)
    # each step's buckets, split and their proven safe rounding from its slice of the flat tails
    # (bit-identical to dpsgd_step_pld: the same tails, the same per-step code)
    out = []
    st_l, n_l, jl, s_l, q_l = starts.tolist(), npts.tolist(), j_lo.tolist(), sig.tolist(), qs.tolist()
    for t in range(S):
        a0, m = st_l[t], n_l[t]
        views = tuple(arr[a0: a0 + m] for arr in tails)
        out.append(step_from_tails(s_l[t], q_l[t], h, direction, 1, jl[t], l[a0: a0 + m], views))
    return out


# --------------------------------------------------------------------------- the window

_BLOCK = 8  # labels per block of the chord bound on the moment functions


def _blocks(parts: Sequence[tuple[int, np.ndarray, int]]):
    """Each pmf cut into blocks of :data:`_BLOCK` consecutive labels (zero-padded): per block its mass
    P_b, its first moment about the block's first label D_b = sum_j p_j (j - a_b), its first label
    a_b, its width w_b (last label - first label, <= _BLOCK - 1) and its part."""
    B = _BLOCK
    sizes = np.array([np.asarray(p).size for _, p, _ in parts], dtype=np.int64)
    nb = -(-sizes // B)
    chunks = []
    for (_, p, _), m in zip(parts, nb.tolist()):
        p = np.asarray(p, dtype=float)
        chunks.append(p)
        pad = m * B - p.size
        if pad:
            chunks.append(np.zeros(pad))
    x = np.concatenate(chunks).reshape(-1, B)
    mass = x.sum(axis=1)
    d = x @ np.arange(B, dtype=float)
    cstarts = np.zeros(sizes.size, dtype=np.int64)
    cstarts[1:] = np.cumsum(nb)[:-1]
    part = np.repeat(np.arange(sizes.size), nb)
    k = np.arange(int(nb.sum()), dtype=np.int64) - cstarts[part]
    offs = np.array([int(o) for o, _, _ in parts], dtype=np.int64)
    a = offs[part] + B * k
    w = np.minimum(B - 1, sizes[part] - 1 - B * k).astype(np.int16)
    return mass, d, a, w, part, cstarts, nb


def _log_chord_moments(mass, d, a, w, cstarts, lam: float, reps=None) -> np.ndarray:
    """Per part an upper bound on log sum_j p_j e^{lam j}: e^{lam j} is convex, so on a block
    [a, a + w] it lies below its chord, e^{lam j} <= e^{lam a} (1 + (j - a) expm1(lam w) / w), and
    the block contributes at most e^{lam a} (P_b + D_b expm1(lam w) / w) (exact for w = 0); the sum
    over blocks as :func:`rerokit.bounds.pld.normal.logsumexp_rows` (terms below e^-700 of the
    part's largest count as e^-700: rounded up)."""
    with np.errstate(divide="ignore", under="ignore", invalid="ignore", over="ignore"):
        v = lam * a
        if w is None:  # point masses at the labels a
            t = np.log(mass)
        else:
            if w.dtype.itemsize <= 2 and w.min() >= 0:  # small widths: expm1(lam w) / w from a table
                wt = np.arange(int(w.max()) + 1, dtype=float)
                tab = np.where(wt > 0, np.expm1(lam * wt) / np.maximum(wt, 1.0), 0.0)
                t = tab[w]
            else:
                wf = np.maximum(w, 1).astype(float)
                t = np.where(w > 0, np.expm1(lam * wf) / wf, 0.0)
            t *= d
            t += mass
            np.log(t, out=t)
        v += t
        del t
        m = np.maximum.reduceat(v, cstarts)
        m = np.where(np.isfinite(m), m, 0.0)
        if reps is None:
            reps = np.diff(np.append(cstarts, v.size))
        v -= np.repeat(m, reps)
        np.maximum(v, -700.0, out=v)
        np.exp(v, out=v)
        return np.log(np.add.reduceat(v, cstarts)) + m


def moment_window_batched(parts: Sequence[tuple[int, np.ndarray, int]], h: float,
                          log_tau: float) -> tuple[float, float, int, int]:
    """The Chernoff window of :func:`rerokit.bounds.pld.compose.chernoff_window` for many parts at
    once, with each part's moment function bounded from above by chords over blocks of
    :data:`_BLOCK` labels (:func:`_log_chord_moments`: a valid Chernoff bound, wider than the exact
    moments by about lam^2 _BLOCK^2 / 8 per step in log, a fraction of a percent of the window),
    so the work per lam is on 1/_BLOCK of the points. lam is chosen as there (the variance from the
    blocks' masses at their mean labels, which only guides the choice), on blocks of ~256 points.

    Returns:
      (hi, lo, lo_sup, hi_sup): the bounds on the top and bottom labels (floats, maybe infinite)
      and (a superset of) the support of the composition.
    """
    mass, d, a, w, part, cstarts, nb = _blocks(parts)
    counts = np.array([float(c) for _, _, c in parts])
    cnt_i = np.array([int(c) for _, _, c in parts], dtype=object)
    # support (a superset): the first and last blocks with mass, from their first and last labels
    has = mass > 0
    big = np.iinfo(np.int64).max
    lo_lab = np.minimum.reduceat(np.where(has, a, big), cstarts)
    hi_lab = np.maximum.reduceat(np.where(has, a + w.astype(np.int64), -big), cstarts)
    lo_sup = int(np.sum(cnt_i * lo_lab.astype(object)))
    hi_sup = int(np.sum(cnt_i * hi_lab.astype(object)))
    # variance (only to choose lam): each block's mass at its mean label
    tot = np.add.reduceat(mass, cstarts)
    ok = tot > 0
    safe = np.where(ok, tot, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mid = a + np.where(mass > 0, d / np.where(mass > 0, mass, 1.0), 0.0)
    m1 = np.add.reduceat(mass * mid, cstarts) / safe
    var = float(np.sum(np.where(ok, counts * np.add.reduceat(mass * (mid - np.repeat(m1, nb)) ** 2, cstarts) / safe,
                                0.0)))
    lam0 = math.sqrt(2.0 * abs(log_tau) / var) if var > 0 else 1.0
    lam = np.unique(np.concatenate((lam0 * 2.0 ** np.arange(-4, 7), h * 2.0 ** np.arange(-6, 9))))
    # coarse blocks (~64 per part) of the chord blocks: only to choose lam
    r = np.maximum(1, nb // 64)
    nc = -(-nb // r)
    ccst = np.zeros(nb.size, dtype=np.int64)
    ccst[1:] = np.cumsum(nc)[:-1]
    kb = np.arange(mass.size, dtype=np.int64) - cstarts[part]
    cid = ccst[part] + kb // r[part]
    ncs = int(nc.sum())
    cm = np.bincount(cid, weights=mass, minlength=ncs)
    # chord blocks of the coarse copy (also a valid bound, so its choice of lam is biased like the
    # fine one): first label, width, first moment about the first label
    ca0 = np.full(ncs, np.iinfo(np.int64).max)
    np.minimum.at(ca0, cid, a)
    ce = np.full(ncs, np.iinfo(np.int64).min)
    np.maximum.at(ce, cid, a + w.astype(np.int64))
    cd = np.bincount(cid, weights=d + mass * (a - ca0[cid]), minlength=ncs)
    cw = ce - ca0
    def bounds(lams, ms, ds, aa, ww, st) -> tuple[np.ndarray, np.ndarray]:
        up = np.array([float(np.sum(counts * _log_chord_moments(ms, ds, aa, ww, st, float(x), nc))) for x in lams])
        dn = np.array([float(np.sum(counts * _log_chord_moments(ms, ds, aa, ww, st, -float(x), nc))) for x in lams])
        return np.ceil((up - log_tau) / lams), np.floor((log_tau - dn) / lams)

    cb, ca = bounds(lam, cm, cd, ca0, cw, ccst)
    iu, ia = int(np.argmin(cb)), int(np.argmax(ca))
    pick_u = lam[iu: iu + 1]  # each bound at the best lam of the coarse copy (any lam is valid)
    pick_a = lam[max(0, ia - 1): ia + 2]
    up = np.array([float(np.sum(counts * _log_chord_moments(mass, d, a, w, cstarts, float(x), nb))) for x in pick_u])
    dn = np.array([float(np.sum(counts * _log_chord_moments(mass, d, a, w, cstarts, -float(x), nb))) for x in pick_a])
    hi = float(np.min(np.ceil((up - log_tau) / pick_u)))
    lo = float(np.max(np.floor((log_tau - dn) / pick_a)))
    return hi, lo, lo_sup, hi_sup


# --------------------------------------------------------------------------- the mass defect


def _fsum_defect(rows) -> float:
    return sum(T * abs(math.fsum(np.asarray(p, dtype=float).tolist() + [float(inf), -1.0])) for p, inf, T in rows)


_HI = 2.0 ** 40
_TINY = 2.0 ** -600


def mass_defect_batched(parts: Sequence[tuple[np.ndarray, float, int]]) -> float:
    """The builder's ``_mass_defect`` (sum_i T_i |1 - (sum of step i's masses + its infinity mass)|)
    for many steps, as a proven bound: each mass x = hi + lo exactly, hi = floor(x 2^40) / 2^40 (a
    multiple of 2^-40, so the sums of the hi parts, below 2^13, are exact in any order) and
    0 <= lo < 2^-40 (summed with error at most (n - 1) u sum lo); then (s_hi - 1) is exact and
    the two additions of ((s_hi - 1) + inf) + s_lo round by at most u each. About 1e-16 per step,
    as the exact sums. Parts with negative or non-finite masses, or sums far from 1, get
    :func:`math.fsum`.

    Args:
      parts: (non-negative masses, infinity mass, count T_i).

    Returns:
      The bound.
    """
    u = 2.0 ** -53
    sizes = np.array([np.asarray(p).size for p, _, _ in parts], dtype=np.int64)
    if sizes.size == 0 or np.any(sizes == 0):
        return _fsum_defect(parts) * (1.0 + 1e-9) + 1e-300
    x = np.concatenate([np.asarray(p, dtype=float) for p, _, _ in parts])
    infs = np.array([float(inf) for _, inf, _ in parts])
    counts = np.array([float(T) for _, _, T in parts])
    if not (np.all(x >= 0) and np.all(np.isfinite(x)) and np.all((infs >= 0) & (infs <= 1))):
        return _fsum_defect(parts) * (1.0 + 1e-9) + 1e-300
    starts = np.zeros(sizes.size, dtype=np.int64)
    starts[1:] = np.cumsum(sizes)[:-1]
    # masses below 2^-600 are left out of the sums (no arithmetic on subnormals, which is slow) and
    # bounded by 2^-600 each
    x[x < _TINY] = 0.0  # (x is a fresh copy: in place from here)
    hi = x * _HI
    np.floor(hi, out=hi)
    hi /= _HI
    x -= hi  # the lo parts
    s_hi = np.add.reduceat(hi, starts)
    s_lo = np.add.reduceat(x, starts)
    ok = (s_hi >= 0.5) & (s_hi <= 2.0) & (s_hi < 2.0 ** 12)
    d = ((s_hi - 1.0) + infs) + s_lo
    bound = np.abs(d) + (sizes * u * s_lo + 2.0 * u * (np.abs(s_hi - 1.0) + infs + s_lo)) * 1.01 + sizes * _TINY
    tot = float(np.sum(np.where(ok, counts * bound, 0.0))) * (1.0 + 4.0 * u * sizes.size)
    if not ok.all():
        tot += _fsum_defect([parts[i] for i in np.nonzero(~ok)[0]])
    return tot * (1.0 + 1e-9) + 1e-300
