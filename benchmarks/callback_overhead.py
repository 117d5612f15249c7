"""Cost of the training callbacks' risk checks (rerokit.integrations), against one risk evaluation.

Measured in the same run, σ = 1, q = 0.01, prior of 10, limits γ ≤ 0.3 and ε ≤ 8:

* baseline: one ``rerokit.reconstruction_risk`` at T = 1000 (what one log step costs);
* the step budget, solved once per (σ, q) by the monotone solver (``should_stop`` at step 1);
* ``should_stop`` at every later optimizer step, up to the budget (the per-step overhead);
* ``metrics`` at a log step (one risk evaluation, cached per history).

    python benchmarks/callback_overhead.py [--repeats 3]

Timings on a shared machine are noisy: the load average is printed; compare the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import rerokit
    from rerokit.integrations._monitor import RiskLimits, RiskMonitor

    print(f"{os.cpu_count()} cores; load average {os.getloadavg()}")
    rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.01, steps=10, prior=10)  # imports, caches
    base, solve, step, log = [], [], [], []
    budget = 0
    for _ in range(args.repeats):
        t = time.perf_counter()
        rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.01, steps=1000, prior=10,
                                    options=rerokit.RiskOptions(fprs=(0.01,)))
        base.append(time.perf_counter() - t)
        m = RiskMonitor(noise_multiplier=1.0, sample_rate=0.01, prior=10,
                        limits=RiskLimits(max_gamma=0.3, max_epsilon=8.0))
        t = time.perf_counter()
        m.should_stop(1, max_steps=100_000)
        solve.append(time.perf_counter() - t)
        budget = m._budget[1]
        t = time.perf_counter()
        for i in range(2, budget):
            m.should_stop(i, max_steps=100_000)
        step.append((time.perf_counter() - t) / max(budget - 2, 1))
        t = time.perf_counter()
        m.metrics(budget // 2)
        log.append(time.perf_counter() - t)
    b = statistics.median(base)
    print(f"budget: {budget} steps before gamma <= 0.3 or epsilon <= 8 would be exceeded")
    print(f"{'one reconstruction_risk (baseline)':<40} {b * 1e3:9.1f} ms   1.0x")
    print(f"{'budget solve (once per sigma, q)':<40} {statistics.median(solve) * 1e3:9.1f} ms "
          f"{statistics.median(solve) / b:5.1f}x")
    print(f"{'should_stop per optimizer step':<40} {statistics.median(step) * 1e6:9.1f} us "
          f"{statistics.median(step) / b:8.5f}x")
    print(f"{'metrics at a log step':<40} {statistics.median(log) * 1e3:9.1f} ms "
          f"{statistics.median(log) / b:5.1f}x")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
