"""Small noise multipliers: epsilon and the membership risks from closed forms against the PLD path, same run.

``epsilon_dpsgd`` answers from :func:`rerokit.bounds.dpsgd_tinysigma_epsilon.closed_form_epsilon` where its
certified ends are within 1e-6 (one segment, one example per step, sigma <~ 3e-4), and the trade-off
curve (:func:`rerokit.bounds.tradeoff.dpsgd_tradeoff`; ``reconstruction_risk``, ``rero_dpsgd(...,
comparisons=Comparisons(membership=True))``, the CLI) from the closed-form power and privacy profile
(:mod:`rerokit.bounds.dpsgd_tinysigma`), building its PLD only for a query they leave wide. The PLD
paths (``dpsgd_pld(...).epsilon``; ``TradeoffCurve.from_pld(...).membership_summary()``, what these calls
ran before) run once per setting in a subprocess with a timeout; the closed forms are the best of
``--repeats`` calls.

    python benchmarks/tiny_sigma_entries.py [--repeats 3] [--timeout 300] [--no-pld]

Measured 2026-11-26 (2-core machine shared with other jobs, load average 3.1-4.4 during the run;
q = 1e-3, delta = 1e-5; the PLD path's time includes its subprocess's imports, about 0.5-1 s; closed forms:
best of 3 in-process calls; "membership" is the whole ``membership_summary`` - advantage, TPR at three
FPRs, Bayes accuracy):

    sigma  T    what        PLD path  (value)                  new       (value)                    ratio
    1e-4   100  epsilon     3.96 s    1.500309374745e8         1.56 ms   1.500296623197e8           2.5e3
    1e-4   100  membership  3.99 s    adv. 0.09520785288629    10.9 ms   the same                   366
    1e-4   1e6  epsilon     4.33 s    5.740660575182e10        47.8 ms   5.689962020026e10          91
    1e-4   1e6  membership  28.1 s    adv. 1.0                 6.8 ms    the same                   4.1e3
    3e-4   100  epsilon     5.55 s    1.667667907407e7         1.99 s    the PLD's (not within 1e-6) 2.8
    3e-4   100  membership  8.64 s    adv. 0.09520785288629    15.2 ms   the same                   567
    3e-4   1e6  epsilon     12.0 s    6.322917463478e9         7.61 s    the PLD's (not within 1e-6) 1.6
    3e-4   1e6  membership  19.5 s    adv. 1.0                 18.0 ms   the same                   1.1e3

The closed-form epsilon is below the PLD's (pessimistic by its grid, h = 250 nats at T = 100: 1275 nats
here, 0.9 % at T = 1e6) and within 1e-6 of its own certified lower end. At sigma = 3e-4 it is not within
1e-6 and the PLD answers, as before (the time beside it is the PLD's, warm, plus the closed form's try).

The entry points themselves, base commit 735a598 against this branch, one fresh process each with a
120 s timeout (load average 1.8-4.9; sigma = 1e-4, q = 1e-3; the time includes imports):

    entry                                     T = 100: base -> now       T = 1e6: base -> now
    reconstruction_risk(prior=1000)           PLDTooWide 3.9 s -> 0.83 s   PLDTooWide 12.0 s -> 1.03 s
    RiskAccountant.get_risk (torch import)    PLDTooWide 7.3 s -> 13.5 s   PLDTooWide 10.4 s -> 18.8 s
    rero_dpsgd(kappa=1e-3) (epsilon inside)   2.08 s -> 0.80 s             5.71 s -> 1.41 s
    rero_dpsgd(..., membership=True)          12.2 s -> 0.83 s             > 120 s -> 1.46 s
    epsilon_dpsgd                             2.80 s -> 0.85 s             16.4 s -> 1.27 s
    dpsgd_tradeoff + every method (remove)    PLDTooWide 3.5 s -> 0.80 s   PLDTooWide 13.3 s -> 1.18 s
    the same, adjacency="add_remove"          PLDTooWide 3.8 s -> 0.69 s   PLDTooWide 13.6 s -> 0.63 s
    rerokit bound dpsgd --prior-size 1000     26.0 s -> 2.04 s             > 120 s -> 2.48 s
    rerokit report                            error (PLDTooWide) -> 1.44 s error -> 2.59 s

(RiskAccountant's time is Opacus' and torch's imports; its get_risk itself takes 0.23 s.)
"""

from __future__ import annotations

import argparse
import os

from _timing import best_time, json_in_fresh_process

from rerokit.bounds.dpsgd import epsilon_dpsgd
from rerokit.bounds.tradeoff import dpsgd_tradeoff

Q, DELTA = 1e-3, 1e-5
SETTINGS = [(s, Q, T) for s in (1e-4, 3e-4) for T in (100, 10**6)]

_PLD_CODE = """
import json, sys, time
from rerokit.bounds.dpsgd import dpsgd_pld
from rerokit.bounds.pld import PLDTooWide
from rerokit.bounds.tradeoff import TradeoffCurve
what, s, q, T = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
t0 = time.perf_counter()
segs = [(s, q, T)]
try:
    if what == "epsilon":
        v = dpsgd_pld(segs, None, lower=False, add_direction=True).epsilon(1e-5)
    else:
        v = TradeoffCurve.from_pld(segs, dpsgd_pld(segs, None, lower=True, add_direction=True)).membership_summary()
        v = v["advantage"]
except PLDTooWide:
    v = "PLDTooWide"
print(json.dumps({"value": v, "time": time.perf_counter() - t0}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for each PLD run")
    ap.add_argument("--no-pld", action="store_true", help="skip the PLD path (minutes)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}")
    for s, q, T in SETTINGS:
        t_eps, e = best_time(lambda: epsilon_dpsgd(s, q, T, DELTA), args.repeats)
        t_mem, m = best_time(lambda: dpsgd_tradeoff(s, q, T).membership_summary(), args.repeats)
        for what, t_new, v in (("epsilon", t_eps, e), ("membership", t_mem, m["advantage"])):
            line = f"sigma={s:g} T={T:g} {what}: new {t_new * 1e3:.2f} ms value {v!r}"
            if not args.no_pld:
                r = json_in_fresh_process(_PLD_CODE, (what, s, q, T), args.timeout)
                line += (f" | PLD > {args.timeout:g} s or failed" if r is None else
                         f" | PLD {r['time']:.2f} s value {r['value']!r} ratio {r['time'] / t_new:.3g}x")
            print(line, flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
