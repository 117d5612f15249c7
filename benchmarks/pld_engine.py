"""The certified PLD engine (rerokit.bounds.pld, issue 17) against riskcal and dp-accounting, in one run.

Rows (T = 1e3, 1e5, 1e6): wall time of rerokit's full certified bracket of the ReRo gamma
(``rero_dpsgd(..., comparisons=False)``: upper and lower end, proven round-off), of riskcal 1.5.1's
``get_beta_for_dpsgd`` at its default grid (1e-4) for the same level, and of dp-accounting's PLD at
its default discretisation (1e-4, connect-the-dots, REMOVE direction composed T times, gamma read
off by min over a 2001-point eps grid of e^eps kappa + delta(eps)). Ratios are printed against
rerokit measured in the same run. Then: a 2,000-step alternating (sigma, q) history, a 2,000-step
history whose steps all differ (sigma ~ U(0.8, 2), q ~ U(0.005, 0.02), seed 0), and the
certified bracket's relative width (upper - lower) / upper over a grid of kappa.

    python benchmarks/pld_engine.py [--repeats 1]

``--two-seg``: 16 seeded random two-segment schedules against dp-accounting (riskcal takes one
segment). Measured 2026-11-26, seventh stop (load ~1, ``--repeats 2``): geometric mean x9.35, rerokit
slower in 1 of 16 (sigma 1.955 / 5.493, q 4.6e-3 / 6.9e-4, T 26 + 614, kappa 3.7e-12: 103 ms
against 73 ms, a bracket 4.8e-6 wide; the two-grid tilt or the one-grid tilt alike). A tiny-q segment
beside one with q above 1e-3 now takes the two-grid tilt (builder._JUMP_Q): sigma 0.961 / 2.04,
q 9.1e-4 / 3.3e-3, T 15831 + 88, kappa 1.4e-12 0.67 s -> 0.15 s (dp-accounting 0.42 s), width
1.1e-3 -> 3.2e-4. After the far-tail tilt of several distinct steps moved to coarser grids where its
window is predicted large (builder._TILT_REGRID_ABOVE, _TILT_OWN_POINTS; beside a CI run, load ~2):
geometric mean x9.08, the same cell the only slower one (110 against 82 ms). Eighth stop (the far-tail
changes of benchmarks/pld_far_tail.py; load ~1, ``--repeats 2``): x9.71, the same cell the only slower
one (88 against 67 ms). Ninth stop (no two-grid tilt below 1000 steps, builder._JUMP_FEW_STEPS; load
~1): x9.93, rerokit faster in all 16 (that cell 27 against 66 ms, a bracket 1.2e-4 wide).

Timings on a shared machine are noisy; each is the best of ``--repeats`` runs.

``--mid``: only the mid-length rows (sigma 2, 3, 5; q 1e-3; T 3e3, 1e4, 3e4, 1e5; kappa 1e-3, 1e-6,
1e-9) against riskcal in the same run, with the geometric mean of the ratios. Measured 2026-11-26 at
load 3-4 (shared 2-core machine), ``--repeats 5``, the previous engine and this one back to back:
geometric mean riskcal/rerokit x0.41 before, x0.73 after. kappa 1e-3: 23-79 ms before (x0.47-2.05),
18-56 ms after (x0.78-3.35; riskcal's own times varied 2x between the two runs); kappa 1e-6: 55-211 ms
before (x0.14-0.55), 19-98 ms after (x0.45-1.25; T 3e3-1e4 no longer recomposed in extended precision,
brackets 3e-4-1.3e-3, were 4e-6-2e-5; T 3e4-1e5 recomposed in mixed precision, 2x faster); kappa 1e-9:
46-163 ms before, 62-140 ms after (the far-tail tilt, rerokit.bounds.pld.tilt, unchanged: x0.16-1.04).
What changed: the log-sums of the top sums in linear space (pld.logsum; one pass, was two), FFT sizes
2^k, 3 * 2^k or 9 * 2^k (pocketfft; was 2^k or 3 * 2^k: 73728 points instead of 98304 at T 1e4), the
extended recomposition in "mixed" precision on the double one's windows, the max test without
scipy.special (the first small-level call of a process: 89 ms against 630 ms, which imported it). Main
rows in the same conditions (``--repeats 3``): 62 / 55 / 45 ms before, 42 / 32 / 25 ms after.

Measured 2026-11-25 on a loaded shared 2-core machine (load ~4.9), ``--repeats 5``: T=1e3 rerokit
22 ms (riskcal x29, dp-accounting x35); T=1e5 18.5 ms (riskcal x2.25, dp-accounting x9.9; the
riskcal ratio was 1.7-2.2 over other runs and interleaved loops at load 4-5); T=1e6 16 ms (riskcal
x90, dp-accounting x57). 2,000-step alternating history 58 ms (reconstruction_risk 85 ms). Relative
width <= 4.3e-3 for kappa in [1e-30, 1e-3] on the three width rows. 2026-11-26 on the merged main
at load 0.7, ``--repeats 5``: 15.8 / 13.6 / 11.1 ms (riskcal x20.9 / x2.33 / x86, dp-accounting
x35 / x9.3 / x53), history 27 ms (reconstruction_risk 47 ms). Before (2026-11-24,
long-double FFTs): 29 / 52 / 52 ms, riskcal x0.73 at T=1e5.
2026-11-26 (load ~2.6-3.6, ``--repeats 3``): 26.2 / 14.4 / 17.1 ms (riskcal x17.8 / x2.30 / x87,
dp-accounting x35 / x10.0 / x59), alternating history 33 ms (reconstruction_risk 54 ms); the
2,000-step history of distinct steps (a noise scheduler; batched across steps,
rerokit.bounds.pld.batch) 9.7 s, 28 s before in the same conditions (59 s under heavier load),
gamma in [0.0440179, 0.0440218] both ways. 2026-11-26, with the steps as rows of 2-D blocks (the
same, bit-identical steps), their exact mass sums vectorised and the window in groups, old and new
interleaved in fresh processes (best of 2, three rounds, load 3.1-3.8): 12.3 / 15.7 / 15.0 s
against 16.8 / 18.8 / 21.7 s (x1.2-1.45), the same gamma bracket; the 2,000 steps alone 6.4 s
against 14.7 s, one window 0.41 s against 0.73 s; the three FFT compositions (compose) unchanged.

``--small``: the T = 1e5 row (sigma 2, q 0.002) at kappa 1e-3 .. 1e-30 against riskcal in the same run,
with the geometric mean of the ratios below 1e-3 (``--small --mid`` prints both). Measured 2026-11-26
(2-core shared machine, load 1.8-3.6, ``--small --mid --repeats 3``, this engine and the previous one
back to back in fresh processes): kappa 1e-6 / 1e-9 / 1e-15 / 1e-20 / 1e-30 took 21.9 / 21.1 / 21.6 /
27.5 / 31.1 ms (riskcal x1.70 / x1.66 / x1.65 / x1.38 / x1.15), before 72.4 / 48.4 / 51.2 / 46.3 /
52.1 ms (x0.55 / x0.73 / x0.73 / x0.76 / x0.65); geometric mean x1.49 (was x0.68). Brackets identical
except kappa 1e-6 (relative width 1.2e-3 -> 1.6e-3). ``--mid`` kappa 1e-9 (sigma 2 / 3 / 5, T 3e3, 1e4,
3e4, 1e5): 22.7, 30.5, 25.6, 22.2 / 13.8, 20.8, 20.8, 26.3 / 30.7*, 33.7*, 19.9, 20.7 ms against
36.8, 56.8, 50.4, 45.4 / 31.3, 41.6, 38.9, 41.7 / 29.1, 43.8, 40.8, 38.6 ms before (* a load spike:
15.9 and 22.4 ms in a quieter run); riskcal x0.51-1.97 (was x0.26-1.19), geometric mean of all 36 cells
x0.97 (was x0.81); widths at T 3e3 1.0-2.3e-3 (were 1.6-1.7e-4, the extended recomposition), at T 1e5,
kappa 1e-6 1.0-1.6e-3 (were 2-6e-4), the others as before. What changed
(rerokit.bounds.dpsgd_exact._tilt_first): where the untilted double-precision bracket is predicted useless
(its round-off, ~3e-14 T, costs it about 2 ro (1/gamma + 1/kappa), gamma by a Chernoff estimate at the
saddle point) at kappa <= 1e-6, the far-tail tilt answers alone and the untilted PLD is never composed
(schedule_pld now sizes the grid by the steps and Chernoff windows and composes on first use); the
tilt reuses the sizing's steps where its grid and truncation are the schedule's own, and the
forecast's saddle point; the tilt's suffix log-sums start at the tilted mass's 1e-2 quantile. Left:
kappa 1e-9 at T 1e4 (x0.5-0.7): the tilt is three compositions of ~6.5e4 points plus the steps
(whose normal tails, math.erfc per point, are a fifth of the call) where riskcal takes 10-20 ms.
2026-11-26 later (``--mid --repeats 3``, this engine and the previous one back to back, two rounds,
load 3.3-4.9; each rerokit time the best of both rounds, riskcal the best of all four, as its own
times varied up to 2x between runs): kappa 1e-9 (sigma 2 / 3 / 5, T 3e3, 1e4, 3e4, 1e5) 27.7, 22.9,
17.0, 14.7 / 10.7, 14.9, 13.7, 12.1 / 8.7, 12.0, 12.0, 11.4 ms against 31.2, 31.9, 24.1, 33.0 /
15.7, 22.1, 20.2, 28.0 / 16.9, 37.8, 31.7, 20.3 ms before; riskcal x0.67-4.75 (was x0.34-2.05),
geometric mean x1.45 (was x0.81); kappa 1e-6 x1.10 (was x0.95), kappa 1e-3 unchanged in code path
(x1.12 against x1.18: noise); all 36 cells x1.21 (was x0.97). In CPU time (process_time, best of 8
in alternating fresh processes) the kappa 1e-9 cells and kappa 1e-6 at T 1e5 went x1.37-1.97 faster
(geometric mean x1.65). Widths at kappa 1e-9: 2e-5-1e-4 at T 3e3-1e4 (were 8e-4-2.3e-3), 2e-4-5e-4 at
T 3e4 (were 2e-4-5e-4), 1.2e-3-3.1e-3 at T 1e5 (were 1.1e-3-2.0e-3); kappa 1e-6 at T 1e5 1.0-2.5e-3
(were 1.0-1.6e-3). What changed: (i) the far-tail tilt's lower end also takes the Neyman-Pearson
test that randomizes between the two thresholds around the level (rerokit.bounds.pld.tilt,
_randomized_lower), so the statistic's grid no longer costs a label's mass: the lower ends sit
1e-5 below the upper ones at T 3e3-1e4 instead of 1e-3; (ii) where the schedule's own truncation
already meets the tilt's +infinity-mass target, the tilt runs first on a 2x coarser grid (half the
FFT points, its steps at half the cost, the forecast's saddle point) and keeps that bracket within
4e-3 in log, else this grid's steps too (rerokit.bounds.pld.builder, _TILT_GRID_FACTOR); at sigma 5
it no longer builds deeper-truncated steps (the ends moved < 3e-9 relative); (iii) the tilt's
running suffix sums in double with the recursive sum's proven bound u sum_i c_i / c_j (~1e-13 here;
pld.logsum, summation="double"), the chosen test's P-sum as one total; (iv) the steps' normal tails
once per point set (4 ndtr arrays, was 6) and libm's erfc through map/fromiter (bit-identical).
Main rows in the same run: 17.4 / 23.7 / 18.3 ms against 20.6 / 22.4 / 20.0 ms (same brackets);
``--small``: kappa 1e-6 .. 1e-30 widths 1.2 / 1.5 / 2.0 / 2.4 / 2.9e-3 (were 1.6 / 2.6 / 3.1 / 4.3 /
4.3e-3), geometric mean x1.75 against x1.57. The width rows of the main table: sigma 0.8, q 0.004,
T 5000, kappa 1e-12 4.9e-4 (was 3.7e-4, the coarse grid's upper end), kappa 1e-20 / 1e-30 1.0-1.3e-4
(were 3.7-4.8e-4). ``--widths`` afterwards (load ~5): every cell within 2 %, widest 1.11e-2 (sigma 0.3,
q 1e-4, T 1e6, kappa 1e-30; was 1.12e-2), every near-1 cell's 1 - gamma bracket within 7.9e-10 as
before. Left: kappa 1e-3 / 1e-6 at T 1e4 (x0.7-0.85, the plain path, whose long double
sums in rerokit.bounds.pld.discrete are about a quarter of the call). Tried and left: _tilt_first
from a predicted double width of 1e-3 (was 5e-3) sends kappa 1e-6 at T 1e4-3e4 to the tilt alone,
x1.3-1.6 faster in CPU time with brackets of 3e-5-4e-4 (plain 1.2e-3-3.7e-3), but
tests/bounds/pld/test_precise_enough.py pins the plain path's recomposition rule on exactly those
cells (T 3e4, kappa 1e-6), so the rule is unchanged.
Reverted afterwards (2026-11-26, the lead): change (ii), the 2x coarser tilt grid, because it kept
the coarse bracket by its width with the lower end included, so the upper end with and without
the bracket differed (calibration compares bracket=False upper ends; a calibrated sigma missed its
target by 3e-5 relative; tests/bounds/pld/test_bracket_consistency.py). After the revert, same run
(load ~2, best of 3): ``--mid`` geometric mean x1.09; kappa 1e-9 cells x0.59-2.78 (slowest sigma 5,
T 1e4: 15.4 ms against riskcal's 9.1 ms), widths 5e-6-8e-4; ``--small`` x1.30-2.04 at every
kappa 1e-3 .. 1e-30 (17.0-25.2 ms against 32.8-36.1 ms).

``--widths`` (a few minutes): every cell of the issue's grid within 2% (widest 1.1%: sigma 0.3,
q 1e-4, T 1e6, kappa 1e-30). sigma = 1, q = 1e-4, where one sampled step's jump dominates the tail
(the tilted PLD, its round-off weighted by the untilting factors, of steps truncated where the
mass at +infinity is <= kappa e^-7; the max test's power below): T = 1e6 0.67% at kappa = 1e-20,
0.20% at 1e-30 (were 4.2%, 2.2%: round-off limited), T = 1e3 0.026%, 0.013% (were 0.82%, 0.024%);
the two rows take 2.8 s and 3.7 s for their four kappas at load ~4 (2026-11-26), one tail call
1.8-3.8 s there against 20-35 s before in the same run (13.5-17.7 s before at load ~1).
The bracket of 1 - gamma is <= 8.7e-10 in every cell with gamma > 0.999 (2026-11-26, the
lower-tail tilt on two grids, rerokit.bounds.pld.lowertail; 5.2e-10 at sigma 1, q 0.01, T 1e6,
kappa 1e-20, 3.9e-10 and 8.6e-10 at sigma 20, q 0.3, T 1e6, kappa 1e-20 and 1e-30, each around a
Lugannani-Rice reference: were 9.6e-7, 1.5e-8 and 1.5e-6 with the 8x finer grid alone; the rest
<= 1.1e-10). Those three calls take 4.6-5.8 s, 0.13 s and 2.8-3.5 s at load ~5 (were 1.0, 0.56
and 0.53 s); kappa = 1e-9 on the same rows 0.1 s (was 0.5 s).
2026-11-26, after sharing the tilted compositions among levels, skipping the middle grid where it
cannot stop and smaller windows (rerokit.bounds.pld.lowertail's docstring), at load 1.3-1.8, best
of 3 in fresh processes against the previous version in the same run: 1.44 s (was 2.46 s; riskcal
0.97 s) at sigma 1, q 0.01, kappa 1e-20 and 1.16 s (was 1.71 s; riskcal 3.0 s) at sigma 20, q 0.3,
kappa 1e-30; twelve levels in one call 2.6 s (was 8.3 s). With the steps' ndtr rounding proven
(rerokit.bounds.pld.step), the 1 - gamma brackets at T = 1e6 are wider: see the README.
2026-11-26 later (``--widths`` cells with gamma > 0.999, against the previous version): the
statistic's mass defect is gone (rerokit.bounds.pld.lowertail.conserve_at_bottom), so the 20 cells
at T 1e6 whose 1 - gamma is ~0 went from 5.4-6.9e-10 to 1.1e-15 and sigma 20, q 0.3, kappa 1e-20
from 9.5e-10 to 3.9e-10; sigma 1, q 0.01, kappa 1e-20 2.27e-9 -> 1.43e-9 and sigma 20, q 0.3,
kappa 1e-30 3.00e-9 -> 2.11e-9 (still above 1e-9: the dominating split's proven rounding, ~1.1-1.4e-9,
lowertail's docstring); every other near-1 cell <= 4.5e-11. sigma 1, q 0.01, kappa 1e-20 at load
3.4-4.4, best of 3, fresh processes alternating: rerokit 2.80-2.96 s (was 3.11-3.73 s), riskcal
x0.62-0.64 (was x0.42-0.43); sigma 20, q 0.3, kappa 1e-30 riskcal x2.6-3.3 (was x2.3-2.6).
2026-11-26, the lower-tail tilt's fine steps with the split fraction from the mixture's components
(rerokit.bounds.pld.step.component_split: the (1 - q) part cancels exactly): sigma 1, q 0.01,
kappa 1e-20 1.43e-9 -> 7.5e-10; sigma 20, q 0.3, kappa 1e-30 2.11e-9 -> 1.44e-9 (there N(1, sigma^2)
and N(0, sigma^2) nearly coincide and the tails' argument rounding dominated); every lower end
unchanged. No far-tail tilt where gamma > 0.999 (its target is 1 - gamma): the sigma 0.3, q 0.3, T 1e6 row 48.5 s -> 18.1 s, all
widths unchanged. Then each fine split fraction also from a 3-point Gauss-Legendre rule with a proven
remainder (the smaller bound per bucket) and the finest grids' dominating steps 2x finer where they
fit: sigma 20, q 0.3, kappa 1e-30 1.44e-9 -> 7.3e-10 (1.5-1.7 s), sigma 1, q 0.01, kappa 1e-20 7.3e-10:
every near-1 cell of the grid within 1e-9. Main rows on the merged main (load 2.3-3.1, ``--repeats 3
--widths``): 23.5 / 16.6 / 13.6 ms, riskcal x16.7 / x2.34 / x78, dp-accounting x28.8 / x9.2 / x48; alternating history 37 ms
(reconstruction_risk 69 ms); 2,000 distinct steps 10.0 s; widest cell 1.12% (sigma 0.3, q 1e-4, T 1e6,
kappa 1e-30).
2026-11-26, the far-tail tilt's redundant work cut (every number bit-identical: the upper end's
four-term log-sum without stacking the columns, the lower end's P-sum at its one chosen test instead
of all suffix sums, the saddle point's bisection on log masses computed once; the linear-space
log-sum's bound formed in place, pld.logsum, 1.5x faster; the Chernoff window's exact bounds one
side each). Old and new in one process, switched call by call (load 3.0-3.3, best of 15):
rerokit.bounds.pld.tilt.tilted_power at kappa 1e-9 (q 1e-3) 26.4 -> 22.3 ms (sigma 2, T 1e5),
26.0 -> 22.4 ms (sigma 3, T 3e4), 25.7 -> 23.2 ms (sigma 5, T 1e4), about half of such a call.
Whole calls (best of 6, same conditions), the 36 --mid cells and the main rows: every bracket
identical; geometric mean old/new x1.00 at kappa 1e-9 and 1e-3, x0.99 at 1e-6, x1.06 on the main
rows (1.04-1.09) -- within this machine's noise (single cells x0.6-1.3 both ways). What was checked
and left: the tilt is needed where it runs (plain brackets at kappa 1e-9, T 1e4-1e5: [1.0e-9,
1.8-7.3e-9] against tilted widths 2e-4-2e-3); the three tilted compositions are each needed (the
plain lower end is 25-65 % below there); the tilted windows are +-7.4 sd (tau 1e-12, masses at the
edges already 0), so a larger tau would save about 10 % of the FFT points only, and move numbers;
at T 3e3, kappa 1e-9 the time is the extended-precision recomposition (dpsgd._extend), not the tilt.
Then dpsgd_exact._PRECISE_ENOUGH 2e-3 -> 5e-3 (no extended recomposition where the double bracket is within
a quarter of the 2 % target): of the 39 cells above only q 1e-3, T 3e4, kappa 1e-6 change (sigma 2 /
3 / 5: widths 1.1e-4 / 6.9e-5 / 4.2e-5 -> 3.1e-3 / 3.4e-3 / 3.7e-3), x2.2-2.5 faster (same process,
switched call by call, best of 6, load 2.4-3.2); against riskcal in one process (best of 3, load 3.2,
the test suite running alongside) x0.44 / x0.43 / x0.30 before, x1.20 / x1.06 / x0.88 after.
``--widths`` afterwards: widest cell still 1.12e-2 (sigma 0.3, q 1e-4, T 1e6, kappa 1e-30), every cell
within 2 %, the near-1 cells as before (measured before the quadrature split was merged; with it every
near-1 cell is within 7.4e-10).

``--near1``: the near-gamma=1 cells at T = 1e6 (sigma 1, q 0.01, kappa 1e-20; sigma 20, q 0.3, kappa
1e-30; the sigma 0.3, q 0.3 row's four kappas, where riskcal's self-composition asks for a 31 GiB FFT)
against riskcal in the same run (near1_rows). 2026-11-26, the lower-tail tilt's sparse fine steps,
super-blocks on a 4x coarser top grid and the statistic's smaller extended FFTs
(rerokit.bounds.pld.lowertail's docstring), ``--repeats 3`` at load ~5 (shared 2-core machine), the
engine before and after in back-to-back runs of this benchmark: sigma 1, q 0.01 1.06 s (riskcal
1.43 s, x1.35), before 3.13 s (riskcal 2.14 s, x0.68); sigma 20, q 0.3 1.60 s (riskcal 6.28 s,
x3.91), before 2.15 s (x2.82); the sigma 0.3 row 36.0 s against 33.8 s (its near-1 part 0.29-0.36 s
per kappa against 0.47-0.52 s; the rest is the plain composition's extended recomposition). The
brackets of 1 - gamma 7.86e-10 and 7.92e-10 (were 7.26e-10 and 7.32e-10), every near-1 cell of
``--widths`` within 7.9e-10 (widest relative width still 1.12e-2). Fresh processes alternating
(best of 3, load 4.5-7): sigma 1, q 0.01 1.53 s wall / 0.75 s CPU against 3.07 s / 1.50 s before
and riskcal 2.23 s / 1.12 s.
2026-11-26, the plain path's queries (rerokit.bounds.pld.discrete): DiscretePLD.power and
ThresholdTests.power_lower read their sums from linear-space block sums (blocks of 16 in double, run
in long double, one proven relative bound of about 3e-15) at the searched atom instead of forming the
running log-sums, their errors and the long double suffix sums over the whole window; the final
combination's rounding and the threshold tests' sums are now bounded too. Old and new in one
process, switched call by call (best of 5, load 2.0): rero_dpsgd(1, 1e-4, T, 1e-3) 79 -> 55 ms (T
1e3), 101 -> 68 ms (1e5), 124 -> 79 ms (1e6); the T 1e4 --mid cells (q 1e-3, sigma 2 / 3 / 5, kappa
1e-3 and 1e-6) x1.28-1.45; against riskcal in the same run their geometric mean x0.71 -> x1.03
(cells x0.82-1.49). Brackets identical to 10 digits; over 108 cells (sigma 0.5-10, q 1e-3-1, T 1-1e4,
kappa 1e-1-1e-9) both ends within 4.2e-14 relative of before.
2026-11-26, fourth stop (load 1.3-1.8, ``--repeats 3`` / ``--tinyq --repeats 2`` / ``--mid --repeats 2``,
riskcal in the same runs): main rows 16.1 / 10.4 / 8.8 ms (riskcal x21.8 / x3.22 / x113, dp-accounting
x36.8 / x13.3 / x70.2), alternating history 28 ms (reconstruction_risk 61 ms), 2,000 distinct steps
8.7 s. ``--tinyq``: kappa 1e-3 63 / 71 / 82 ms at T 1e3 / 1e5 / 1e6 (riskcal x1.25 / x1.24 / x1.20:
faster at every T; were x0.69-0.79), kappa 1e-9 177 / 947 / 223 ms (x0.46 / x0.10 / x0.43), kappa
1e-20 91 / 210 / 507 ms (x0.84 / x0.43 / x0.20): still slower there (were x0.06-0.30). What changed:
the Chernoff windows' and the saddle point's moments of sparse steps on their nonzero masses
(pld.compose, pld.tilt); running log-sums over millions of terms by blocks of 4096 shifted to their
largest term and the total shifted by its largest term (pld.logsum, proven bounds; the tilt's
suffix sums and its lower end's power were np.logaddexp.accumulate); the block-sum queries above.
``--mid``: geometric mean x1.18 (x1.03 at the start of the day, load 0.5; cells
x0.61-3.67, slower only at kappa 1e-9 for T 3e3-3e4, x0.61-0.89, and sigma 3/5 at T 1e4, x0.88-0.97,
within noise), brackets unchanged.
2026-11-26, sixth stop (load 0.1-1.0, ``--mid --repeats 3`` and ``--widths``, riskcal in the same
runs): the default grid step has a floor min(1e-5, composed loss sd / 200)
(rerokit.bounds.pld.step.default_grid_step; large sigma with small q had grids of ~1e-6 nats and
brackets 1e-6-5e-5 wide). ``--mid`` geometric mean x1.15 -> x1.35; sigma 5, T 3e3 / 1e4 at kappa
1e-3 7.7 / 11.1 ms -> 4.3 / 5.7 ms (riskcal x1.03 / x0.79 -> x1.78 / x1.47). Still slower: kappa 1e-9
at T 1e4-3e4 (x0.74-0.98 in 6 of 12 cells; the tilt's three compositions and its evaluation). 25
random cells (sigma 0.5-10, q 1e-4-0.3, T 10-1e6, kappa 1e-30-1e-3, seed 11; /tmp script, best of
2): rerokit slower than riskcal in 5 before (x0.43-0.91: sigma 9.4, q 5e-4, T 5870 19.1 ms against
8.2 ms; sigma 6.7, q 2.8e-4, T 2164 15.8 against 7.8 ms), in 1 after (sigma 1.85, q 1.2e-3, T 5.4e4,
kappa 1.2e-29: 31 against 25 ms, x0.82), those cells now 4.8-5.7 ms with brackets 1.6e-6-2.5e-3.
``--widths``: every cell within 2 % (widest unchanged, 1.11e-2); the cells that moved are q 1e-4 at
sigma 1 / 4 / 20 (widest 7.2e-3 at sigma 20, T 1e6, kappa 1e-3, was 2.6e-4). Measured and not kept:
STEP_POINTS 20 instead of 40 (x2 at T <= 4e4, --mid x1.54) moved pinned golden values (the README's
gamma 0.19421 +- 1e-5 to 0.194224); COMPOSED_POINTS 2000 as well broke the 2 % width (2.06e-2 at
sigma 0.3, q 1e-4, T 1e6, kappa 1e-30) and the 1e-9 beta target at T 1e6 (2.9e-9); the tilt on a 2x
coarser grid at kappa 1e-9 saved 20-30 % only.
2026-11-26, seventh stop (load 0.3-0.6, riskcal in the same runs): the floor of the default grid step
raised to min(3e-5, composed sd / 200). ``--mid --repeats 3``: geometric mean x1.40 -> x2.12, every
cell faster than riskcal (x1.17-4.23; the kappa 1e-9 cells at T 1e4-3e4 were x0.77-0.98), widths
<= 4e-3 (were <= 3e-3); H_FLOOR 1e-4 measured x2.98 with widths to 9e-3 and not kept. ``--small``
x1.31-2.46 (geometric mean x1.66); ``--widths``: every cell within 2 %, widest unchanged (1.11e-2);
25 random cells (seed 11): slower than riskcal in 1, unchanged (sigma 1.85, q 1.2e-3, T 5.4e4, kappa
1.2e-29, x0.81, the coarse tail path). Schedules of >= 16 distinct steps default to 20 grid points
per step's loss sd instead of 40 (rerokit.bounds.pld.builder._DISTINCT_STEP_POINTS): the 2,000
distinct steps below 8.7 -> ~4.6-5.1 s, width 9e-5 -> 3.6e-4; 25 random 16-120-step schedules
(sigma 0.4-8, q 1e-4-0.3, kappa 1e-30-1e-2): every bracket within 2 % (widest 1.5e-2, the same
with 40 points: sigma 2, q 1e-4, T 3 x 107 steps, kappa 4e-23, 27 s, the tilt's refinement).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from typing import Any

import numpy as np
from _timing import best_time

from rerokit.bounds.dpsgd import rero_dpsgd

ROWS = [(1.0, 0.01, 1_000), (2.0, 0.002, 100_000), (4.0, 0.001, 1_000_000)]
KAPPA = 1e-3
DISTINCT_STEPS = 2_000


def dp_accounting_gamma_segments(segs: list[tuple[float, float, int]], kappa: float) -> float:
    """gamma <= min over eps of e^eps kappa + delta(eps) from dp-accounting's PLD at its default
    discretisation: each segment's REMOVE pmf self-composed T times, the segments composed."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    pmf = None
    for sigma, q, T in segs:
        # the REMOVE direction only (peer's API)
        one = pldlib.from_gaussian_mechanism(sigma, sampling_prob=q)._pmf_remove.self_compose(T)  # noqa: SLF001
        pmf = one if pmf is None else pmf.compose(one)
    eps = np.linspace(-1.0, 20.0, 2001)
    return float(np.min(np.exp(eps) * kappa + np.asarray(pmf.get_delta_for_epsilon(eps))))


TWO_SEG_CELLS = 16
TWO_SEG_SEED = 5


def two_segment_rows(repeats: int) -> None:
    """Seeded random two-segment schedules (sigma 0.5-8, q 1e-4-0.1, T 10-1e5 per segment; kappa
    1e-12-1e-2) against dp-accounting's PLD at its default discretisation (riskcal takes one segment
    only): time, ratio dp-accounting / rerokit, rerokit's relative width; the geometric mean."""
    rng = np.random.default_rng(TWO_SEG_SEED)

    def lu(a: float, b: float) -> float:
        return float(np.exp(rng.uniform(np.log(a), np.log(b))))

    print(f"\ntwo-segment schedules (seed {TWO_SEG_SEED}): time (ms), ratio dp-accounting/rerokit, rerokit's width")
    ratios = []
    for _ in range(TWO_SEG_CELLS):
        segs = [(round(lu(0.5, 8.0), 3), float(f"{lu(1e-4, 0.1):.3g}"), int(lu(10, 1e5))) for _ in range(2)]
        kappa = float(f"{lu(1e-12, 1e-2):.2g}")
        t_r, b = best_time(lambda: rero_dpsgd(segments=segs, kappa=kappa, comparisons=False), repeats)
        t_d, g = best_time(lambda: dp_accounting_gamma_segments(segs, kappa), repeats)
        ratios.append(t_d / t_r)
        print(f"  {segs} kappa {kappa:.1e}: rerokit {t_r * 1e3:7.1f} ms [{b.interval[0]:.5g}, {b.value:.5g}] "
              f"w {(b.value - b.interval[0]) / b.value:.1e} | dp-accounting {t_d * 1e3:7.1f} ms "
              f"(x{t_d / t_r:.2f}) gamma {g:.5g}", flush=True)
    print(f"  geometric mean of dp-accounting/rerokit: x{math.exp(float(np.mean(np.log(ratios)))):.2f}; "
          f"rerokit slower in {sum(r < 1.0 for r in ratios)} of {len(ratios)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--widths", action="store_true",
                    help="also the width grid (sigma 0.3-20, q 1e-4-1, T 1-1e6, kappa 1e-3-1e-30; a few minutes)")
    ap.add_argument("--mid", action="store_true",
                    help="only the mid-length rows against riskcal (sigma 2, 3, 5; q 1e-3; T 3e3-1e5; kappa 1e-3-1e-9)")
    ap.add_argument("--near1", action="store_true",
                    help="only the near-gamma=1 cells at T 1e6 against riskcal (near1_rows)")
    ap.add_argument("--small", action="store_true",
                    help="only the small levels of the T = 1e5 row against riskcal (kappa 1e-3-1e-30; with --mid, both)")
    ap.add_argument("--tinyq", action="store_true", help="only the tiny-q cells (sigma 1, q 1e-4) against riskcal (tinyq_rows)")
    ap.add_argument("--tinyq-multi", action="store_true",
                    help="only the two-segment tiny-q cells (tinyq_multi_rows; with --baseline-src, against another checkout)")
    ap.add_argument("--two-seg", action="store_true",
                    help="only random two-segment schedules against dp-accounting (two_segment_rows)")
    ap.add_argument("--pixel", action="store_true",
                    help="only the pixel-tolerance cells (kappa ~ 1e-473, log brackets; pixel_rows)")
    ap.add_argument("--baseline-src", default=None,
                    help="with --pixel / --tinyq-multi: the src/ of another checkout, timed in subprocesses in the same run")
    args = ap.parse_args()
    if args.pixel:
        print(f"load average {os.getloadavg()}")
        return pixel_rows(args.repeats, args.baseline_src)
    if args.tinyq_multi:
        print(f"load average {os.getloadavg()}")
        return tinyq_multi_rows(args.repeats, args.baseline_src)
    print(f"load average {os.getloadavg()} (measured on a loaded shared machine)")
    try:
        from riskcal.calibration.dpsgd import get_beta_for_dpsgd
    except ImportError:
        get_beta_for_dpsgd = None
    rero_dpsgd(1.0, 0.1, 10, 0.01, comparisons=False)  # warm-up (imports)
    if args.two_seg:
        return two_segment_rows(args.repeats)
    if args.tinyq:
        return tinyq_rows(get_beta_for_dpsgd, args.repeats)
    if args.mid or args.small:
        if args.small:
            small_rows(get_beta_for_dpsgd, args.repeats)
        if args.mid:
            mid_rows(get_beta_for_dpsgd, args.repeats)
        return
    if args.near1:
        near1_rows(get_beta_for_dpsgd, args.repeats)
        return
    print(f"\ngamma at kappa={KAPPA}: time (ms), ratio peer/rerokit")
    for sigma, q, T in ROWS:
        t_r, b = best_time(lambda: rero_dpsgd(sigma, q, T, KAPPA, comparisons=False), args.repeats)
        line = (f"  sigma={sigma} q={q} T={T:>8}: rerokit {t_r * 1e3:8.1f} ms  bracket [{b.interval[0]:.6g}, "
                f"{b.value:.6g}] rel. width {(b.value - b.interval[0]) / b.value:.1e}")
        if get_beta_for_dpsgd is not None:
            t_c, beta = best_time(lambda: get_beta_for_dpsgd(sigma, q, T, KAPPA), args.repeats)
            line += f" | riskcal {t_c * 1e3:8.1f} ms (x{t_c / t_r:.2f}) gamma {1 - float(beta):.6g}"
        t_d, g = best_time(lambda: dp_accounting_gamma_segments([(sigma, q, T)], KAPPA), args.repeats)
        line += f" | dp-accounting {t_d * 1e3:8.1f} ms (x{t_d / t_r:.2f}) gamma {g:.6g}"
        print(line, flush=True)

    hist = [(1.0, 0.01, 1), (1.3, 0.02, 1)] * 1000
    t_h, b = best_time(lambda: rero_dpsgd(segments=hist, kappa=0.01, comparisons=False), args.repeats)
    print(f"\n2,000-step alternating (sigma, q) history: {t_h * 1e3:.1f} ms, gamma in [{b.interval[0]:.6g}, {b.value:.6g}]")
    import rerokit

    t_risk, r = best_time(lambda: rerokit.reconstruction_risk(hist, prior=100), args.repeats)
    print(f"  reconstruction_risk (gamma, epsilon, membership) on it: {t_risk * 1e3:.1f} ms")

    rng = np.random.default_rng(0)  # a noise scheduler: every step distinct (batched, rerokit.bounds.pld.batch)
    distinct = [(float(rng.uniform(0.8, 2.0)), float(rng.uniform(0.005, 0.02)), 1) for _ in range(DISTINCT_STEPS)]
    t_d, b = best_time(lambda: rero_dpsgd(segments=distinct, kappa=0.01, comparisons=False), args.repeats)
    print(f"{DISTINCT_STEPS:,}-step history of distinct steps (sigma ~ U(0.8, 2), q ~ U(0.005, 0.02)): "
          f"{t_d * 1e3:.1f} ms, gamma in [{b.interval[0]:.6g}, {b.value:.6g}]")

    print("\ncertified relative width (upper - lower) / upper, by kappa (floored: the PLD's error floor "
          "dominates and the RDP bound answers)")
    for sigma, q, T in [(1.0, 0.01, 1000), (0.8, 0.004, 5000), (2.0, 0.002, 100_000)]:
        cells = []
        for lk10 in (-3, -6, -9, -12, -20, -30):
            b = rero_dpsgd(sigma, q, T, log_kappa=lk10 * math.log(10), comparisons=False)
            w = (b.value - b.interval[0]) / b.value
            cells.append(f"1e{lk10}: {w:.1e}{'*' if b.extras.get('floored') else ''}")
        print(f"  sigma={sigma} q={q} T={T}: " + "  ".join(cells))
    if args.widths:
        width_grid()


MID_SIGMAS = (2.0, 3.0, 5.0)
MID_Q = 1e-3
MID_TS = (3_000, 10_000, 30_000, 100_000)
MID_KAPPAS = (1e-3, 1e-6, 1e-9)


def mid_rows(get_beta_for_dpsgd: Any, repeats: int) -> None:
    """Mid-length schedules (T 3e3-1e5), where riskcal was the faster: rerokit's certified bracket
    (warm: the process's first call at a small level is made before timing) against riskcal's
    ``get_beta_for_dpsgd`` in the same run, each the best of ``repeats``; ratio riskcal / rerokit
    (> 1: rerokit faster), and the geometric mean of the ratios."""
    rero_dpsgd(2.0, MID_Q, 1000, 1e-9, comparisons=False)  # warm-up of the small-level path
    print(f"\nmid-length rows, q={MID_Q}: time (ms), ratio riskcal/rerokit, rerokit's relative width")
    logs = []
    for sigma in MID_SIGMAS:
        for T in MID_TS:
            cells = []
            for kappa in MID_KAPPAS:
                t_r, b = best_time(lambda: rero_dpsgd(sigma, MID_Q, T, kappa, comparisons=False), repeats)
                cell = f"{kappa:g}: {t_r * 1e3:6.1f}"
                if get_beta_for_dpsgd is not None:
                    t_c, _ = best_time(lambda: get_beta_for_dpsgd(sigma, MID_Q, T, kappa), repeats)
                    cell += f" vs {t_c * 1e3:5.1f} (x{t_c / t_r:.2f})"
                    logs.append(math.log(t_c / t_r))
                cells.append(cell + f" w {(b.value - b.interval[0]) / b.value:.0e}")
            print(f"  sigma={sigma} T={T:>6}: " + " | ".join(cells), flush=True)
    if logs:
        print(f"  geometric mean of riskcal/rerokit: x{math.exp(sum(logs) / len(logs)):.2f}")


SMALL_ROW = (2.0, 0.002, 100_000)
SMALL_KAPPAS = (1e-3, 1e-6, 1e-9, 1e-15, 1e-20, 1e-30)


def small_rows(get_beta_for_dpsgd: Any, repeats: int) -> None:
    """The T = 1e5 row of the main table at small levels (where the far-tail tilt answers,
    rerokit.bounds.dpsgd_exact._tilt_first) against riskcal's ``get_beta_for_dpsgd`` in the same run, each
    the best of ``repeats`` (warm); ratio riskcal / rerokit (> 1: rerokit faster), rerokit's relative
    width, and the geometric mean of the ratios below kappa = 1e-3."""
    sigma, q, T = SMALL_ROW
    rero_dpsgd(sigma, q, 1000, 1e-9, comparisons=False)  # warm-up of the small-level path
    print(f"\nsmall levels, sigma={sigma} q={q} T={T}: time (ms), ratio riskcal/rerokit, rerokit's relative width")
    logs = []
    for kappa in SMALL_KAPPAS:
        t_r, b = best_time(lambda: rero_dpsgd(sigma, q, T, kappa, comparisons=False), repeats)
        line = (f"  kappa={kappa:g}: rerokit {t_r * 1e3:6.1f} ms  bracket [{b.interval[0]:.6g}, {b.value:.6g}] "
                f"w {(b.value - b.interval[0]) / b.value:.1e}")
        if get_beta_for_dpsgd is not None:
            t_c, beta = best_time(lambda: get_beta_for_dpsgd(sigma, q, T, kappa), repeats)
            line += f" | riskcal {t_c * 1e3:6.1f} ms (x{t_c / t_r:.2f}) gamma {1 - float(beta):.6g}"
            if kappa < 1e-3:
                logs.append(math.log(t_c / t_r))
        print(line, flush=True)
    if logs:
        print(f"  geometric mean of riskcal/rerokit below kappa 1e-3: x{math.exp(sum(logs) / len(logs)):.2f}")


WIDTH_SIGMAS = (0.3, 1.0, 4.0, 20.0)
WIDTH_QS = (1e-4, 1e-2, 0.3, 1.0)
WIDTH_TS = (1, 1_000, 1_000_000)
WIDTH_LOG10_KAPPAS = (-3, -9, -20, -30)


def width_grid() -> None:
    """Certified relative width (upper - lower) / upper of ``rero_dpsgd`` over the issue's grid
    (target <= 2% for every kappa >= 1e-30), and where gamma > 0.999 the width of the bracket of
    1 - gamma, i.e. upper - lower (target <= 1e-9 where gamma is near 1). ``*``: floored (the
    RDP/Hölder bound answers). One line per (sigma, q, T), with its wall time."""
    import time

    print("\nwidth grid: relative width per log10 kappa; [beta: upper - lower] where gamma > 0.999")
    worst = (0.0, None)
    for sigma in WIDTH_SIGMAS:
        for q in WIDTH_QS:
            for T in WIDTH_TS:
                t0 = time.perf_counter()
                cells = []
                for lk10 in WIDTH_LOG10_KAPPAS:
                    b = rero_dpsgd(sigma, q, T, log_kappa=lk10 * math.log(10), comparisons=False)
                    w = (b.value - b.interval[0]) / b.value
                    cell = f"{lk10}: {w:.1e}{'*' if b.extras.get('floored') else ''}"
                    if b.value > 0.999:
                        cell += f" [beta {b.value - b.interval[0]:.1e}]"
                    cells.append(cell)
                    if w > worst[0]:
                        worst = (w, (sigma, q, T, lk10))
                print(f"  sigma={sigma:<4} q={q:<6g} T={T:>7} ({time.perf_counter() - t0:5.1f} s): " + "  ".join(cells),
                      flush=True)
    print(f"  widest: {worst[0]:.2e} at (sigma, q, T, log10 kappa) = {worst[1]}")


# (sigma, q, log10 kappas, whether riskcal runs: at sigma 0.3, q 0.3, T 1e6 its self-composition
# asks for a 31 GiB FFT and fails)
NEAR1_CELLS = ((1.0, 0.01, (-20,), True), (20.0, 0.3, (-30,), True), (0.3, 0.3, WIDTH_LOG10_KAPPAS, False))
NEAR1_T = 1_000_000


def near1_rows(get_beta_for_dpsgd: Any, repeats: int) -> None:
    """gamma near 1 at T = 1e6 (the lower-tail tilt, rerokit.bounds.pld.lowertail): rerokit's
    certified bracket against riskcal's ``get_beta_for_dpsgd`` at the same levels in the same run,
    each the best of ``repeats``; per cell the wall time of all its levels, the ratio riskcal /
    rerokit (> 1: rerokit faster) and the widest bracket of 1 - gamma (issue 17's beta target:
    <= 1e-9 where gamma > 0.999). The process's first near-1 call imports scipy.special (its ndtr
    on large grids); riskcal imports it too, before any timing here."""
    import scipy.special  # noqa: F401 - (see the docstring)

    print(f"\nnear-1 cells, T={NEAR1_T}: time (s) of all levels, ratio riskcal/rerokit, widest beta bracket")
    for sigma, q, lk10s, peer in NEAR1_CELLS:
        def ours() -> list:
            return [rero_dpsgd(sigma, q, NEAR1_T, log_kappa=lk * math.log(10), comparisons=False) for lk in lk10s]

        t_r, bs = best_time(ours, repeats)
        beta_w = max((b.value - b.interval[0] for b in bs if b.value > 0.999), default=float("nan"))
        line = (f"  sigma={sigma:<4} q={q:<4} kappa=1e{','.join(str(k) for k in lk10s)}: rerokit {t_r:6.2f} s, "
                f"beta bracket {beta_w:.3e}, 1 - gamma in [{1 - bs[-1].value:.10e}, {1 - bs[-1].interval[0]:.10e}]")
        if get_beta_for_dpsgd is not None and peer:
            t_c, betas = best_time(lambda: [float(get_beta_for_dpsgd(sigma, q, NEAR1_T, 10.0 ** lk)) for lk in lk10s],
                                   repeats)
            line += f" | riskcal {t_c:6.2f} s (x{t_c / t_r:.2f}) beta {betas[-1]:.10e}"
        print(line, flush=True)


def tinyq_rows(get_beta_for_dpsgd: Any, repeats: int) -> None:
    """sigma 1, q 1e-4, T 1e3 / 1e5 / 1e6, kappa 1e-3 / 1e-9 / 1e-20: rerokit's certified bracket
    against riskcal's ``get_beta_for_dpsgd`` in the same run, each the best of ``repeats`` (riskcal's
    values at 1e-9 and 1e-20 are off by orders of magnitude: its grid does not resolve those tails).

    Measured 2026-11-26 08:03 UTC, ``--repeats 2``, load 4.0-5.2 (a shared 2-core machine, the
    targeted tests running beside; riskcal took 258-327 ms here against 76-146 ms at load ~4.5
    earlier), after (the far-tail tilt's coarse-grid ladder, SchedulePLD._tail_power_coarse: one
    step on 8192 points first, finer as the width predicts; tiny-q REMOVE steps on sparse tail grids,
    builder._SPARSE_Q) and before (the previous commit, run right after, best of 2), rerokit ms
    (riskcal/rerokit; relative width):

    =========  ================================  ================================  ================================
    T          kappa 1e-3                        kappa 1e-9                        kappa 1e-20
    =========  ================================  ================================  ================================
    1e3        409 (x0.63; 2.5e-6), was 641      1055 (x0.28; 2.4e-4), was 1213    821 (x0.36; 3.3e-4), was 8056
                                                                                   (2.6e-4)
    1e5        461 (x0.65; 1.4e-4), was 575      2152 (x0.15; 3.4e-3), was 5316    1473 (x0.21; 2.8e-3), was 6346
                                                 (1.8e-3)                          (4.5e-4)
    1e6        394 (x0.83; 3.5e-3), was 492      1146 (x0.28; 7.4e-3), was 1138    3132 (x0.09; 6.7e-3), was 2634
    =========  ================================  ================================  ================================

    Still slower than riskcal in every cell (whose values at 1e-9 / 1e-20 are wrong by orders of
    magnitude). Left: at T 1e6, kappa 1e-20 the tilt on the schedule's own grid (58006 points per
    step, the width's floor ~5e-3) is the call; at T 1e3, kappa 1e-9 the untilted double and
    extended compositions (dpsgd_exact._exact_power_once's choice); at kappa 1e-3 the Chernoff windows and
    compositions on the full grid.

    Re-measured on the final code of that day (after the coarse-tilt revert and the review mends),
    load ~1, best of 2: 113 / 309 / 244 ms at T 1e3, 123 / 1429 / 432 ms at T 1e5 (kappa 1e-9 now
    8.3e-4 wide), 111 / 371 / 927 ms at T 1e6; riskcal 77-97 ms, ratios x0.07-0.84.

    2026-11-26 13:25 UTC, load 1.7-1.9, ``--tinyq --repeats 2``, the previous version (69926e7) and
    this one alternating in fresh processes, two runs each (best of the two runs; riskcal from the
    same runs, 91-125 ms): the two-grid tilt of :mod:`rerokit.bounds.pld.jumps` (a fine bulk on the
    finest grid of 0.5-4x the schedule's that one step fits, jumps on a grid ~20-80x coarser, K = 3-4
    slices; dpsgd_exact._tilt_first takes it first where the untilted window has >= 200k points), rerokit
    ms (riskcal/rerokit; relative width), was:

    =========  ================================  ================================  ================================
    T          kappa 1e-3                        kappa 1e-9                        kappa 1e-20
    =========  ================================  ================================  ================================
    1e3        71 (x1.28; 2.5e-6), was 71        72 (x1.33; 1.6e-3), was 188       78 (x1.18; 2.6e-4), was 102
                                                 (2.4e-4)                          (2.4e-4)
    1e5        92 (x1.16; 1.4e-4), was 81 (*)    55 (x1.84; 5.9e-4), was 935       65 (x1.55; 3.7e-4), was 219
                                                 (8.3e-4)                          (2.3e-3)
    1e6        99 (x1.06; 3.5e-3), was 88 (*)    57 (x1.88; 1.5e-3), was 230       66 (x1.58; 3.9e-3), was 513
                                                 (6.1e-3)                          (6.4e-3)
    =========  ================================  ================================  ================================

    Faster than riskcal in every cell (whose values at 1e-9 / 1e-20 are still wrong by orders of
    magnitude), every bracket within 0.4 %. (*) kappa 1e-3 takes the same code path as before (same
    brackets); timed alone, alternating fresh processes, best of 3: 75 / 96 / 105 ms against 76 /
    95 / 106 ms (x0.99-1.01): the difference in the table is the order of the cells. At T 1e3,
    kappa 1e-9 the untilted double and extended compositions (2.4e-4 wide, 188 ms) gave way to the
    tilt (1.6e-3: the bulk's grid, the schedule's own h; a finer one does not fit one step).
    Other cells (q 1e-3, sigma 0.5 / 1 / 2, T 1e2-1e5, kappa 1e-6 / 1e-9, alternating fresh
    processes, before the bulk's finer grids): the same brackets and times (x0.95-1.16) except
    sigma 1, q 1e-3, T 1e4, kappa 1e-9, 95 ms against 215 ms (bracket 1.2e-4 wide, was 7.9e-4).
    Random tiny-q cells (sigma 0.6-1.6, q 5e-5-1e-3, T 3e2-1e6, kappa 1e-30-1e-6; the two paths'
    certified brackets all overlap): up to x90 (17.7 s against 0.20 s at sigma 1.15, q 5.4e-5,
    T 1.4e5, kappa 8e-18, bracket 1.2e-2 wide, was 2.1e-2; 6.0 s against 66 ms at sigma 0.87,
    q 5.1e-5, T 5.8e4, kappa 2e-13, 1.2e-3, was 4.6e-2); where it was slower (small tilts on short
    schedules: sigma 0.73-0.79, T ~1.5e3, 96-146 ms against 86-97 ms) the one-grid tilt answers
    again (builder._JUMP_SMALL_T: the same brackets and times as before, x0.95-1.01)."""
    print("\ntiny q (sigma 1, q 1e-4): time (ms), ratio riskcal/rerokit, relative width")
    for T in (1000, 100_000, 1_000_000):
        for kappa in (1e-3, 1e-9, 1e-20):
            t_r, b = best_time(lambda: rero_dpsgd(1.0, 1e-4, T, kappa, comparisons=False), repeats)
            line = (f"  T={T:>8} kappa={kappa:<6g}: rerokit {t_r * 1e3:8.1f} ms  bracket [{b.interval[0]:.6g}, "
                    f"{b.value:.6g}] rel. width {(b.value - b.interval[0]) / b.value:.1e}")
            if get_beta_for_dpsgd is not None:
                t_c, beta = best_time(lambda: get_beta_for_dpsgd(1.0, 1e-4, T, kappa), repeats)
                line += f" | riskcal {t_c * 1e3:8.1f} ms (x{t_c / t_r:.2f}) gamma {1 - float(beta):.6g}"
            print(line, flush=True)


# two-segment tiny-q schedules (the two-grid tilt of several distinct steps, pld.jumps.jump_parts_multi)
TINYQ_MULTI_CELLS = ([(1.0, 1e-4, 500_000), (2.0, 2e-4, 500_000)], [(0.8, 1e-4, 100_000), (1.5, 5e-4, 10_000)],
                     [(1.0, 1e-4, 1000), (1.2, 1e-4, 1000)], [(0.5, 1e-4, 100_000), (1.0, 1e-3, 10_000)],
                     [(1.0, 1e-3, 10_000), (2.0, 1e-3, 10_000)], [(0.3, 1e-4, 1_000_000), (0.5, 1e-4, 10_000)])
TINYQ_MULTI_KAPPAS = (1e-9, 1e-20, 1e-30)
_TINYQ_MULTI_SNIPPET = """
import json, sys, time
from rerokit.bounds.dpsgd import rero_dpsgd
rero_dpsgd(1.0, 0.1, 10, 0.01, comparisons=False)
out = []
for segs in json.loads(sys.argv[1]):
    for kappa in json.loads(sys.argv[2]):
        best = None
        for _ in range(int(sys.argv[3])):
            t0 = time.perf_counter()
            b = rero_dpsgd(segments=[tuple(s) for s in segs], kappa=kappa, comparisons=False)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        out.append((best, b.interval[0], b.value))
print(json.dumps(out))
"""


def tinyq_multi_rows(repeats: int, baseline_src: str | None) -> None:
    """``rero_dpsgd(segments=..., kappa=...)`` on two-segment tiny-q schedules
    (:data:`TINYQ_MULTI_CELLS` x :data:`TINYQ_MULTI_KAPPAS`): time and relative width, this checkout
    and, with ``--baseline-src``, another one's src/ (one fresh process per checkout, best of
    ``repeats`` per cell, alternating the checkouts' processes twice).

    Measured 2026-11-26 ~16:10 UTC (shared 2-core machine, load 1.0-1.3, ``--tinyq-multi --repeats 2
    --baseline-src`` the commit before the two-grid tilt of several distinct steps, 870c889), this /
    baseline, ms (relative width):

    ==========================================  =====================  =====================  =====================
    segments (sigma, q, T)                      kappa 1e-9             kappa 1e-20            kappa 1e-30
    ==========================================  =====================  =====================  =====================
    (1, 1e-4, 5e5) + (2, 2e-4, 5e5)             104 / 280 (1.4e-3 /    110 / 13895 (1.1e-3    72 / 1362 (2.8e-3 /
                                                5.6e-3)                / 9.2e-3)              1.6e-3)
    (0.8, 1e-4, 1e5) + (1.5, 5e-4, 1e4)         100 / 1350 (1.2e-4 /   106 / 320 (6.6e-4 /    89 / 430 (1.9e-3 /
                                                3.2e-3)                2.4e-3)                2.5e-3)
    (1, 1e-4, 1e3) + (1.2, 1e-4, 1e3)           126 / 195 (2.5e-4 /    117 / 98 (4.6e-4 /     80 / 94 (9.5e-4 /
                                                4.4e-4)                6.3e-4)                4.9e-4)
    (0.5, 1e-4, 1e5) + (1, 1e-3, 1e4)           191 / 836 (2.2e-4 /    224 / 348 (2.5e-3 /    236 / 404 (7.5e-3 /
                                                1.8e-4)                3.0e-3)                3.1e-3)
    (1, 1e-3, 1e4) + (2, 1e-3, 1e4)             250 / 604 (6.8e-5 /    87 / 186 (1.7e-3 /     101 / 195 (1.9e-3 /
                                                1.0e-4)                1.5e-3)                2.0e-3)
    (0.3, 1e-4, 1e6) + (0.5, 1e-4, 1e4)         247 / 210 (2.5e-3,     230 / 222 (8.0e-3,     201 / 208 (1.1e-2,
                                                same)                  same)                  same)
    ==========================================  =====================  =====================  =====================

    The sigma 0.5 row takes the cut 0.5 nats (pld.builder._JUMP_MULTI_CUTS: at 0.05 its step at t ~3
    needs K = 25, 208-232 slices); the sigma 0.3 row is not the tilt's (spread or level: the same
    code path, the difference is the load). Slower: T 1e3 + 1e3 at kappa 1e-20, 117 against 98 ms
    (x0.82-0.90 in three runs; the one-grid tilt was cheap there). The earlier run of the day (this
    code before the higher cuts) gave the same brackets elsewhere."""
    import json
    import subprocess
    import sys

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    runs = [("this", here)] + ([("baseline", baseline_src)] if baseline_src else [])
    got: dict[str, list] = {}
    for _ in range(2):  # alternate: the load drifts
        for name, src in runs:
            r = subprocess.run([sys.executable, "-c", _TINYQ_MULTI_SNIPPET, json.dumps(TINYQ_MULTI_CELLS),
                                json.dumps(TINYQ_MULTI_KAPPAS), str(repeats)], env=dict(os.environ, PYTHONPATH=src),
                               capture_output=True, text=True, check=True)
            rows = json.loads(r.stdout.strip().splitlines()[-1])
            got[name] = rows if name not in got else [(min(x[0], y[0]), x[1], x[2]) for x, y in zip(got[name], rows)]
    print("\ntwo-segment tiny q: time (ms), relative width")
    i = 0
    for segs in TINYQ_MULTI_CELLS:
        for kappa in TINYQ_MULTI_KAPPAS:
            t, lo, up = got["this"][i]
            line = f"  {segs} kappa={kappa:<6g}: {t * 1e3:8.1f} ms  [{lo:.5g}, {up:.5g}] width {(up - lo) / up:.1e}"
            if "baseline" in got:
                tb, lob, upb = got["baseline"][i]
                line += f" | baseline {tb * 1e3:8.1f} ms width {(upb - lob) / upb:.1e} (time x{tb / t:.2f})"
            print(line, flush=True)
            i += 1


# (sigma, q, T, log kappa): the tests' saddle-point cells (tests/bounds/test_dpsgd_pixel.py) at
# kappa ~ e^-1089 (~1e-473, the MNIST pixel-tolerance baseline of Hayes et al. 2023, App. I), and
# the same schedules at the CIFAR-10 one, kappa = 2.96e-1850
PIXEL_CELLS = ((1.0, 0.01, 1000, -1089.106), (0.5, 0.01, 1000, -1089.067), (2.0, 0.002, 100_000, -1088.914),
               (1.0, 0.01, 1000, -4258.698), (0.5, 0.01, 1000, -4258.698), (2.0, 0.002, 100_000, -4258.698))
_PIXEL_SNIPPET = """
import json, sys, time
from rerokit.bounds.dpsgd import rero_dpsgd
rero_dpsgd(1.0, 0.1, 10, 0.01, comparisons=False)
out = []
for sigma, q, T, lk in json.loads(sys.argv[1]):
    best = None
    for _ in range(int(sys.argv[2])):
        t0 = time.perf_counter()
        b = rero_dpsgd(sigma, q, T, log_kappa=lk, comparisons=False)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    out.append((best, b.extras["log_gamma_lower"], b.extras["log_gamma"]))
print(json.dumps(out))
"""


def pixel_rows(repeats: int, baseline_src: str | None) -> None:
    """The log bracket (log gamma lower, upper) and wall time of ``rero_dpsgd(..., log_kappa=...)`` at
    kappa ~ e^-1089 (:data:`PIXEL_CELLS`), this checkout and, with ``--baseline-src``, another one's
    src/ in a subprocess of the same run (each best of ``repeats``, one process per checkout), then
    one pixel call through the CLI (a fresh process each: sigma 1, q 0.01, T 1e3, log10 kappa -472.015).

    Measured 2026-11-26 13:18 UTC (shared 2-core machine, load 1.6-1.9, ``--pixel --repeats 3
    --baseline-src /work/main/src``, the previous engine = main at 69926e7): below 1e-300 the
    far-tail tilt's steps are continued in log masses (rerokit.bounds.pld.logtail), so its upper end
    replaces the Hölder/RDP bound, and the Hölder bound (two thirds of the old time) is computed
    only where the tilt's log bracket is wider than 5e-3 or the schedule has <= 8 steps. Log widths
    (upper - lower, nats) this / baseline, and times this / baseline:

    ==========================  ===================================  ===================================
    schedule                    kappa ~ e^-1089 (MNIST)              kappa = 2.96e-1850 (CIFAR-10)
    ==========================  ===================================  ===================================
    sigma 1, q 0.01, T 1e3      1.13e-4 / 0.554, 0.78 / 2.73 s       1.17e-4 / 0.608, 1.27 / 3.32 s
    sigma 0.5, q 0.01, T 1e3    7.80e-4 / 0.0148, 0.25 / 2.35 s      8.82e-4 / 1.70, 0.40 / 2.41 s
    sigma 2, q 0.002, T 1e5     4.42e-3 / 0.137, 1.46 / 3.25 s       4.29e-3 / 0.138, 2.40 / 5.00 s
    ==========================  ===================================  ===================================

    The CLI pixel call (log10 kappa -472.015, a fresh process) 1.46 s against 3.78 s, log10 bracket
    [-420.337134, -420.337085] against [-420.337134, -420.096763]. 40 distinct steps (sigma ~
    U(0.8, 2), q ~ U(0.005, 0.02), T 25 each, seed 0) at log kappa -1089: 9.1 s against 94 s (the
    Hölder bound alone took 93.6 s), log width 6.2e-5 against 0.71. The log-mass continuation is
    0.03-0.15 s of a call (the Mills series vectorised, normal.log_ndtr_many; 1.0 s at kappa
    1e-1850 with the scalar log_ndtr per point)."""
    import json
    import subprocess
    import sys

    cells = json.dumps(PIXEL_CELLS)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    runs = [("this", here)] + ([("baseline", baseline_src)] if baseline_src else [])
    got = {}
    for name, src in runs:
        env = dict(os.environ, PYTHONPATH=src)
        r = subprocess.run([sys.executable, "-c", _PIXEL_SNIPPET, cells, str(repeats)], env=env,
                           capture_output=True, text=True, check=True)
        got[name] = json.loads(r.stdout.strip().splitlines()[-1])
    print("\npixel-tolerance cells: log bracket width (upper - lower, nats), time (s)")
    for i, (sigma, q, T, lk) in enumerate(PIXEL_CELLS):
        t, lo, up = got["this"][i]
        line = f"  sigma={sigma} q={q} T={T:>7} log kappa={lk}: [{lo:.4f}, {up:.4f}] width {up - lo:.2e} {t:6.2f} s"
        if "baseline" in got:
            tb, lob, upb = got["baseline"][i]
            line += f" | baseline width {upb - lob:.2e} {tb:6.2f} s (time x{tb / t:.2f})"
        print(line, flush=True)
    cli = ["-c", "import sys; from rerokit.cli import main; sys.exit(main())", "bound", "dpsgd", "--noise-multiplier",
           "1", "--sample-rate", "0.01", "--steps", "1000", "--log10-kappa", "-472.015", "--json"]
    for name, src in runs:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable] + cli, env=dict(os.environ, PYTHONPATH=src), capture_output=True, text=True)
        d = json.loads(r.stdout) if r.returncode == 0 else {}
        print(f"  CLI ({name}): {time.perf_counter() - t0:.2f} s, log10 gamma {d.get('log10_gamma')}, "
              f"log10 bracket {d.get('log10_interval')}", flush=True)


if __name__ == "__main__":
    main()
