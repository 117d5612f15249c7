"""Speed and accuracy of the DP-SGD ReRo bound: exact (certified PLD bracket) vs Hayes et al.
Algorithm 1 (Monte Carlo), measured in the same run.

Setting (issue 2): q = 0.01, sigma = 1, T = 1000, kappa = 0.01, Monte Carlo with 10^6 samples.
Prints both values, both wall times, their ratio, the exact method's certified error, and the
exact method at a few grid steps (speed vs accuracy). Also the CLI's wall time.

    python benchmarks/bound_speed.py [--mc-samples 1000000] [--seed 0] [--repeats 5]

Timings on a shared machine are noisy; the exact timing is the best of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from _timing import best_time

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.options import MonteCarlo, Numerics

SIGMA, Q, T, KAPPA = 1.0, 0.01, 1000, 0.01


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mc-samples", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"setting: sigma={SIGMA} q={Q} T={T} kappa={KAPPA}; load average {os.getloadavg()}")

    rero_dpsgd(SIGMA, Q, T, KAPPA, comparisons=False)  # warm-up (imports, caches)
    t_ex, ex = best_time(lambda: rero_dpsgd(SIGMA, Q, T, KAPPA, comparisons=False), args.repeats)
    t_full, full = best_time(lambda: rero_dpsgd(SIGMA, Q, T, KAPPA), args.repeats)
    print(f"exact       gamma <= {ex.value:.8f}  certified bracket [{ex.interval[0]:.8f}, {ex.value:.8f}]"
          f"  error {ex.error:.2e}  h={ex.extras['value_discretization_interval']:.3g}  time {t_ex * 1e3:.1f} ms"
          f"  (with RDP + eps comparisons: {t_full * 1e3:.1f} ms)")

    t0 = time.perf_counter()
    mc = rero_dpsgd(SIGMA, Q, T, KAPPA, method=MonteCarlo(samples=args.mc_samples, seed=args.seed),
                    comparisons=False)
    t_mc = time.perf_counter() - t0
    print(f"mc (Alg. 1) gamma ~= {mc.value:.6f}  95% CI [{mc.interval[0]:.6f}, {mc.interval[1]:.6f}]"
          f"  N={args.mc_samples} seed={args.seed}  time {t_mc:.2f} s")
    inside = mc.interval[0] <= ex.value and ex.interval[0] <= mc.interval[1]
    print(f"speed ratio mc/exact = {t_mc / t_ex:.0f}x ; exact bracket inside MC interval: {inside}")

    print("exact: speed vs accuracy (grid step h)")
    for h in (1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5):
        t, b = best_time(lambda: rero_dpsgd(SIGMA, Q, T, KAPPA, comparisons=False,
                                                numerics=Numerics(value_discretization_interval=h)),
                         max(1, args.repeats // 2))
        print(f"  h={h:8.0e}  gamma <= {b.value:.9f}  error {b.error:.2e}  time {t * 1e3:7.1f} ms")

    cmd = [sys.executable, "-m", "rerokit.cli", "bound", "dpsgd", "--noise-multiplier", str(SIGMA),
           "--sample-rate", str(Q), "--steps", str(T), "--kappa", str(KAPPA), "--json"]
    times = []
    for _ in range(max(1, args.repeats // 2)):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    print(f"CLI `rerokit bound dpsgd ...` wall time: best {min(times):.2f} s of {len(times)}")


if __name__ == "__main__":
    main()
