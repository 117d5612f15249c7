"""The certified PLD engine against riskcal over a grid of everyday DP-SGD settings, in one run.

Grid: sigma in {0.5, 1, 2, 5}, q in {1e-3, 1e-2, 0.1}, T in {1e2, 1e3, 1e4, 1e5}, kappa in {1e-3,
1e-6, 1e-9} (144 cells). Per cell: the wall time of rerokit's full certified bracket of the ReRo gamma
(``rero_dpsgd(..., comparisons=False)``) and of riskcal 1.5.1's ``get_beta_for_dpsgd`` at its default
grid, each the best of ``--repeats``, their ratio (riskcal / rerokit: above 1, rerokit is faster) and
rerokit's relative width (upper - lower) / upper. Then the geometric mean of the ratios, the number of
cells where rerokit is slower, and the slowest cells. riskcal's value is printed beside it: it is not
a bound (it falls below the truth in many settings, benchmarks/pld_soundness.py).

    python benchmarks/pld_scan.py [--repeats 2] [--out scan.jsonl]

Each cell is printed (and appended to ``--out`` as JSON) as it completes. The grid of
benchmarks/pld_engine.py's ``--tinyq`` (q 1e-4) and ``--near1`` (T 1e6) rows is not repeated here.

Measured 2026-11-26 on a shared 2-core machine (load 1.5-2.5, ``--repeats 2``): before this day's
changes (the calibration and near-1 shortcut commits' parent) geometric mean x10.1, rerokit slower in
6 of 144 cells: sigma 5, q 0.1, T 1e5, kappa 1e-3 (gamma near 1: 2.62 s against 0.46 s, x0.17) and
sigma 1, q 1e-3, T 1e4, kappa 1e-9 (474 ms against 213 ms, x0.45), the others x0.78-1.00 (sigma 5,
q 1e-3, T 1e3-1e4; sigma 2, q 1e-3, T 1e4, kappa 1e-9). After (the near-1 shortcut grid, the extended recomposition at small levels where
its bracket is predicted within 5e-3, the blocked linear log-sums and the block-sum queries; load 0.1-1,
2026-11-26 11:02 UTC): geometric mean x10.85, rerokit slower in 1 of 144 cells (sigma 5, q 1e-3, T 1e4,
kappa 1e-9: 18.0 ms against 12.7 ms, x0.71, the far-tail tilt); the near-1 cell 330 ms against 382 ms
(x1.16, 1 - gamma within 6.6e-10), sigma 1, q 1e-3, T 1e4, kappa 1e-9 x1.22. Seventh stop (the grid
step's floor min(3e-5, composed sd / 200), load 0.6-1, ``--repeats 2``): geometric mean x11.82, rerokit
faster in all 144 cells (the slowest ratios x1.14, x1.33, x1.34). Again on the stop's final code (the far-tail
tilt's coarser grids for large tilted windows; load ~1): x11.52, faster in all 144 (slowest x1.07: sigma 5,
q 0.1, T 1e5, kappa 1e-3, gamma near 1, 346 against 369 ms). Eighth stop (the far-tail changes of
benchmarks/pld_far_tail.py; beside a test run, load ~2): x11.92, rerokit slower in 1 of 144 (that
near-1 cell, 344 against 309 ms; its path did not change). A first version of the changes, which also
coarsened one segment's far-tail grid at a small forecast spread, made sigma 1, q 1e-3, T 1e5,
kappa 1e-9 0.71x (a 1.05 % bracket, then refined): builder._TILT_REGRID_SPREAD. Ninth stop (the far
tail's changes of benchmarks/pld_far_tail.py; load ~1): x12.30, rerokit faster in all 144 cells (the
near-1 cell 267 against 303 ms).
"""

from __future__ import annotations

import argparse
import itertools
import os

from _timing import riskcal_cell, riskcal_summary

from rerokit.bounds.dpsgd import rero_dpsgd

SIGMAS = (0.5, 1.0, 2.0, 5.0)
QS = (1e-3, 1e-2, 0.1)
STEPS = (100, 1_000, 10_000, 100_000)
KAPPAS = (1e-3, 1e-6, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=None, help="append one JSON line per cell")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    from riskcal.calibration.dpsgd import get_beta_for_dpsgd

    print(f"load average {os.getloadavg()} (a shared machine: ratios are taken in the same run)")
    rero_dpsgd(1.0, 0.1, 10, 0.01, comparisons=False)  # warm-up (imports)
    get_beta_for_dpsgd(1.0, 0.1, 10, 0.01)
    rows = [riskcal_cell(sigma, q, T, kappa, args.repeats, get_beta_for_dpsgd, out=args.out)
            for sigma, q, T, kappa in itertools.product(SIGMAS, QS, STEPS, KAPPAS)]
    riskcal_summary(rows)

if __name__ == "__main__":
    main()
