"""Discrete privacy-loss distributions with their proven errors, and the queries on them.

A :class:`DiscretePLD` is the distribution, under P, of a privacy loss L = log(P/Q) supported on
the grid l = (offset + i) h, plus a mass at +infinity, plus two proven error terms: ``tail`` (mass
of the exact composed pmf outside the stored window) and ``roundoff`` (sum of the absolute
floating-point errors of the stored masses; :mod:`rerokit.bounds.pld.compose`). It is
*dominating* (pessimistic) when built by :mod:`rerokit.bounds.pld.step`: for every eps its
hockey-stick divergence

    delta(eps) = p_inf + sum_i p_i (1 - e^{eps - l_i})_+

is >= the true pair's, and so (Neyman-Pearson / conjugate duality) its power at every level alpha,
inf_eps (e^eps alpha + delta(eps)), is >= the true power (the largest P(E) with Q(E) <= alpha).
Every query adds the error terms on the safe side (:attr:`DiscretePLD.error`), and every certified value
carries a proven bound on its own floating-point rounding, rounded to the safe side (sums:
:class:`_TopSums`; the rest stepped outwards by one ulp per rounding).

A :class:`GridPMF` (the same grid, no PLD semantics) holds the distribution of the bucket
statistic S under P or under Q; :class:`ThresholdTests` turns the pair into certified *lower*
bounds on the power: threshold tests on S are tests of the true pair.

The interface follows dp-accounting's ``PLDPmf`` (Google DP team, "Privacy loss distributions",
2022): ``hockey_stick`` ~ ``get_delta_for_epsilon``, ``epsilon`` ~ ``get_epsilon_for_delta``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from rerokit.bounds.pld.compose import compose, compose_inf_mass
from rerokit.bounds.pld.logsum import prefix_logsumexp

__all__ = ["Bracket", "GridPMF", "DiscretePLD", "ThresholdTests"]

_U = float(np.finfo(float).eps) / 2.0  # unit round-off of double
_U_LD = float(np.finfo(np.longdouble).eps) / 2.0  # unit round-off of numpy's long double
_BLOCK = 16  # terms per block of the running sums of :class:`_TopSums`
_TINY = 2.0 ** -1074  # bounds the absolute error of a product that underflows
_CHUNK = 1 << 14  # partial blocks gathered at a time by :meth:`_TopSums.at`


@dataclass(frozen=True)
class Bracket:
    """Certified bracket ``lower <= truth <= upper`` (floats for a scalar query, else arrays).

    ``floored``: where the PLD's infinity mass / round-off floor dominates the upper end.
    """

    lower: Any
    upper: Any
    floored: Any = False

    @property
    def error(self) -> Any:
        """Width upper - lower: the numerical error of the bracket."""
        return self.upper - self.lower


def _up(x: Any) -> Any:
    """One ulp up: an upper bound on the exact result of the operation that rounded to ``x``."""
    return np.nextafter(x, np.inf)


def _down(x: Any) -> Any:
    """One ulp down: a lower bound on the exact result of the operation that rounded to ``x``."""
    return np.nextafter(x, -np.inf)


def _up_add(a: Any, b: Any) -> Any:
    """An upper bound on a + b (non-negative): the rounded sum, one ulp up unless a term is 0 (exact)."""
    s = np.add(a, b)
    return np.where((np.asarray(a) == 0) | (np.asarray(b) == 0), s, _up(s))[()]


@dataclass(frozen=True)
class _TopSums:
    """Sums of the first m of some non-negative terms (m = 0..n), each with a proven relative bound.

    The terms are cut into blocks of :data:`_BLOCK`; ``np.add.reduceat`` sums each block in double
    (any order: at most _BLOCK - 1 roundings on any term's path), the block sums run in long double
    (``cum``), and a partial block is summed in long double and added to the blocks before it. A sum
    of non-negative terms in which every term passes through at most d roundings of unit u is
    sum_i x_i (1 + theta_i) with |theta_i| <= gamma_d = d u / (1 - d u), whatever the order (Higham
    2002, Lemma 3.1 and Sec. 4.2), so a computed sum, rounded to double, errs by at most :attr:`rel`
    relative:
    1.01 ((_BLOCK - 1) u + (blocks + _BLOCK + 1) u_ld + u) (the last u: the conversion; 1.01 covers
    the second-order terms). For a window of 4e5 atoms about 3e-15, below a long double running sum's
    n u_ld (2e-14); one pass in double, not a long double conversion of every term. The sum at a count
    depends on that count only, not on the other counts asked for.

    Attributes:
      terms: the terms in summation order (non-negative, finite).
      cum: long double running sums of the blocks' double sums.
    """

    terms: np.ndarray
    cum: np.ndarray

    @staticmethod
    def of(terms: np.ndarray) -> _TopSums:
        """The running block sums of ``terms`` (1-D, non-negative)."""
        if not terms.size:
            return _TopSums(terms, np.zeros(0, dtype=np.longdouble))
        blocks = np.add.reduceat(terms, np.arange(0, terms.size, _BLOCK))
        return _TopSums(terms, np.cumsum(blocks, dtype=np.longdouble))

    @property
    def rel(self) -> float:
        """Bound on |computed sum - exact sum| / exact sum for every sum returned (class docstring)."""
        return 1.01 * ((_BLOCK - 1) * _U + (self.cum.size + _BLOCK + 1) * _U_LD + _U)

    def _base(self, b: int) -> np.longdouble:
        return self.cum[b - 1] if b else np.longdouble(0.0)

    @cached_property
    def _every(self) -> np.ndarray:
        """The computed sums at every count 0..n (as :meth:`at` forms them), as doubles."""
        n = self.terms.size
        pad = np.zeros(self.cum.size * _BLOCK)
        pad[:n] = self.terms
        part = np.cumsum(pad.reshape(-1, _BLOCK), axis=1, dtype=np.longdouble)
        part[1:] += self.cum[:-1, None]  # (each running sum plus the blocks before it: one addition)
        every = np.concatenate(([0.0], part.reshape(-1)[:n].astype(float)))
        ends = every[_BLOCK::_BLOCK]  # whole blocks: their running sum itself, as :meth:`at` reads it
        ends[:] = self.cum[:ends.size]
        return every

    def at(self, counts: np.ndarray) -> np.ndarray:
        """The computed sums of the first ``counts`` terms (integers in 0..n), as doubles.

        The blocks' running sum plus the partial block's running sum in long double (the sums
        :meth:`count` forms): for many counts read from the sums at every count (computed once), else
        the partial blocks gathered :data:`_CHUNK` at a time."""
        c = np.asarray(counts, dtype=np.int64)
        n = self.terms.size
        if c.size * _BLOCK >= n:
            return self._every[c]
        b, j = np.divmod(c, _BLOCK)
        out = np.zeros(c.shape, dtype=np.longdouble)
        whole = b > 0
        out[whole] = self.cum[b[whole] - 1]
        sel = np.flatnonzero(j)
        if sel.size:
            flat = out.reshape(-1)
            ub, inv = np.unique(b.ravel()[sel], return_inverse=True)
            js = j.ravel()[sel] - 1
            for start in range(0, ub.size, _CHUNK):
                rows = ub[start: start + _CHUNK, None] * _BLOCK + np.arange(_BLOCK)
                part = np.cumsum(np.where(rows < n, self.terms[np.minimum(rows, n - 1)], 0.0), axis=1,
                                 dtype=np.longdouble)
                mine = (inv >= start) & (inv < start + _CHUNK)
                flat[sel[mine]] += part[inv[mine] - start, js[mine]]
        return out.astype(float)

    def upper(self, counts: np.ndarray) -> np.ndarray:
        """Certified upper bounds on the exact sums of the first ``counts`` terms: :meth:`at` moved up
        by :attr:`rel`, each rounding stepped up (0 where the computed sum is: every term is 0)."""
        s = self.at(counts)
        return np.where(s > 0, _up(s * _up(1.0 + self.rel)), 0.0)

    def lower(self, counts: np.ndarray) -> np.ndarray:
        """Certified lower bounds on the exact sums of the first ``counts`` terms (as :meth:`upper`)."""
        s = self.at(counts)
        return np.where(s > 0, _down(s * _down(1.0 - self.rel)), 0.0)

    def count(self, x: np.ndarray, strict: bool) -> tuple[np.ndarray, np.ndarray]:
        """For each ``x``: a count m whose computed sum is < x (``strict``; <= x otherwise; in long
        double, so <= x once rounded to double) while the sum of the first m + 1 terms reaches x (the
        running sums' rounding aside), and that sum."""
        side = "left" if strict else "right"
        xl = np.asarray(x, dtype=np.longdouble)
        blocks = np.searchsorted(self.cum, xl, side=side)  # whole blocks below x
        cnt = np.empty(xl.shape, dtype=np.int64)
        val = np.empty(xl.shape)
        for t, b in enumerate(blocks.tolist()):
            base = self._base(b)
            if b >= self.cum.size:
                cnt[t], val[t] = self.terms.size, float(base)
                continue
            within = base + np.cumsum(self.terms[b * _BLOCK: (b + 1) * _BLOCK], dtype=np.longdouble)
            j = int(np.searchsorted(within, xl[t], side=side))
            cnt[t], val[t] = b * _BLOCK + j, float(within[j - 1] if j else base)
        return cnt, val


@dataclass(frozen=True)
class GridPMF:
    """Masses on the labels offset..offset+len-1 (value label * h) with proven errors.

    Attributes:
      h: grid step.
      offset: label of pmf[0].
      pmf: non-negative masses.
      tail: bound on the exact mass outside the stored labels.
      roundoff: bound on sum_i |pmf_i - exact_i| (floating point).
      entry_roundoff: bound on max_i |pmf_i - exact_i|.
    """

    h: float
    offset: int
    pmf: np.ndarray
    tail: float = 0.0
    roundoff: float = 0.0
    entry_roundoff: float = 0.0

    @property
    def losses(self) -> np.ndarray:
        """The grid values (offset + i) h."""
        return (self.offset + np.arange(self.pmf.size)) * self.h

    @property
    def slack(self) -> float:
        """Bound on the mass any sum over labels may be off by: tail + roundoff (rounded up)."""
        return float(_up_add(self.tail, self.roundoff))

    @cached_property
    def top_mass(self) -> _TopSums:
        """Sums of the top m masses (labels offset + n - m .. offset + n - 1), with their bound."""
        return _TopSums.of(self.pmf[::-1])

    def mass_at_least(self, labels: np.ndarray, side: int = 0) -> np.ndarray:
        """Stored mass of the labels >= ``labels`` (no error terms).

        The sums of :attr:`top_mass`; ``side`` = -1 / +1 returns a certified lower / upper bound on
        the exact sum of the stored masses (the computed sum moved by its proven relative bound
        :attr:`_TopSums.rel`, each rounding stepped outwards), 0 the computed sum.

        Args:
          labels: integer labels.
          side: -1, 0 (default) or +1.

        Returns:
          Array of sums.

        Raises:
          ValueError: if ``side`` is not -1, 0 or 1.
        """
        if side not in (-1, 0, 1):
            raise ValueError(f"side must be -1, 0 or 1, got {side!r}")
        n = self.pmf.size
        top = self.top_mass
        counts = n - np.clip(np.asarray(labels) - self.offset, 0, n)
        if side > 0:
            return top.upper(counts)
        if side < 0:
            return top.lower(counts)
        return top.at(counts)

    def reversed(self) -> GridPMF:
        """The distribution of -S (labels negated): tests S <= s become tests -S >= -s."""
        return GridPMF(self.h, -(self.offset + self.pmf.size - 1), self.pmf[::-1], self.tail, self.roundoff,
                       self.entry_roundoff)


@dataclass(frozen=True)
class DiscretePLD(GridPMF):
    """A dominating discrete PLD: P-masses at losses (offset + i) h, a mass at +infinity, errors.

    Attributes:
      inf_mass: P-mass at loss +infinity.
      loss_shift: how far (nats) the dominating losses may lie above the stored atoms (the steps'
        grid points' own rounding; :mod:`rerokit.bounds.pld.step`): every query reads the losses
        that much higher (delta at eps is the stored one at eps - loss_shift).
    """

    inf_mass: float = 0.0
    loss_shift: float = 0.0

    @property
    def error(self) -> float:
        """Mass a dominating composed PLD may miss: +infinity atom, window tails, round-off (the sum
        rounded up)."""
        return float(_up_add(self.inf_mass, self.slack))

    @cached_property
    def _top_sums_and_errors(self) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                                            tuple[np.ndarray, np.ndarray]]:
        """:attr:`top_sums` and :attr:`top_sums_error` from one pass (the Q log-sum and its bound
        come from the same running sum)."""
        l = self.losses
        logp, logq, q_in = _log_q_terms(self.pmf, l)
        with np.errstate(divide="ignore"):
            rp = np.log(np.cumsum(self.pmf[::-1].astype(np.longdouble)).astype(float))
        rq, q_err = prefix_logsumexp(logq[::-1])
        q_err = q_err + np.maximum.accumulate(q_in[::-1])  # the terms' own rounding (_log_q_terms)
        # P: a long double cumulative sum of non-negative terms errs by at most n u_ld relative
        # (Higham 2002, Sec. 4.2), its conversion to double by u, and numpy's log by 4 ulps of the result
        # (8u |log|, as in _log_q_terms)
        u_ld = float(np.finfo(np.longdouble).eps) / 2.0
        n = np.arange(1, rp.size + 1, dtype=float)
        with np.errstate(invalid="ignore"):
            p_err = 1.01 * (n * u_ld + _U) + 8.0 * _U * np.where(np.isfinite(rp), np.abs(rp), 0.0)
        return (l, logp, rq, rp), (q_err, p_err)

    @cached_property
    def top_null(self) -> tuple[_TopSums, float] | None:
        """Sums of the top m atoms' Q-masses q_i = p_i e^{-l_i} (linear space) and a bound rho on
        every term's relative error, or None where a loss lies outside [-700, 700].

        Each term is the rounded product of p_i and numpy's e^{-l_i} at the computed loss: l_i is one
        rounded product (relative u, so e^{-l_i} off by u |l_i|), numpy's exp is within 4 ulps (8u
        relative while the result is normal, as every e^{-l} is for |l| <= 700; the assumption of
        :mod:`rerokit.bounds.pld.logsum`) and the product rounds once (u relative, or an absolute
        2^-1075 where it underflows, allowed for by :data:`_TINY` per term where the sums are used):
        rho = 1.01 u (9 + max |l_i|)."""
        l = self.losses
        big = max(abs(float(l[0])), abs(float(l[-1]))) if l.size else math.inf
        if big > 700.0:
            return None
        e = np.exp(np.negative(l, out=l), out=l)[::-1]  # e^{-l_i}, from the top (l is a fresh array)
        e *= self.pmf[::-1]
        return _TopSums.of(e), 1.01 * _U * (9.0 + big)

    @property
    def top_sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(losses, log p, log Q-mass of the top i+1 atoms, log P-mass of the top i+1 atoms), the
        two sums as computed (see :attr:`top_sums_error` for their proven errors)."""
        return self._top_sums_and_errors[0]

    @property
    def top_sums_error(self) -> tuple[np.ndarray, np.ndarray]:
        """Bounds on |computed - exact| of :attr:`top_sums`' two log sums (absolute, in log).

        Q: the running log-sum-exp's proven bound (:mod:`rerokit.bounds.pld.logsum`), plus the
        largest rounding of its terms log p_i - l_i so far (:func:`_log_q_terms`). P: a long
        double cumulative sum of non-negative terms errs by at most n u_ld relative (Higham 2002,
        Sec. 4.2), its conversion to double by u, and numpy's log by 4 ulps of the result (8u |log|)."""
        return self._top_sums_and_errors[1]

    # ------------------------------------------------------------------ composition

    def compose(self, other: DiscretePLD, log_tau: float = math.log(1e-17)) -> DiscretePLD:
        """The PLD of the product of the two pairs (same grid step), on a Chernoff window.

        Args:
          other: a PLD on the same grid step h.
          log_tau: natural log of the mass allowed outside the window on each side.

        Returns:
          The composed :class:`DiscretePLD` (errors: both inputs' errors plus the new ones).

        Raises:
          ValueError: if the grid steps differ.
        """
        return self.self_compose(1, log_tau, other)

    def self_compose(self, count: int, log_tau: float = math.log(1e-17), other: DiscretePLD | None = None) -> DiscretePLD:
        """The ``count``-fold composition (times ``other`` once, if given), by one FFT.

        Args:
          count: number of copies, >= 1.
          log_tau: natural log of the mass allowed outside the window on each side.
          other: an optional second PLD on the same grid, composed once.

        Returns:
          The composed :class:`DiscretePLD`.

        Raises:
          ValueError: if ``count`` < 1 or the grid steps differ.
        """
        if count < 1:
            raise ValueError(f"count must be an integer >= 1, got {count!r}")
        parts = [(self.offset, self.pmf, int(count))]
        infs = [(self.inf_mass, int(count))]
        errs = count * (self.tail + self.roundoff)
        if other is not None:
            if other.h != self.h:
                raise ValueError(f"grid steps differ: {self.h!r} and {other.h!r}")
            parts.append((other.offset, other.pmf, 1))
            infs.append((other.inf_mass, 1))
            errs += other.tail + other.roundoff
        c = compose(parts, self.h, log_tau)
        # input errors: an l1 perturbation e of one factor moves the composition by <= e in l1
        shift = count * self.loss_shift + (other.loss_shift if other is not None else 0.0)
        return DiscretePLD(self.h, c.offset, c.pmf, c.tail, c.roundoff + errs, c.entry_roundoff + errs,
                           compose_inf_mass(infs), shift * (1.0 + 1e-12))

    # ------------------------------------------------------------------ queries

    def _above(self, cnt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Certified bounds on the top ``cnt`` atoms (losses (offset + i) h exactly): an upper bound on
        their P-mass and a lower bound on the log of their Q-mass (0 and -inf where ``cnt`` = 0).

        The linear-space block sums (:attr:`top_mass`, :attr:`top_null`: each sum within
        :attr:`_TopSums.rel`, the Q terms within rho and 2^-1074 each) where every loss lies in
        [-700, 700]; else the running log-sums of :attr:`top_sums` with :attr:`top_sums_error` (numpy's
        exp within 4 ulps, 8u, where normal; 4 * 2^-1074 absolute below e^-700)."""
        cnt = np.asarray(cnt, dtype=np.int64)
        lin = self.top_null
        if lin is not None:
            tq, rho = lin
            p_hi = self.top_mass.upper(cnt)
            lq_lo = _log_bound(tq.at(cnt), tq.rel, rho, cnt * _TINY, -1)
        else:
            _, _, rq, rp = self.top_sums
            q_err, p_err = self.top_sums_error
            top = np.maximum(cnt - 1, 0)
            lp = _up(rp[top] + p_err[top])
            p_hi = _up(np.exp(lp) * _up(1.0 + 8.0 * _U)) + np.where(lp < -700.0, 4.0 * _TINY, 0.0)
            with np.errstate(invalid="ignore"):
                lq_lo = _down(rq[top] - q_err[top])
        return np.where(cnt > 0, p_hi, 0.0), np.where(cnt > 0, lq_lo, -np.inf)

    def _excess(self, cnt: np.ndarray, t: np.ndarray) -> np.ndarray:
        """An upper bound on sum over the top ``cnt`` atoms of p_i (1 - e^{t - l_i}) = P - e^t Q (exact
        losses), for ``t`` a lower bound on the exact exponent (0 where ``cnt`` = 0).

        P up and Q down by their proven bounds (:meth:`_above`); e^t Q in linear space (numpy's exp,
        8u, and the products stepped down) where the block sums hold and e^t is normal, else as
        e^{t + log Q}, the exponent rounded down."""
        cnt = np.asarray(cnt, dtype=np.int64)
        t = np.asarray(t, dtype=float)
        lin = self.top_null
        with np.errstate(invalid="ignore"):
            if lin is None:
                p_hi, lq_lo = self._above(cnt)
                s_lo = _exp_down(_down(t + lq_lo))
            else:
                tq, rho = lin
                p_hi = self.top_mass.upper(cnt)
                q = tq.at(cnt)
                # the exact Q >= (q (1 - rel) - cnt 2^-1074) / (1 + rho) (_log_bound's reading)
                q_lo = np.maximum(0.0, _down(_down(q * _down(_down(1.0 - tq.rel) * _down(1.0 - rho))) - cnt * _TINY))
                s_lo = _down(_exp_down(t) * q_lo)
                far = t < -700.0  # e^t subnormal: through the logs (e^t Q <= P here: no overflow)
                if far.any():
                    lq = _log_bound(q[far], tq.rel, rho, cnt[far] * _TINY, -1)
                    s_lo[far] = _exp_down(_down(t[far] + lq))
            return np.where(cnt > 0, np.maximum(0.0, _up(p_hi - s_lo)), 0.0)

    def hockey_stick(self, eps: Any) -> np.ndarray:
        """Upper bound on delta(eps) = sup_E P(E) - e^eps Q(E) at every real eps.

        p_inf + sum_i p_i (1 - e^{eps - l_i})_+ plus the error terms (each term is the chord bound
        of its loss bucket, so the true profile lies below at every eps, not only on the grid). The
        sums over the atoms above eps: :meth:`_above` (proven bounds, P up, Q down); the combination's
        roundings, the computed losses' (which atoms lie above eps) and the error terms' sum are each
        rounded up.

        Args:
          eps: real number(s).

        Returns:
          Array of upper bounds (one per eps).
        """
        e = np.atleast_1d(np.asarray(eps, dtype=float))
        n = self.pmf.size
        if not n:
            return np.full(e.shape, self.error)
        shifted = e - self.loss_shift
        e_lo = _down(shifted) if self.loss_shift else shifted  # <= the exact eps - loss_shift
        l = self.losses
        cnt = n - np.searchsorted(l, shifted, side="right")  # atoms whose computed loss is > eps: the top cnt
        m = n - cnt  # the lowest of them
        # sum over the top cnt of p_i (1 - e^{t - l_i}) bounds delta at eps from above for any t <= eps
        # with t <= l_m (no counted term negative): t = min(eps, l_m), both rounded down (one rounding each)
        d = self._excess(cnt, np.minimum(e_lo, _down(l[np.minimum(m, n - 1)])))
        # the atom below (computed loss <= eps) may lie above eps exactly: its term p (1 - e^{eps - l}) is
        # at most p (l - eps) <= p gap; a gap below h leaves no other atom above eps
        below = m > 0
        b = np.maximum(m - 1, 0)
        with np.errstate(invalid="ignore"):
            gap = np.where(below, np.maximum(0.0, _up(_up(l[b]) - e_lo)), 0.0)
        mass = np.where(gap < self.h, self.pmf[b], self.top_mass.upper(n))
        d = _up_add(d, np.where(below & (gap > 0), _up(mass * gap), 0.0))
        return _up_add(d, self.error)

    def log_null_mass_above(self, eps: np.ndarray, strict: bool = True, side: int = 0) -> np.ndarray:
        """log of the Q-mass of the atoms with loss > eps (``strict``) or >= eps.

        The running log-sum of :attr:`top_sums` carries its proven error
        (:mod:`rerokit.bounds.pld.logsum`): ``side`` = -1 / +1 returns a certified lower / upper bound
        on the exact log of the stored atoms' Q-mass (the computed value minus / plus that error,
        rounded outwards by one ulp), 0 the computed value. The symmetrised trade-off curve
        (:mod:`rerokit.bounds.tradeoff`) uses the computed value: there it picks a vertex (any vertex
        gives a valid bound) and the levels of two certified tests joined by a chord (valid at any
        levels, the tests being evaluated at the same ones).

        Args:
          eps: real numbers.
          strict: ">" (default) or ">=".
          side: -1, 0 (default) or +1.

        Returns:
          Array of logs (-inf where no atom qualifies).

        Raises:
          ValueError: if ``side`` is not -1, 0 or 1.
        """
        if side not in (-1, 0, 1):
            raise ValueError(f"side must be -1, 0 or 1, got {side!r}")
        l, _, rq, _ = self.top_sums
        cnt = l.size - np.searchsorted(l, eps, side="right" if strict else "left")
        top = np.maximum(cnt - 1, 0)
        val = rq[top]
        if side:
            q_err = self.top_sums_error[0]
            with np.errstate(invalid="ignore"):  # -inf: an empty (exactly zero) sum stays -inf
                val = np.where(np.isfinite(val), np.nextafter(val + side * q_err[top], side * np.inf), val)
        return np.where(cnt > 0, val, -np.inf)

    def epsilon(self, delta: float) -> float:
        """Smallest eps >= 0 with this PLD's delta(eps) (errors included) <= ``delta``.

        delta(eps) is linear in e^eps between grid points; the grid interval is found from the
        values at the grid points and solved inside it (as dp-accounting's
        ``get_epsilon_for_delta``). The grid values are certified upper bounds (:meth:`_above`'s sums,
        every rounding up), found by bisection (O(log n) sums); the solution is rounded up.

        Args:
          delta: target in (0, 1) (not validated here).

        Returns:
          eps >= 0; inf if the error terms alone reach ``delta``.
        """
        inf = self.error
        if inf >= delta:
            return math.inf
        l = self.losses
        n = l.size
        if not n:
            return math.inf

        def at_grid(k: int) -> float:
            """An upper bound on delta at the exact loss l_k (the atoms above it: the top n - 1 - k)."""
            return float(_up_add(self._excess(np.array([n - 1 - k]), _down(l[k:k + 1]))[0], inf))

        # bisection for k with delta(l_k) <= delta < delta(l_{k-1}) (at_grid(n - 1) = inf < delta)
        lo, k = -1, n - 1
        while k - lo > 1:
            mid = (lo + k) // 2
            if at_grid(mid) <= delta:
                k = mid
            else:
                lo = mid
        # on (l_{k-1}, l_k] delta(eps) = inf + P - e^eps Q (P, Q: the atoms >= k), = delta at
        # log((inf + P - delta) / Q): rounded up (P up, Q down); below l_{k-1} the answer is <= l_{k-1}
        p_hi, lq_lo = self._above(np.array([n - k]))
        num = _up(_up_add(inf, float(p_hi[0])) - delta)
        eps = float(_up(l[k]))
        if num > 0 and np.isfinite(lq_lo[0]):
            lo_eps = float(_up(l[k - 1])) if k else -math.inf
            eps = min(eps, max(lo_eps, float(_up(_log_bound(num, 0.0, 0.0, 0.0, +1) - lq_lo[0]))))
        if self.loss_shift:
            eps = float(_up(eps + self.loss_shift))
        return max(0.0, eps)

    def power(self, log_alphas: Any) -> tuple[np.ndarray, np.ndarray]:
        """Upper bounds on the log power (Neyman-Pearson) at levels alpha = exp(log_alphas).

        log of inf_s (s alpha + p_inf + sum_i p_i (1 - s e^{-l_i})_+) plus the error terms, and the
        optimal eps = log s (the threshold loss). f(s) is convex and piecewise linear in s, so the
        infimum sits at the atom where the Q-mass accumulated from the top first reaches alpha
        (the randomised Neyman-Pearson test); one O(n) pass and O(m log n) for m levels.

        The sums above that atom: in linear space (:attr:`top_mass`, :attr:`top_null`: block sums in
        double, run in long double, each sum within :attr:`_TopSums.rel` relative, the Q terms within
        rho), found by a search on the same running sums, where alpha >= e^-700 and every loss lies in
        [-700, 700]; else the running log-sums of :attr:`top_sums` (log-sum-exp bound). Any atom gives
        a valid bound, so the search needs no error bound; the sums at the chosen atom are rounded
        outwards (P up, Q down) and the final combination's rounding is added (one ulp stepped up).

        Args:
          log_alphas: natural logs of the levels (<= 0).

        Returns:
          ``(log_power, eps_star)``: log_power <= 0 an upper bound (0 where the total Q-mass is
          below alpha), eps_star the threshold loss (-inf there).
        """
        # the loss shift s: delta(eps) <= stored delta(eps - s), so the power at alpha is at most the
        # stored power at alpha e^s
        lk = np.atleast_1d(np.asarray(log_alphas, dtype=float)) + self.loss_shift
        n = self.pmf.size
        allowance = self.error
        # the linear-space sums (top_null, top_mass) where the level is a normal double; else the
        # running log-sums (top_sums). Each level's bound depends on that level only.
        lin = self.top_null
        fast = (lk >= -700.0) if lin is not None else np.zeros(lk.shape, dtype=bool)
        idx = np.zeros(lk.shape, dtype=np.int64)
        log_q_above = np.full(lk.shape, -np.inf)
        log_p_above = np.full(lk.shape, -np.inf)
        if fast.any():
            tq, rho = lin
            cnt, q_sum = tq.count(np.exp(lk[fast]), strict=True)  # Q-mass of the top cnt atoms < alpha
            p_sum = self.top_mass.at(np.minimum(cnt, n - 1))
            idx[fast] = cnt
            # the sums' proven bounds (_TopSums.rel, rho, the underflows' _TINY): P up, Q down
            log_p_above[fast] = _log_bound(p_sum, self.top_mass.rel, 0.0, 0.0, +1)
            log_q_above[fast] = _log_bound(q_sum, tq.rel, rho, cnt * _TINY, -1)
        if not fast.all():
            slow = ~fast
            _, _, rq, rp = self.top_sums
            q_err, p_err = self.top_sums_error  # the sums' proven errors: P up, Q down (an upper bound)
            i_s = np.searchsorted(rq, lk[slow], side="left")
            prev = np.maximum(np.minimum(i_s, n - 1) - 1, 0)
            idx[slow] = i_s
            # each bound's own addition rounded outwards (Q down, P up)
            lq_s, lp_s = rq[prev] - q_err[prev], rp[prev] + p_err[prev]
            log_q_above[slow] = np.where(np.isfinite(lq_s), _down(lq_s), lq_s)
            log_p_above[slow] = np.where(np.isfinite(lp_s), _up(lp_s), lp_s)
        full = idx >= n
        idc = np.minimum(idx, n - 1)
        k = n - 1 - idc
        log_q_above = np.where(idc > 0, log_q_above, -np.inf)
        log_p_above = np.where(idc > 0, log_p_above, -np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            lkk = (self.offset + k) * self.h  # the losses at k (as :attr:`losses` computes them)
            d = np.minimum(0.0, log_q_above - lk)
            y = np.log1p(-np.exp(d))
            frac = lk + y
            t = lkk + frac
            lg = np.logaddexp(log_p_above, t)
            # this combination's own rounding, added on the safe side: the computed loss (u |l_k|),
            # the level's log shifted (u |lk|: log power moves at most as much as log alpha, the
            # power being concave with power(0) >= 0), the sums and logs forming t (one rounding
            # each; numpy's exp and log1p within 4 ulps), where the exp's error, amplified by
            # e^d / (1 - e^d) in y, reaches lg weighted by the term's share, s (alpha - Q) / value,
            # so at most s Q / value <= 1 times 8u (and the rounded d likewise u |d|); each
            # logaddexp 2u (|lg| + 3) (rerokit.bounds.pld.logsum)
            fin_t = np.isfinite(t)
            t_err = (np.abs(lkk) + 2.0 * np.abs(lk) + np.abs(frac) + np.abs(np.where(fin_t, t, 0.0))
                     + 8.0 * np.abs(np.where(fin_t, y, 0.0)) + np.abs(np.where(np.isfinite(d), d, 0.0)) + 8.0)
            margin = np.where(fin_t, t_err, 0.0)
            margin = margin + 2.0 * (np.abs(lg) + 3.0)
            if allowance > 0:
                la = math.log(allowance)
                lg = np.logaddexp(lg, la)
                margin = margin + 2.0 * (np.abs(lg) + 3.0) + 8.0 * abs(la)
            lg = np.where(np.isfinite(lg), np.nextafter(lg + 1.05 * _U * margin, np.inf), lg)
        lg = np.where(full, 0.0, np.minimum(0.0, lg))
        return lg, np.where(full, -np.inf, lkk + self.loss_shift)


def _log_bound(s: np.ndarray, rel: float, rho: float, tiny: Any, side: int) -> np.ndarray:
    """A certified upper (``side`` = +1) or lower (-1) bound on log(exact) from computed sums ``s``
    within relative ``rel`` of the exact sums of the computed terms, each term within relative
    ``rho`` (and absolute ``tiny`` in all) of its exact value. numpy's log is within 4 ulps of the
    result (8u |log s|, :mod:`rerokit.bounds.pld.logsum`); log(1 + x) <= x and -log(1 - x) <= 1.01 x
    for the small x here; every rounding of the bound itself is stepped outwards by one ulp."""
    s = np.asarray(s, dtype=float)
    if side > 0:
        x = _up(s * _up(1.0 + rel))
    else:
        x = _down(_down(s * _down(1.0 - rel)) - tiny)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.log(np.maximum(x, 0.0))
        err = 1.01 * (8.0 * _U * np.abs(v) + rho)
        out = np.nextafter(v + side * err, side * np.inf)
    return np.where(x > 0, out, -np.inf)


def _exp_down(x: Any) -> np.ndarray:
    """A lower bound on e^x for x a lower bound on the exponent: numpy's exp within 4 ulps (8u) while
    normal (x >= -700), else 0; the product stepped down."""
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore"):
        ok = x >= -700.0
        v = _down(np.exp(np.where(ok, x, 0.0)) * _down(1.0 - 8.0 * _U))
    return np.where(ok, v, 0.0)


def _log_q_terms(pmf: np.ndarray, l: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log p_i, log q_i = log p_i - l_i, a bound on |computed log q_i - exact|) for atoms of P-mass
    p_i at losses l_i = (offset + i) h (computed as one rounded product: u |l_i|).

    numpy's log is within 4 ulps (8u |log p_i|; measured in tests/bounds/pld/test_logsum_linear.py) and
    the subtraction rounds once (u |log q_i|): 1.01 u (8 |log p_i| + |l_i| + |log q_i|) (-inf terms are
    exact). A sum of terms each off by a factor e^{d_i} is off by at most max |d_i| in log, so the
    largest bound among the terms summed is added to a log-sum's own bound."""
    with np.errstate(divide="ignore"):
        logp = np.log(pmf)
    logq = logp - l
    with np.errstate(invalid="ignore"):
        err = np.where(np.isfinite(logq), 1.01 * _U * (8.0 * np.abs(logp) + np.abs(l) + np.abs(logq)), 0.0)
    return logp, logq, err


def _widened(g: GridPMF, err: float) -> GridPMF:
    """``g`` with ``err`` more round-off (any sum over labels) and twice that on one entry."""
    if err <= 0.0:
        return g
    return GridPMF(g.h, g.offset, g.pmf, g.tail, g.roundoff + err, g.entry_roundoff + 2.0 * err)


@dataclass(frozen=True)
class ThresholdTests:
    """The bucket statistic S under P (``p``) and under Q (``q``): certified lower bounds.

    S = sum over steps of the bucket label is a function of the output, so every (randomised)
    threshold test on S is a test of the true pair; its level is bounded above and its power below
    by the composed masses with their error terms.
    """

    p: GridPMF
    q: GridPMF
    p_reversed_error: float = 0.0
    q_reversed_error: float = 0.0

    def reversed(self) -> ThresholdTests:
        """The reversed pair (alternative Q, null P) with tests S <= s.

        ``p_reversed_error``/``q_reversed_error`` bound what the masses' rounding can do to a sum
        over the labels <= s (the steps' masses are rounded for the tests S >= s only;
        :mod:`rerokit.bounds.pld.step`); they become round-off of the reversed pair."""
        return ThresholdTests(_widened(self.q.reversed(), self.q_reversed_error),
                              _widened(self.p.reversed(), self.p_reversed_error))

    def power_lower(self, log_alphas: Any) -> np.ndarray:
        """Certified lower bounds on the power at levels exp(log_alphas).

        The test rejects on S >= s and on S = s-1 with probability f; its level is bounded above
        by the in-window Q-mass plus the slack, its power below by the P-mass minus the slack. The
        stored masses' sums (:attr:`GridPMF.top_mass`) are rounded outwards by their proven relative
        bound (Q up, P down) and every other rounding is stepped to the safe side, so the level
        stays <= alpha and the power is a lower bound.

        Args:
          log_alphas: natural logs of the levels (<= 0).

        Returns:
          Array of lower bounds in [alpha, 1] (alpha, trivial, where no threshold test fits).
        """
        kappa = np.exp(np.atleast_1d(np.asarray(log_alphas, dtype=float)))
        cq, cp = self.q, self.p
        Q, qoff, P, poff = cq.pmf, cq.offset, cp.pmf, cp.offset
        tq, tp = cq.top_mass, cp.top_mass
        rq = tq.rel
        # the test S >= s* takes the top m labels of Q's window: the most whose certified Q-mass (the
        # stored sum's bound, _TopSums.rel, plus the slack) stays <= kappa. The search target leaves
        # room for the bound's own roundings; the check below makes it exact.
        with np.errstate(invalid="ignore"):
            target = _down(_down(kappa - cq.slack) / _up(_up(1.0 + rq) * (1.0 + 8.0 * _U)))
        m, q_sum = tq.count(np.maximum(target, 0.0), strict=False)
        q_hi = _up(_up(q_sum * _up(1.0 + rq)) + cq.slack)
        none = (target < 0.0) | (q_hi > kappa) | (kappa <= 0.0)
        i = Q.size - m
        s_star = qoff + i
        rem = np.maximum(_down(kappa - q_hi), 0.0)
        j = np.clip(s_star - poff, 0, P.size)
        power = _down(tp.lower(P.size - j) - cp.slack)  # stored P(S >= s*), down
        # randomised on the label s* - 1: its Q-mass at most qb + entry_roundoff, its P-mass at least
        # pb; f (qb + entry) <= rem keeps the level <= kappa
        b = s_star - 1 - poff
        qb = Q[np.maximum(i - 1, 0)]
        rand = (i > 0) & (qb > 0) & (b >= 0) & (b < P.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.minimum(1.0, _down(rem / _up(qb + cq.entry_roundoff)))
        pb = np.maximum(0.0, _down(P[np.clip(b, 0, P.size - 1)] - cp.entry_roundoff))
        power = np.where(rand, _down(power + _down(f * pb)), power)
        out = np.minimum(1.0, np.maximum(kappa, power))
        return np.where(none, kappa, out)

    def power_lower_at(self, alpha: np.ndarray) -> np.ndarray:
        """:meth:`power_lower` at levels ``alpha`` in [0, 1] (0 at alpha = 0)."""
        a = np.minimum(alpha, 1.0)
        with np.errstate(divide="ignore"):
            la = np.where(a > 0, np.log(np.where(a > 0, a, 1.0)), 0.0)
        return np.where(a > 0, self.power_lower(la), 0.0)

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """For every test "S >= s" (s over both windows, plus the empty test): a lower bound on its
        power P(S >= s) and an upper bound on its level Q(S >= s)."""
        cp, cq = self.p, self.q
        # Outside a window its stored mass "at least s" is constant (all of it, or 0): a label between
        # two far-apart windows gives the same point as the end of the window below it. Only the
        # windows' labels (and one past each end) are evaluated: memory of the windows, not of the
        # gap, which grows linearly with the steps (6e7 labels, 2.7 GB, at sigma 1, q 0.5, T 3e6).
        # A label in both windows gives its point twice (harmless: callers take maxima over points).
        return self.points_at(np.concatenate((np.arange(cp.offset, cp.offset + cp.pmf.size + 1),
                                              np.arange(cq.offset, cq.offset + cq.pmf.size + 1))))

    def points_at(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`points` at the tests "S >= s" for s in ``labels`` (integers): the stored sums' proven
        bounds (:meth:`GridPMF.mass_at_least`, P down, Q up), the slack subtracted (added), every
        rounding stepped outwards."""
        p_lo = np.maximum(0.0, _down(self.p.mass_at_least(labels, -1) - self.p.slack))
        q_hi = np.minimum(1.0, _up_add(self.q.mass_at_least(labels, +1), self.q.slack))
        return p_lo, q_hi
