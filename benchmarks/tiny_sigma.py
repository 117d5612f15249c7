"""Small noise multipliers: the closed forms' bracket (no PLD) against the PLD path, measured in the same run.

``rero_dpsgd(sigma, q, T, kappa, comparisons=False)`` answers from two certified closed forms (the
max test's power, the never-sampled supremum; :mod:`rerokit.bounds.dpsgd_tinysigma`) where their
bracket is within 1e-6 of gamma and of 1 - gamma. Before, these calls built the PLD, whose grid
spans losses up to 1 / (2 sigma^2). The PLD path (``dpsgd_pld`` + ``exact_power_many``, what
``rero_dpsgd`` ran before, whose value it then capped by the same supremum) runs once per setting in
a subprocess with a timeout; the closed forms are the best of ``--repeats`` calls.

    python benchmarks/tiny_sigma.py [--repeats 5] [--timeout 200] [--no-pld] [--epsilon]

Measured 2026-11-26 (2-core machine shared with other jobs, load average 5-6 during the run; q = 1e-3;
brackets [lower, upper], the PLD's upper end capped by the supremum as rero_dpsgd did; every closed-form
bracket overlaps the PLD's):

    sigma  T    kappa   PLD path   closed forms  ratio    PLD bracket                   closed-form bracket
    1e-4   100  1e-3    19.7 s     0.07 ms       2.7e5    [0.09611251421942, 0.0961126450334]  [0.09611264503301, same]
    1e-4   100  1e-20   19.2 s     0.06 ms       3.0e5    [0.09520785286373, 0.09520785288629] [0.0952078528859, same]
    1e-4   1e6  1e-3    116 s      0.06 ms       2.0e6    [1 - 5.9e-10, 1]              [1 - 1.1e-16, 1]
    1e-4   1e6  1e-20   43.9 s     0.06 ms       7.2e5    [1 - 1.0e-12, 1]              [1 - 1.1e-16, 1]
    3e-4   100  1e-3    16.6 s     0.06 ms       2.9e5    [0.09611251507477, 0.0961126450334]  as at 1e-4
    3e-4   100  1e-20    8.1 s     0.05 ms       1.7e5    as at 1e-4                    as at 1e-4
    3e-4   1e6  1e-3    99.1 s     0.04 ms       2.3e6    [1 - 5.9e-10, 1]              [1 - 1.1e-16, 1]
    3e-4   1e6  1e-20   43.9 s     0.06 ms       7.5e5    [1 - 1.0e-12, 1]              [1 - 1.1e-16, 1]

At T = 1e6, 1 - gamma = e^-1000.5 is now bracketed in logs to 2.8e-9 relative
(``extras['log_one_minus_gamma_interval']``), where the PLD certified it below 5.9e-10 or 1e-12 only.
The previous ``rero_dpsgd`` itself, from the base commit in fresh processes at load average 1-5, took
4.0, 3.2, 35, 12, 4.3, 3.4, 84 and 50 s on the same eight settings, with the same brackets as the PLD path.
The reported value (upper end) is unchanged; the lower end moves up to the max test's power, and near
gamma = 1 the bracket of 1 - gamma is now relative (``extras['log_one_minus_gamma_interval']``).
Not changed in that run: ``epsilon_dpsgd`` at these settings still built its PLD (4-13 s, ``--epsilon``), and
so did ``rero_dpsgd`` with ``comparisons=True`` (it reports that epsilon); since then epsilon has closed forms
too where they are within 1e-6 (benchmarks/tiny_sigma_entries.py).
"""

from __future__ import annotations

import argparse
import os
import time

from _timing import best_time, json_in_fresh_process

from rerokit.bounds.dpsgd import epsilon_dpsgd, rero_dpsgd

Q = 1e-3
SETTINGS = [(s, Q, T, k) for s in (1e-4, 3e-4) for T in (100, 10**6) for k in (1e-3, 1e-20)]

_PLD_CODE = """
import json, math, sys, time
import numpy as np
from rerokit.bounds.dpsgd import dpsgd_pld, exact_power_many, log_sup_gamma, round_up_exp
s, q, T, k = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
t0 = time.perf_counter()
segs = [(s, q, T)]
r = exact_power_many(dpsgd_pld(segs, None, lower=True, add_direction=False), segs, np.array([math.log(k)]))
up = min(float(r.value[0]), round_up_exp(log_sup_gamma(segs, math.log(k))))
print(json.dumps({"lower": min(float(r.lower[0]), up), "upper": up, "time": time.perf_counter() - t0}))
"""


def _fmt(x: float) -> str:
    """x to 13 digits, or as 1 - (1 - x) near 1."""
    return f"1-{1.0 - x:.2g}" if x > 0.999 else f"{x:.13g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=200.0, help="seconds for each PLD run")
    ap.add_argument("--no-pld", action="store_true", help="skip the PLD path (minutes)")
    ap.add_argument("--epsilon", action="store_true", help="also time epsilon_dpsgd")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}")
    rero_dpsgd(1e-4, Q, 100, 1e-3, comparisons=False)  # warm-up (imports)
    for s, q, T, k in SETTINGS:
        t_new, b = best_time(lambda: rero_dpsgd(s, q, T, k, comparisons=False), args.repeats)
        lo_b, up_b = b.extras["log_one_minus_gamma_interval"]
        line = (f"sigma={s:g} T={T:g} kappa={k:g}: closed forms {t_new * 1e3:.2f} ms [{_fmt(b.interval[0])}, "
                f"{_fmt(b.value)}] log(1-gamma) in [{lo_b:.10g}, {up_b:.10g}]")
        if not args.no_pld:
            r = json_in_fresh_process(_PLD_CODE, (s, q, T, k), args.timeout)
            line += (f" | PLD > {args.timeout:g} s" if r is None else
                     f" | PLD {r['time']:.1f} s [{_fmt(r['lower'])}, {_fmt(r['upper'])}] ratio {r['time'] / t_new:.0f}x"
                     f" contained: {b.interval[0] <= r['upper'] and r['lower'] <= b.value}")
        print(line, flush=True)
        if args.epsilon:
            t0 = time.perf_counter()
            e = epsilon_dpsgd(s, q, T, 1e-5)
            print(f"    epsilon_dpsgd {time.perf_counter() - t0:.1f} s (epsilon {e:.4g})", flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
