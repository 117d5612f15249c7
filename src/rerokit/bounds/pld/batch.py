"""Many distinct DP-SGD steps at once: the per-step work of :mod:`rerokit.bounds.pld.step`,
:func:`rerokit.bounds.pld.compose.chernoff_window` and the builder's mass sums, vectorised across
steps (a schedule whose noise multiplier or sampling rate changes every step, e.g. an Opacus noise
scheduler, has thousands of distinct steps; one call per step cost ~20 ms each).

The steps are sorted by grid size and cut into blocks of rows of one 2-D array (a row per step,
padded at its top end by repeating its last grid point, so the padded buckets have zero mass; about
:data:`_BLOCK_POINTS` points per block: small temporaries, which on a shared machine cost far less
than fresh large arrays). Every operation of :func:`rerokit.bounds.pld.step.step_from_tails` is
done on whole blocks with the same floating-point expressions, sums over a step's points in the
same order (cumulative sums along rows; the per-step loops over the few runs of buckets and the
flows' recurrences row by row, whose solution is unique), so the steps are bit-identical to
:func:`rerokit.bounds.pld.step.dpsgd_step_pld` (with the same ``ndtr``: libm's while all steps
together have few points, else scipy's, as the per-step code for large grids). The exact sums
(``math.fsum``) of each step's masses are computed vectorised with the same values
(:func:`exact_excess`). The window is the Chernoff bound on chord blocks (any window is valid),
in groups of parts with the same per-part values.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.exactsum import exact_excess
from rerokit.bounds.pld.normal import SCIPY_ABOVE, ndtr_pair, normal_isf_log
from rerokit.bounds.pld.step import (LOSS_POINT_ULPS, MAX_STEP_WIDTH, NDTR_ULPS, StepPLD, StepTooWide, pair_components,
                                    remove_loss)

__all__ = ["BATCH_MIN", "step_plds_batched", "moment_window_batched", "mass_defect_batched", "exact_excess"]

BATCH_MIN = 16  # distinct steps from which the builder uses the batched functions
_U = 2.0 ** -53  # unit roundoff of double
_BLOCK_POINTS = 1 << 15  # padded grid points per block of rows (temporaries of 256 KB: in cache)


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


def step_plds_batched(segs: Sequence[tuple[float, float, int]], h: float, direction: str,
                      log_tau: float) -> list[StepPLD]:
    """:func:`rerokit.bounds.pld.step.dpsgd_step_pld` (group size 1, ``"remove"`` or ``"add"``) for
    many (sigma, q) at once: the steps sorted by grid size, in blocks of rows of one 2-D array
    (each row one step's grid, padded at its top end by repeating its last point), every
    per-step operation of :func:`rerokit.bounds.pld.step.step_from_tails` done on whole blocks.

    Args:
      segs: (sigma, q, T) triples (T unused).
      h: grid step.
      direction: "remove" or "add".
      log_tau: natural log of the tail mass cut off on each side of each step.

    Returns:
      One :class:`StepPLD` per triple, in order (their arrays are views of shared 2-D arrays).

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
    # libm's erfc (as the per-step code for grids below SCIPY_ABOVE points) when all steps together are small
    small = 4 * int(npts.sum()) <= SCIPY_ABOVE
    order = np.argsort(npts, kind="stable")
    out: list[StepPLD | None] = [None] * len(segs)
    i = 0
    while i < order.size:  # blocks of rows of similar width, at most ~_BLOCK_POINTS padded points
        rows = [int(order[i])]
        i += 1
        while i < order.size and (len(rows) + 1) * int(npts[order[i]]) <= _BLOCK_POINTS:
            rows.append(int(order[i]))
            i += 1
        r = np.array(rows)
        for k, st in zip(rows, _block(sig[r], qs[r], j_lo[r], npts[r], h, direction, small)):
            out[k] = st
    return out  # type: ignore[return-value]


def _exact_excess(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per row of ``a`` (zero beyond its first n entries): math.fsum(row[:n] + [-1]), as a column."""
    R, N = a.shape
    return exact_excess(a.ravel(), np.arange(R, dtype=np.int64) * N)[:, None]


def _gather(a: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return a[np.arange(a.shape[0]), cols]


def _suffix_prefix(e_gt, e_le, use, raw, m, scale_suf, scale_pre):
    """:func:`rerokit.bounds.pld.step._suffix_errors` on rows (bit-identical to it on each row's
    valid part; zero beyond), and the prefix bounds its reversed call gives (``_one_sided``'s
    ``f_pre``), computed forwards with the same additions in the same order. ``scale_suf`` /
    ``scale_pre``: 1 + 1e-9 (the bounds' final factor) on each row's valid part, 0 beyond.

    Returns:
      (f_suf, f_pre, local): (R, W + 2), (R, W + 2), (R, W - 1).
    """
    R, W = e_gt.shape
    extra = _U * np.abs(raw) + np.maximum(-raw, 0.0)  # 0 at the padded buckets (raw = 0 there)
    side = np.where(use, e_gt[:, :-1], e_le[:, :-1])
    local = np.where(use, e_gt[:, :-1] + e_gt[:, 1:], e_le[:, :-1] + e_le[:, 1:]) + extra
    # the runs of buckets taken from one side: the per-step loop over them, row by row (a few each)
    st_r, st_c = np.nonzero(use[:, 1:] != use[:, :-1])
    st_c += 1
    keep = st_c < (m - 1)[st_r]
    st_r, st_c = st_r[keep], st_c[keep]
    wv = (e_le[st_r, st_c] + e_gt[st_r, st_c]).tolist()
    last = m - 1
    c0 = np.where(_gather(use, m - 2), 0.0, _gather(e_le, last) + _gather(e_gt, last)).tolist()
    c0r = np.where(use[:, 0], e_gt[:, 0] + e_le[:, 0], 0.0).tolist()
    const = np.empty((R, W - 1))
    const_r = np.empty((R, W - 1))
    bnd = np.searchsorted(st_r, np.arange(R + 1)).tolist()
    cols = st_c.tolist()
    for r in range(R):
        cs, ws = cols[bnd[r]:bnd[r + 1]], wv[bnd[r]:bnd[r + 1]]
        c, b = c0[r], W - 1  # suffix: const[j] = c0 + sum_{run starts a > j} w_a, from the top
        for a, wa in zip(cs[::-1], ws[::-1]):
            const[r, a:b] = c
            c, b = c + wa, a
        const[r, :b] = c
        c, a0 = c0r[r], 0  # prefix: c0' + sum_{run starts a <= j} w_a, from the bottom
        for a, wa in zip(cs, ws):
            const_r[r, a0:a] = c
            c, a0 = c + wa, a
        const_r[r, a0:] = c
    ext = np.cumsum(extra[:, ::-1], axis=1)[:, ::-1]
    f_suf = np.zeros((R, W + 2))
    body = f_suf[:, 1:W]
    np.add(side, const, out=body)
    body += ext
    f_suf[:, 0] = const[:, 0] + ext[:, 0] + np.where(use[:, 0], e_le[:, 0] + e_gt[:, 0], 0.0)
    rows = np.arange(R)
    f_suf[rows, m] = _gather(e_gt, last)
    f_suf *= scale_suf  # (1 + 1e-9) on the row, 0 beyond
    # prefix (the reversed call, read forwards): bucket j at column j + 2
    ext_r = np.cumsum(extra, axis=1)
    f_pre = np.zeros((R, W + 2))
    f_pre[:, 1] = e_le[:, 0]
    body = f_pre[:, 2:W + 1]
    np.add(np.where(use, e_gt[:, 1:], e_le[:, 1:]), const_r, out=body)
    body += ext_r
    f_pre[rows, m + 1] = _gather(const_r, m - 2) + _gather(ext_r, m - 2) + np.where(
        _gather(use, m - 2), 0.0, _gather(e_gt, last) + _gather(e_le, last))
    f_pre *= scale_pre
    return f_suf, f_pre, local


def _slack_errors(x, sig, w0, w1, direction):
    """``_tail_errors(., ., _arg_slack(x, sigma, comps), 0)``'s slack terms 16 u slack for P and Q
    (the components (w0, 0), (w1, 1) of the mixture and (1, 0) of the plain Gaussian; the shared
    a = |x| / sigma and its density computed once: the same values)."""
    fin = np.isfinite(x)
    allfin = bool(fin.all())
    xf = x if allfin else np.where(fin, x, 0.0)
    c = 0.3989422804014328
    with np.errstate(under="ignore"):
        a0 = np.abs(xf) / sig  # |x - 0| / sigma
        e0 = np.exp(-0.5 * a0 * a0)
        one = a0 * e0 * c
        mix = w0 * a0 * e0 * c
        del e0
        a1 = np.abs(xf - 1.0) / sig
        mix += w1 * a1 * np.exp(-0.5 * a1 * a1) * c
    del a1, a0
    if not allfin:
        one = np.where(fin, one, 0.0)
        mix = np.where(fin, mix, 0.0)
    k = NDTR_ULPS * _U
    one *= k
    mix *= k
    return (mix, one) if direction == "remove" else (one, mix)


def _errors(p: np.ndarray, slack_k: np.ndarray) -> np.ndarray:
    """``_tail_errors``' bound for one tail (k = 1, non-negative tails: |p| = p)."""
    e = p * (NDTR_ULPS * _U)
    e += slack_k
    e += 1e-300
    return e


def _flow_rows(p: np.ndarray, F: np.ndarray, up: bool) -> np.ndarray:
    """:func:`rerokit.bounds.pld.step._flow_up` (``up``) or ``_flow_down`` on every row (rows
    padded with p = F = 0, which keeps G = 0 there). The recurrence G_m = max(F_m, G_{m+1} - p_m)
    (resp. min(F_m, (G_{m+1} + p_m) shrink)), G_n = 0, has one solution, which the per-step code
    reaches by iterating the whole array and this one by recomputing only the positions whose right
    neighbour changed: the same floating-point values."""
    R, N = p.shape
    G = np.array(F[:, : N + 1], dtype=float)
    G[:, N] = 0.0
    shrink = 1.0 - 4.0 * _U
    Ff = F[:, :N]
    if up:
        cand = G[:, 1:] - p
        np.maximum(Ff, cand, out=cand)
    else:
        cand = G[:, 1:] + p
        cand *= shrink
        np.minimum(Ff, cand, out=cand)
    ch_r, ch_c = np.nonzero(cand != G[:, :N])
    G[ch_r, ch_c] = cand[ch_r, ch_c]
    while ch_r.size:
        ok = ch_c > 0
        rr, cc = ch_r[ok], ch_c[ok] - 1
        if up:
            new = np.maximum(Ff[rr, cc], G[rr, cc + 1] - p[rr, cc])
        else:
            new = np.minimum(Ff[rr, cc], (G[rr, cc + 1] + p[rr, cc]) * shrink)
        diff = new != G[rr, cc]
        G[rr[diff], cc[diff]] = new[diff]
        ch_r, ch_c = rr[diff], cc[diff]
    d = G[:, :N] - G[:, 1:]
    e = np.abs(d)
    e += p
    e *= 5.0 * _U
    if up:
        out = p + d
        out += e
        return np.maximum(0.0, out, out=out)
    lim = G[:, 1:] + p
    lim *= shrink
    second = Ff > lim
    out = p - d
    out -= e
    np.maximum(0.0, out, out=out)
    out[second] = 0.0
    return out


def _tails_rows(sig, qs, j_lo, m, h, direction, small):
    """The grid l (rows padded by repeating the last point) and ``_tails_at``'s five arrays on it."""
    W = int(m.max())
    l = (j_lo[:, None] + np.minimum(np.arange(W)[None, :], (m - 1)[:, None])) * h
    s_l, q_l = sig.tolist(), qs.tolist()
    s2 = np.array([s * s for s in s_l])[:, None]
    logq = np.array([math.log(q) for q in q_l])[:, None]
    one_m_q = np.array([1.0 - q for q in q_l])[:, None]
    q_c, s_c = qs[:, None], sig[:, None]
    L = l if direction == "remove" else -l
    # the columns with points l <= 0 (remove; l >= 0 for add): labels j <= 0 (j >= 0)
    if direction == "remove":  # (a row all <= 0 would have its padding there too)
        a, b = 0, (W if np.any(j_lo + m - 1 <= 0) else int(np.clip(np.max(1 - j_lo), 0, W)))
    else:
        a, b = int(np.clip(np.min(-j_lo), 0, W)), W
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lg = L + np.log1p(-one_m_q * np.exp(-np.maximum(L, 0.0)))
        if b > a:  # log(expm1(l) + q) where l <= 0 (only on those columns; the rest is finite)
            sub = L[:, a:b]
            lg[:, a:b] = np.where(sub > 0, lg[:, a:b], np.log(np.expm1(np.minimum(sub, 0.0)) + q_c))
        x = s2 * (lg - logq) + 0.5
        if b > a:
            xs = x[:, a:b]
            xs[np.isnan(xs)] = -np.inf
        full = qs == 1.0  # q = 1: x = sigma^2 l + 1/2
        if full.any():
            x[full] = s2[full] * L[full] + 0.5
    n_neg, n_pos = ndtr_pair(x / s_c, small)
    n_1mx, n_xm1 = ndtr_pair((x - 1.0) / s_c, small)
    mix_sf = one_m_q * n_neg + q_c * n_1mx
    mix_cdf = one_m_q * n_pos + q_c * n_xm1
    if direction == "remove":
        return l, (mix_sf, mix_cdf, n_neg, n_pos, x)
    return l, (n_pos, n_neg, mix_cdf, mix_sf, x)


def _block(sig, qs, j_lo, m, h, direction, small) -> list[StepPLD]:
    """:func:`rerokit.bounds.pld.step.step_from_tails` for the rows of one block (module docstring)."""
    R = m.size
    rows = np.arange(R)
    l, (p_gt, p_le, q_gt, q_le, x) = _tails_rows(sig, qs, j_lo, m, h, direction, small)
    W = l.shape[1]
    use_p, use_q = p_gt[:, :-1] < 0.5, q_gt[:, :-1] < 0.5
    raw_p = np.where(use_p, p_gt[:, :-1] - p_gt[:, 1:], p_le[:, 1:] - p_le[:, :-1])
    raw_q = np.where(use_q, q_gt[:, :-1] - q_gt[:, 1:], q_le[:, 1:] - q_le[:, :-1])
    pb, qb = np.maximum(raw_p, 0.0), np.maximum(raw_q, 0.0)
    # the mixture's components (weights as step.pair_components computes them) per row
    w0, w1 = np.zeros((R, 1)), np.zeros((R, 1))
    for r, (s, q) in enumerate(zip(sig.tolist(), qs.tolist())):
        for wc, mc in pair_components(s, q, "remove", 1)[0]:
            (w1 if mc == 1.0 else w0)[r, 0] = wc
    sk_p, sk_q = _slack_errors(x, sig[:, None], w0, w1, direction)
    del x
    ep_gt, ep_le = _errors(p_gt, sk_p), _errors(p_le, sk_p)
    eq_gt, eq_le = _errors(q_gt, sk_q), _errors(q_le, sk_q)
    del sk_p, sk_q
    # the statistic [bottom tail, buckets, top tail] (row r: m_r + 1 entries)
    def stat(b, lo, hi):
        st = np.zeros((R, W + 1))
        st[:, 0] = lo[:, 0]
        st[:, 1:W] = b
        st[rows, m] = _gather(hi, m - 1)
        return st

    stat_p, stat_q = stat(pb, p_le, p_gt), stat(qb, q_le, q_gt)
    u = _U
    sides = []
    colf = np.arange(W + 2)[None, :]
    scale_suf = np.where(colf > m[:, None], 0.0, 1.0 + 1e-9)
    scale_pre = np.where(colf > (m + 1)[:, None], 0.0, 1.0 + 1e-9)
    for e_gt, e_le, use, raw, st in ((ep_gt, ep_le, use_p, raw_p, stat_p), (eq_gt, eq_le, use_q, raw_q, stat_q)):
        f_suf, f_pre, local = _suffix_prefix(e_gt, e_le, use, raw, m, scale_suf, scale_pre)
        excess = _exact_excess(st, m + 1)
        slop = 2.0 * u * np.abs(excess)
        f_up = np.maximum(0.0, np.minimum(f_suf, f_pre - excess + slop))
        f_dn = np.maximum(0.0, np.minimum(f_suf, f_pre + excess + slop))
        sides.append((f_up, f_dn, local, f_suf, f_pre))
    (fp_up, fp_down, local_p, f_suf, f_pre), (fq_up, fq_down, local_q, _, _) = sides
    p_bot, p_top = p_le[:, 0], _gather(p_gt, m - 1)
    em = -math.expm1(-h)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_qb = np.log(qb)  # (where qb > 0: the same values as step's two logs of it)
        eq = np.where(qb > 0, np.exp(l[:, :-1] + log_qb), 0.0)
    c = np.clip((pb - eq) / em, 0.0, pb)
    a = pb - c
    eta = LOSS_POINT_ULPS * _U * (1.0 + np.max(np.abs(l), axis=1))
    e2 = np.array([math.exp(2.0 * e) for e in eta.tolist()])[:, None]
    lj = l[:, :-1]
    eta_j = LOSS_POINT_ULPS * _U * (1.0 + np.maximum(np.abs(lj), np.abs(l[:, 1:])))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        q_scaled = np.exp(np.minimum(lj + np.log(local_q), 700.0))
        lq = np.where(qb > 0, np.abs(log_qb), 0.0)
    eq_rel = _U * (6.0 * lq + 4.0 * np.abs(lj) + 8.0)
    q_scaled = np.minimum(q_scaled, eq * (1.0 + eq_rel) + e2 * (pb + local_p) * (1.0 + 4.0 * _U))
    num = local_p + q_scaled + eq_rel * eq + 8.0 * _U * (pb + eq) + eta_j * (eq + 2.0 * pb)
    dc = (num / (em * (1.0 - 8.0 * _U)) + local_p) * (1.0 + 1e-9)
    stored = np.zeros((R, W + 1))
    stored[:, :W - 1] += a
    stored[:, 1:W] += c
    stored[:, 0] += p_bot
    stored[rows, m] = p_top
    inner = np.arange(W - 1)[None, :] < (m - 1)[:, None]
    g_suf, g_pre = f_suf.copy(), f_pre.copy()
    g_suf[:, 1:W] = np.where(inner, f_suf[:, 2:W + 1] + dc, f_suf[:, 1:W])
    g_pre[:, 1:W] = np.where(inner, f_pre[:, 2:W + 1] + dc, f_pre[:, 1:W])
    excess = _exact_excess(stored, m + 1)
    f_split = np.maximum(0.0, np.minimum(g_suf, g_pre - excess + 2.0 * _U * np.abs(excess)))
    up = _flow_rows(stored, f_split, True)
    p_lo, q_hi = _flow_rows(stat_p, fp_down, False), _flow_rows(stat_q, fq_up, True)
    dp, dq = np.abs(p_lo - stat_p), np.abs(q_hi - stat_q)
    mp, mq = np.max(np.maximum(fp_up, fp_down), axis=1), np.max(np.maximum(fq_up, fq_down), axis=1)
    out = []
    for r, (k, jl, e) in enumerate(zip(m.tolist(), j_lo.tolist(), eta.tolist())):
        # _prefix_error, the sums over each row's own entries (the same pairwise sums)
        rev = (2.0 * (float(mp[r]) + float(np.sum(dp[r, :k + 1])) * (1.0 + 1e-6) + 1e-300),
               2.0 * (float(mq[r]) + float(np.sum(dq[r, :k + 1])) * (1.0 + 1e-6) + 1e-300))
        out.append(StepPLD(h, jl, up[r, :k], float(up[r, k]), p_lo[r, :k + 1], q_hi[r, :k + 1], rev, 2.0 * e))
    return out


# --------------------------------------------------------------------------- the window

_BLOCK = 8  # labels per block of the chord bound on the moment functions (_blocks' sums are written for 8)


def _blocks(parts: Sequence[tuple[int, np.ndarray, int]]):
    """Each pmf cut into blocks of :data:`_BLOCK` consecutive labels (zero-padded): per block its mass
    P_b, its first moment about the block's first label D_b = sum_j p_j (j - a_b), its first label
    a_b, its width w_b (last label - first label, <= _BLOCK - 1) and its part."""
    B = _BLOCK
    sizes = np.array([np.asarray(p).size for _, p, _ in parts], dtype=np.int64)
    nb = -(-sizes // B)
    masses, ds, chunks, tot = [], [], [], 0
    nb_l = nb.tolist()
    for i, (_, p, _) in enumerate(parts):  # in groups of ~_BLOCK_POINTS points (small temporaries)
        p = np.asarray(p, dtype=float)
        chunks.append(p)
        pad = nb_l[i] * B - p.size
        if pad:
            chunks.append(np.zeros(pad))
        tot += nb_l[i] * B
        if tot >= _BLOCK_POINTS or i == len(parts) - 1:
            x = np.concatenate(chunks).reshape(-1, B)
            # by columns (B = 8): the mass as x.sum(axis=1) (numpy's pairwise sum of 8 terms), the first
            # moment in a fixed order (a matrix product's rounding depends on the rows around it)
            c = [x[:, i] for i in range(B)]
            masses.append(((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7])))
            ds.append((c[1] + 2.0 * c[2] + 3.0 * c[3]) + (4.0 * c[4] + 5.0 * c[5]) + (6.0 * c[6] + 7.0 * c[7]))
            chunks, tot = [], 0
    mass = np.concatenate(masses) if masses else np.zeros(0)
    d = np.concatenate(ds) if ds else np.zeros(0)
    cstarts = np.zeros(sizes.size, dtype=np.int64)
    cstarts[1:] = np.cumsum(nb)[:-1]
    part = np.repeat(np.arange(sizes.size), nb)
    k = np.arange(int(nb.sum()), dtype=np.int64) - cstarts[part]
    offs = np.array([int(o) for o, _, _ in parts], dtype=np.int64)
    a = offs[part] + B * k
    w = np.minimum(B - 1, sizes[part] - 1 - B * k).astype(np.int16)
    return mass, d, a, w, part, cstarts, nb


def _log_chord_moments(mass, d, a, w, cstarts, lam: float, reps=None, last=None) -> np.ndarray:
    """Per part an upper bound on log sum_j p_j e^{lam j}: e^{lam j} is convex, so on a block
    [a, a + w] it lies below its chord, e^{lam j} <= e^{lam a} (1 + (j - a) expm1(lam w) / w), and
    the block contributes at most e^{lam a} (P_b + D_b expm1(lam w) / w) (exact for w = 0); the sum
    over blocks as :func:`rerokit.bounds.pld.normal.logsumexp_rows` (terms below e^-700 of the
    part's largest count as e^-700: rounded up). ``last``: the index of each part's last block, where
    all other blocks have the full width _BLOCK - 1 (the table's value for it, without a gather)."""
    with np.errstate(divide="ignore", under="ignore", invalid="ignore", over="ignore"):
        v = lam * a
        if w is None:  # point masses at the labels a
            t = np.log(mass)
        elif last is not None:
            wt = np.arange(_BLOCK, dtype=float)
            tab = np.where(wt > 0, np.expm1(lam * wt) / np.maximum(wt, 1.0), 0.0)
            t = d * tab[_BLOCK - 1]
            t[last] = d[last] * tab[w[last]]
            t += mass
            np.log(t, out=t)
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


def _window_group(parts: Sequence[tuple[int, np.ndarray, int]]):
    """One group of parts: its chord blocks (:func:`_blocks`), per part the support ends, total
    mass and first moment, and its coarse copy (~64 blocks per part, only to choose lam)."""
    mass, d, a, w, part, cstarts, nb = _blocks(parts)
    has = mass > 0
    big = np.iinfo(np.int64).max
    lo_lab = np.minimum.reduceat(np.where(has, a, big), cstarts)
    hi_lab = np.maximum.reduceat(np.where(has, a + w.astype(np.int64), -big), cstarts)
    tot = np.add.reduceat(mass, cstarts)
    safe = np.where(tot > 0, tot, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mid = a + np.where(mass > 0, d / np.where(mass > 0, mass, 1.0), 0.0)
    m1 = np.add.reduceat(mass * mid, cstarts) / safe
    m2 = np.add.reduceat(mass * (mid - np.repeat(m1, nb)) ** 2, cstarts)
    del mid
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
    cst = np.flatnonzero(np.diff(cid, prepend=-1))  # cid is non-decreasing, every coarse block non-empty
    ca0 = np.minimum.reduceat(a, cst)
    ce = np.maximum.reduceat(a + w.astype(np.int64), cst)
    cd = np.bincount(cid, weights=d + mass * (a - ca0[cid]), minlength=ncs)
    fine = (mass, d, a.astype(float), w, cstarts, nb, np.cumsum(nb) - 1)
    return fine, (lo_lab, hi_lab, tot, m2), (cm, cd, ca0, ce - ca0, nc)


def moment_window_batched(parts: Sequence[tuple[int, np.ndarray, int]], h: float,
                          log_tau: float) -> tuple[float, float, int, int]:
    """The Chernoff window of :func:`rerokit.bounds.pld.compose.chernoff_window` for many parts at
    once, with each part's moment function bounded from above by chords over blocks of
    :data:`_BLOCK` labels (:func:`_log_chord_moments`: a valid Chernoff bound, wider than the exact
    moments by about lam^2 _BLOCK^2 / 8 per step in log, a fraction of a percent of the window),
    so the work per lam is on 1/_BLOCK of the points. lam is chosen as there (the variance from the
    blocks' masses at their mean labels, which only guides the choice), on blocks of ~256 points.
    The parts are processed in groups of about 8 :data:`_BLOCK_POINTS` points (small temporaries);
    every per-part quantity is the same as on all parts at once, and the sums over parts are
    taken over all parts together.

    Returns:
      (hi, lo, lo_sup, hi_sup): the bounds on the top and bottom labels (floats, maybe infinite)
      and (a superset of) the support of the composition.
    """
    groups, i = [], 0
    sizes = [np.asarray(p).size for _, p, _ in parts]
    while i < len(parts):
        j, tot = i + 1, sizes[i]
        while j < len(parts) and tot + sizes[j] <= 8 * _BLOCK_POINTS:
            tot += sizes[j]
            j += 1
        groups.append(_window_group(parts[i:j]))
        i = j
    counts = np.array([float(c) for _, _, c in parts])
    cnt_i = np.array([int(c) for _, _, c in parts], dtype=object)
    lo_lab, hi_lab, tot, m2 = (np.concatenate([g[1][k] for g in groups]) for k in range(4))
    # support (a superset): the first and last blocks with mass, from their first and last labels
    lo_sup = int(np.sum(cnt_i * lo_lab.astype(object)))
    hi_sup = int(np.sum(cnt_i * hi_lab.astype(object)))
    # variance (only to choose lam): each block's mass at its mean label
    ok = tot > 0
    safe = np.where(ok, tot, 1.0)
    var = float(np.sum(np.where(ok, counts * m2 / safe, 0.0)))
    lam0 = math.sqrt(2.0 * abs(log_tau) / var) if var > 0 else 1.0
    lam = np.unique(np.concatenate((lam0 * 2.0 ** np.arange(-4, 7), h * 2.0 ** np.arange(-6, 9))))
    # the coarse copies of all groups together
    cm, cd, ca0, cw, nc = (np.concatenate([g[2][k] for g in groups]) for k in range(5))
    ccst = np.zeros(nc.size, dtype=np.int64)
    ccst[1:] = np.cumsum(nc)[:-1]

    def bounds(lams) -> tuple[np.ndarray, np.ndarray]:
        up = np.array([float(np.sum(counts * _log_chord_moments(cm, cd, ca0, cw, ccst, float(x), nc))) for x in lams])
        dn = np.array([float(np.sum(counts * _log_chord_moments(cm, cd, ca0, cw, ccst, -float(x), nc))) for x in lams])
        return np.ceil((up - log_tau) / lams), np.floor((log_tau - dn) / lams)

    def fine(x: float) -> float:  # sum_i T_i log M_i(x) from the chord blocks, group by group
        return float(np.sum(counts * np.concatenate([_log_chord_moments(*g[0][:5], x, g[0][5], g[0][6])
                                                     for g in groups])))

    cb, ca = bounds(lam)
    iu, ia = int(np.argmin(cb)), int(np.argmax(ca))
    pick_u = lam[iu: iu + 1]  # each bound at the best lam of the coarse copy (any lam is valid)
    pick_a = lam[max(0, ia - 1): ia + 2]
    up = np.array([fine(float(x)) for x in pick_u])
    dn = np.array([fine(-float(x)) for x in pick_a])
    hi = float(np.min(np.ceil((up - log_tau) / pick_u)))
    lo = float(np.max(np.floor((log_tau - dn) / pick_a)))
    return hi, lo, lo_sup, hi_sup


# --------------------------------------------------------------------------- the mass defect


def segment_excesses(parts: Sequence[tuple[np.ndarray, float]]) -> np.ndarray:
    """``math.fsum(pmf.tolist() + [inf, -1.0])`` for every (pmf, inf) (:func:`exact_excess` on
    groups of about :data:`_BLOCK_POINTS` masses: the same values; small temporaries, which on a
    loaded machine cost far less than fresh large ones)."""
    sizes = [np.asarray(p).size for p, _ in parts]
    out = np.empty(len(parts))
    i = 0
    while i < len(parts):
        j, tot = i + 1, sizes[i]
        while j < len(parts) and tot + sizes[j] <= _BLOCK_POINTS:
            tot += sizes[j]
            j += 1
        group = parts[i:j]
        if min(sizes[i:j]) == 0:  # empty pmfs: exact_excess needs non-empty segments
            out[i:j] = [math.fsum(np.asarray(p, dtype=float).tolist() + [float(inf), -1.0]) for p, inf in group]
        else:
            starts = np.zeros(j - i, dtype=np.int64)
            starts[1:] = np.cumsum(sizes[i:j - 1])
            x = np.concatenate([np.asarray(p, dtype=float).ravel() for p, _ in group])
            out[i:j] = exact_excess(x, starts, np.array([float(inf) for _, inf in group]))
        i = j
    return out


def mass_defect_batched(parts: Sequence[tuple[np.ndarray, float, int]]) -> float:
    """The builder's ``_mass_defect``, sum_i T_i |1 - (sum of step i's masses + its infinity
    mass)| with each step's exact sum rounded once (:func:`segment_excesses`), times (1 + 1e-9)
    plus 1e-300: the same value, vectorised.

    Args:
      parts: (masses, infinity mass, count T_i).

    Returns:
      The bound.
    """
    exc = segment_excesses([(p, inf) for p, inf, _ in parts])
    tot = 0.0
    for (_, _, T), e in zip(parts, exc.tolist()):
        tot += T * abs(e)
    return tot * (1.0 + 1e-9) + 1e-300
