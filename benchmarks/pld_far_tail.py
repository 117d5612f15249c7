"""The certified PLD engine against riskcal on seeded random far-tail cells, in one run.

Cells: one Poisson segment, sigma log-uniform in [0.5, 10], q log-uniform in [1e-4, 0.3], T
log-uniform in [10, 1e6], kappa log-uniform in [``--kappa-lo``, ``--kappa-hi``] (default 1e-30 to
1e-15: the far tail, where the fixed grids of benchmarks/pld_engine.py and pld_scan.py have few
cells). Per cell: the wall time of rerokit's full certified bracket of the ReRo gamma
(``rero_dpsgd(..., comparisons=False)``) and of riskcal 1.5.1's ``get_beta_for_dpsgd`` at its default
grid, each the best of ``--repeats``, their ratio (riskcal / rerokit: above 1, rerokit is faster) and
rerokit's relative width (upper - lower) / upper; then the geometric mean, the number of cells where
rerokit is slower and those cells. riskcal's value is not a bound (benchmarks/pld_soundness.py).

    python benchmarks/pld_far_tail.py [--seed 13] [--cells 40] [--repeats 2] [--out far.jsonl]
    python benchmarks/pld_far_tail.py --grid   # the fixed long-schedule grid below instead
    python benchmarks/pld_far_tail.py --small-q --seed 1 --cells 30   # small q, short schedules
    python benchmarks/pld_far_tail.py --tiny-q --seed 2 --cells 30    # tiny q, any length
    python benchmarks/pld_far_tail.py --q-grid   # long schedules at q 1e-5-1e-4

``--grid``: sigma in {1, 1.36, 2}, q in {1e-3, 3e-3}, T in {1e4, 7e4, 3e5}, kappa in {1e-20, 1e-30}
(36 cells): long schedules with small q at tiny levels, where the tilted windows are widest.
``--small-q``: sigma log-uniform in [0.5, 6], q in [3e-5, 1e-3], T in [3, 5000], kappa in [1e-30,
1e-6] (eleventh stop): short and mid-length schedules with small q, whose tails are nearly
lattice-like where q T is small.
``--q-grid``: sigma in {0.8, 1, 1.5, 2}, q in {1e-5, 3e-5, 1e-4}, T in {1e5, 1e6}, kappa in {1e-9, 1e-20,
1e-30} (72 cells, nineteenth stop): long schedules with a few to a hundred expected sampled steps.
``--tiny-q``: sigma log-uniform in [0.5, 2], q in [1e-7, 1e-4], T in [10, 1e6], kappa in [1e-30, 1e-3]
(nineteenth stop): rare sampled steps (q T from 1e-6 to 100), where the one-jump bound
(rerokit.bounds.pld.onejump) and the two-grid tilt of tiny q take over from the untilted grid.

Each cell is printed (and appended to ``--out`` as JSON, with the seed) as it completes.

Measured 2026-11-26, eighth stop (shared 2-core machine, load ~1, ``--repeats 2``), the stop's parent
(67d3bad) and its final code in turn, riskcal in the same runs:
- seed 13: geometric mean riskcal / rerokit x3.67 -> x4.43, rerokit slower in 11 -> 6 of 40 cells.
  sigma 1.28, q 1.75e-3, T 2477, kappa 2.5e-17: 224 -> 54 ms (riskcal 103-105 ms); sigma 1.79, q 4e-3,
  T 327, kappa 3.6e-30: 146 -> 35 ms (riskcal 43-45 ms); sigma 1.75, q 2.5e-3, T 656064,
  kappa 6.6e-30: 180 -> 100 ms (riskcal 73-78 ms).
- seed 14: x2.82 -> x3.36, slower in 11 -> 6 of 40. sigma 0.894, q 2.45e-3, T 114, kappa 4.8e-23:
  346 -> 84 ms (riskcal 274-308 ms); sigma 1.99, q 2.3e-3, T 13, kappa 2e-25: 66 -> 15 ms and
  sigma 1.88, q 1.9e-3, T 311, kappa 9.7e-18: 54 -> 22-26 ms (riskcal 20 and 23-28 ms); sigma 3.7,
  q 1.28e-4, T 58, kappa 1.2e-17: 11.2 -> 8.4 ms (riskcal 7.2-8.7 ms).
- Every bracket below 1 % both times (widest 7.5e-3 and 8.3e-3).
- Still slower (x0.18-0.98): short schedules with tiny q, where riskcal takes 7-17 ms and rerokit one
  tilt of 15-35 ms; and heavy-tailed tilted windows the forecast underestimates (sigma 1.36,
  q 1.13e-3, T 70744, kappa 1.2e-30: a tilted window of 1e6 points, 8x the forecast, 367 against
  66 ms).

Measured 2026-11-27, ninth stop (load ~1, ``--repeats 2``), the stop's parent (631f476) and its final
code in the same session (the parent's grid run in a worktree of it), riskcal in the same runs:
- ``--grid`` (new): geometric mean x1.12 -> x1.47, rerokit slower in 11 -> 9 of 36. sigma 1.36,
  q 1e-3, T 7e4, kappa 1e-30: 768 -> 265 ms (riskcal 61 ms; the deep truncation's tilted far tail
  made the window heavy and the bracket 4.4 % wide, then refined; now the shallow truncation);
  sigma 1.36, q 3e-3, T 1e4, kappa 1e-20 / 1e-30: 204 / 518 -> 45 / 45 ms (riskcal 101-104 ms; the
  grid ladder from 4x its first grid); sigma 1, q 1e-3, T 3e5, kappa 1e-20: 453 -> 215 ms
  (riskcal 193-197 ms).
- seed 13: x4.69 -> x5.09, slower in 6 -> 5 of 40; seed 14: x3.46 -> x4.01, slower in 8 -> 6.
  sigma 0.658, q 1.36e-4, T 36, kappa 1.95e-19: 66 -> 40 ms (the max test's closed form within 2e-3
  of the upper end: the tilt's statistic skipped); sigma 1.36, q 1.13e-3, T 70744, kappa 1.2e-30:
  350 -> 221 ms (riskcal 64-67 ms); sigma 0.887, q 4.36e-4, T 69, kappa 1.92e-18: 44 -> 26 ms (the
  one-grid tilt below 1000 steps, builder._JUMP_FEW_STEPS).
- Every bracket below 1 % (widest 9.5e-3 on the grid, 8.3e-3 and 7.5e-3 on the seeds, as before).
- Still slower: the heavy-tailed long schedules at kappa 1e-20-1e-30 (sigma 1-2, q 1e-3-3e-3, T 1e4-3e5,
  x0.23-0.95: windows of 1.6e5-7e5 points), and small q on short and mid-length schedules (T 16-4694, x0.37-0.97,
  riskcal 7-32 ms).

Measured 2026-11-27, tenth stop (load ~0.7-1, ``--repeats 2``), the stop's parent (bea329b, in a
worktree) and its final code in the same session, riskcal in the same runs:
- ``--grid``: x1.45 -> x2.13, rerokit slower in 10 -> 2 of 36 (the first grid from the width law,
  builder._WIDTH_LAW; the tilt pulled below the saddle point, pld.tilt.pulled_tilt). sigma 2, q 1e-3,
  T 1e4, kappa 1e-30: the law's 4x coarser grid; sigma 1, q 1e-3, T 3e5: the two-grid tilt pulled.
- seed 13: x4.92 -> x5.42, slower in 5 -> 1 of 40 (x0.99); seed 14: x3.91 -> x4.46, slower in 6 -> 3.
- Every bracket below 1 % (widest 7.9e-3 on the grid, 7.2e-3 and 8.3e-3 on the seeds).
- (A run with the pull at 4 nats instead of 3, e16e371: x2.18, x5.62, x4.39.)
- Still slower: sigma 1.36, q 1e-3, T 7e4, kappa 1e-30 (x0.40, 153 against 62 ms: the pulled tilt's
  error term is more than 1e-4 of its upper end, so the saddle point's runs too) and T 3e5 (x0.84);
  small q on short schedules (sigma 3.27, q 1.25e-4, T 17: 15.6 against 11.0 ms; sigma 1.64,
  q 4.7e-4, T 1161: 33.6 against 21.8 ms); sigma 1.36, q 1.13e-3, T 70744, kappa 1.2e-30 (x0.98).

Measured 2026-11-27, eleventh stop (``--repeats 2``), the stop's parent (347f08a, in a worktree)
and its final code in the same session, riskcal in the same runs (the final runs beside a
single-process soundness benchmark):
- ``--small-q`` (new) seed 1: x1.68 -> x2.15, rerokit slower in 7 -> 2 of 30, widest bracket
  1.4e-2 -> 6.9e-3. sigma 0.988, q 3.08e-5, T 361, kappa 1.9e-13: 9566 -> 64 ms (riskcal 39 ms), 1.4 %
  -> 6.6e-4 wide (the tail allowance lowered where it swamps the threshold, pld.tilt._TAU_SHARE);
  sigma 1.338, q 3.06e-5, T 21, kappa 1.3e-20: 16.2 -> 13.3 ms (riskcal 9.3 ms; Newton's saddle point).
- ``--small-q`` seed 2: x2.25 -> x2.47, slower in 6 -> 3 of 30 (the slowest x0.83).
- ``--grid``: x2.23 -> x2.14 in these runs, slower in 2 -> 3 of 36; measured again alone, best of 4,
  with the pulled tilt's fallback share at 1e-4 and 1e-3 (pld.tilt._PULL_ERR) in one process:
  sigma 1.36, q 1e-3, T 7e4, kappa 1e-30 157 -> 88 ms (riskcal 58 ms; 2.9e-3 -> 4.5e-3 wide), T 3e5
  66 / 68 ms (riskcal 65 ms); sigma 2, q 3e-3, T 3e5, kappa 1e-30 46 / 49 ms (riskcal 52 ms).
- seed 13: x5.60 -> x6.07, slower in 2 -> 0 of 40; seed 14: x4.52 -> x4.87, slower in 3 -> 2.
- Every bracket below 1 % (widest 7.9e-3 on the grid, 7.2e-3 and 8.3e-3 on the seeds, 6.9e-3 and
  6.2e-3 on the small-q seeds).
- Still slower: sigma 1.36, q 1e-3, T 7e4, kappa 1e-30 (x0.65 alone); nearly lattice-like small-q
  cells (sigma 0.988, q 3.08e-5, T 361: x0.62) and short small-q schedules (sigma 3.27, q 1.25e-4,
  T 17 and sigma 1.64, q 4.7e-4, T 1161: x0.71; sigma 1.338, q 3.06e-5, T 21: x0.70), where riskcal
  takes 7-40 ms.

Measured 2026-11-27, seventeenth stop (``--repeats 2``), the stop's parent (9fce8a9, in a worktree)
and its final code in the same session, riskcal in the same runs: the step discretisation's one
erfc per point and vectorised exact sums, the width law aimed at 6e-3 (builder._WIDTH_AIM), the
slice windows and the one-jump tilts located on coarse copies, the sparse steps' Chernoff windows
on their nonzero masses:
- ``--grid``: x2.20 -> x2.75, rerokit slower in 2 -> 1 of 36 (sigma 1.36, q 1e-3, T 7e4 / 3e5,
  kappa 1e-30: x0.92 / x0.97 -> faster; the one slower cell of the final run, sigma 2, q 1e-3,
  T 1e4, kappa 1e-30 at x0.88, was riskcal's fast run: best of 7 alone 12.7 against 20.9 ms, x1.65,
  the parent x1.49); the affected brackets 2.8e-3-3.5e-3 -> 6.0e-3-7.5e-3 wide, the widest 7.9e-3
  either way.
- seed 13: x5.70 -> x6.25, slower in 0 -> 0 of 40. ``--small-q`` seed 1: x2.41 -> x2.55, the same
  2 of 30 slower (sigma 1.338, q 3.06e-5, T 21: x0.71 -> x0.88; sigma 0.988, q 3.08e-5, T 361:
  x0.87 -> x0.91, the FFTs of a lattice-like tail in long double).

Measured 2026-11-28, eighteenth stop (``--repeats 2``), the stop's parent (aa48402, in a worktree)
and its final code in the same session: the pulled tilt recomposed in "mixed" precision before the
saddle point's longer window (tilt._PULLED_MIXED_FIRST), the one-jump bound's sparse labels and its
range up to sum q T = 2, the sizing's lazy windows:
- ``--grid``: x2.76 -> x2.85, slower in 0 -> 0 of 36; seed 13: x6.19 -> x6.56, 0 -> 0 of 40.
- ``--small-q`` seed 1: x2.63 -> x2.93, slower in 2 -> 1 of 30 (sigma 0.988, q 3.08e-5, T 361:
  54.0 -> 23.7 ms, 3.2e-4 -> 4.1e-4 wide; left: sigma 1.338, q 3.06e-5, T 21, 12.7 against 10.7 ms).
  The widest brackets are unchanged.

Measured 2026-11-28, nineteenth stop (``--repeats 2``), the stop's parent (d347d36, in a worktree)
and its final code in the same session: the one-jump bound first where it applies
(dpsgd_exact._tilt_first), also at q up to 1e-4 where sum q T <= 0.1 (builder._ONE_JUMP_RARE_Q) and
with the ADD direction composed:
- ``--tiny-q`` (new) seed 2: x2.31 -> x2.74, slower in 9 -> 5 of 30 (sigma 0.911, q 1.02e-5, T 1299,
  kappa 1.25e-13: 156 -> 16 ms, 6.6e-4 -> 5.4e-5 wide; sigma 1.149, q 1.53e-5, T 86, kappa 3.1e-29:
  28 -> 12 ms); seed 3: x2.69 -> x2.94, slower in 7 -> 4. Left: sigma 1.023, q 6.03e-6, T 204451,
  kappa 6.8e-19 (x0.33: the one-jump bound 4e-3 from final, then the tilts) and sigma 1.283,
  q 3.53e-5, T 16679, kappa 9.5e-20 (x0.55: q T 0.59, the tilts alone).
- ``--small-q`` seed 1: x2.94 -> x3.02, slower in 1 -> 0 of 30 (sigma 0.988, q 3.08e-5, T 361: 20.8 ->
  14.2 ms, 4.1e-4 -> 5.8e-5 wide). ``--grid`` x2.86 / x2.81 and seed 13 x6.60 / x6.66, 0 slower
  both, every bracket the same (q above the one-jump bound's range).
- ``--q-grid`` (new): x5.76 -> x5.75, slower in 6 -> 5 of 72, every bracket the same (sum q T >= 1
  there), the widest 1.4e-2 (sigma 1.5-2, q 1e-5, T 1e6). Slowest against riskcal: sigma 1.5, q 1e-4,
  T 1e5, kappa 1e-30, x0.34 (186 against 63 ms: the one-grid tilt's windows of 1-3.5e5 points in
  "mixed" precision, the statistic too, as the max test is 2.2e-2 below). After the refined far-tail
  tilt grid (SchedulePLD.width_aim; against the commit before it): x5.61 -> x5.40, 6 -> 6 slower, the
  widest 1.4e-2 -> 9.9e-3 (the 6 refined cells 1.1-1.4e-2 -> 2.5-3.0e-3 wide, 15-41 -> 19-91 ms).
"""

from __future__ import annotations

import argparse
import itertools
import os

import numpy as np
from _timing import riskcal_cell, riskcal_summary

from rerokit.bounds.dpsgd import rero_dpsgd


def draw(rng: np.random.Generator, kappa_lo: float, kappa_hi: float) -> tuple[float, float, int, float]:
    """One cell (sigma, q, T, kappa), each log-uniform in its range (module docstring)."""
    def lu(a: float, b: float) -> float:
        return float(np.exp(rng.uniform(np.log(a), np.log(b))))

    return (float(f"{lu(0.5, 10.0):.3g}"), float(f"{lu(1e-4, 0.3):.3g}"), int(lu(10, 1e6)),
            float(f"{lu(kappa_lo, kappa_hi):.3g}"))


def draw_small_q(rng: np.random.Generator) -> tuple[float, float, int, float]:
    """One ``--small-q`` cell: sigma 0.5-6, q 3e-5-1e-3, T 3-5000, kappa 1e-30-1e-6, log-uniform."""
    def lu(a: float, b: float) -> float:
        return float(np.exp(rng.uniform(np.log(a), np.log(b))))

    return (round(lu(0.5, 6.0), 3), float(f"{lu(3e-5, 1e-3):.3g}"), int(lu(3, 5000)), float(f"{lu(1e-30, 1e-6):.3g}"))


def draw_tiny_q(rng: np.random.Generator) -> tuple[float, float, int, float]:
    """One ``--tiny-q`` cell: sigma 0.5-2, q 1e-7-1e-4, T 10-1e6, kappa 1e-30-1e-3, log-uniform."""
    def lu(a: float, b: float) -> float:
        return float(np.exp(rng.uniform(np.log(a), np.log(b))))

    return (round(lu(0.5, 2.0), 3), float(f"{lu(1e-7, 1e-4):.3g}"), int(lu(10, 1e6)), float(f"{lu(1e-30, 1e-3):.3g}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--cells", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--kappa-lo", type=float, default=1e-30)
    ap.add_argument("--kappa-hi", type=float, default=1e-15)
    ap.add_argument("--out", default=None, help="append one JSON line per cell")
    ap.add_argument("--grid", action="store_true", help="the fixed long-schedule grid (module docstring)")
    ap.add_argument("--small-q", action="store_true",
                    help="seeded random small-q cells, short to mid schedules (module docstring; --cells, --seed)")
    ap.add_argument("--q-grid", action="store_true",
                    help="the fixed grid of long schedules at q 1e-5-1e-4 (module docstring)")
    ap.add_argument("--tiny-q", action="store_true",
                    help="seeded random tiny-q cells, any length, kappa up to 1e-3 (module docstring; --cells, --seed)")
    args = ap.parse_args()
    if args.repeats < 1 or args.cells < 1:
        ap.error("--repeats and --cells must be at least 1")
    if not 0.0 < args.kappa_lo < args.kappa_hi < 1.0:
        ap.error("need 0 < --kappa-lo < --kappa-hi < 1")
    from riskcal.calibration.dpsgd import get_beta_for_dpsgd

    print(f"load average {os.getloadavg()} (a shared machine: ratios are taken in the same run); seed {args.seed}")
    rero_dpsgd(1.0, 0.1, 10, 0.01, comparisons=False)  # warm-up (imports)
    get_beta_for_dpsgd(1.0, 0.1, 10, 0.01)
    if args.grid:
        cells = list(itertools.product([1.0, 1.36, 2.0], [1e-3, 3e-3], [10_000, 70_000, 300_000], [1e-20, 1e-30]))
        extra = {"grid": "long"}
    elif args.small_q:
        rng = np.random.default_rng(args.seed)
        cells = [draw_small_q(rng) for _ in range(args.cells)]
        extra = {"seed": args.seed, "set": "small-q"}
    elif args.q_grid:
        cells = list(itertools.product([0.8, 1.0, 1.5, 2.0], [1e-5, 3e-5, 1e-4], [100_000, 1_000_000],
                                       [1e-9, 1e-20, 1e-30]))
        extra = {"grid": "q"}
    elif args.tiny_q:
        rng = np.random.default_rng(args.seed)
        cells = [draw_tiny_q(rng) for _ in range(args.cells)]
        extra = {"seed": args.seed, "set": "tiny-q"}
    else:
        rng = np.random.default_rng(args.seed)
        cells = [draw(rng, args.kappa_lo, args.kappa_hi) for _ in range(args.cells)]
        extra = {"seed": args.seed}
    rows = [riskcal_cell(sigma, q, T, kappa, args.repeats, get_beta_for_dpsgd, extra, args.out)
            for sigma, q, T, kappa in cells]
    riskcal_summary(rows)

if __name__ == "__main__":
    main()
