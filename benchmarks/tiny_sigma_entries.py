"""Small noise multipliers: epsilon and the membership risks from closed forms against the PLD path, same run.

``epsilon_dpsgd`` answers from :func:`rerokit.bounds.dpsgd_tinysigma.closed_form_epsilon` where its
certified ends are within 1e-6 (one segment, one example per step, sigma <~ 3e-4), and the trade-off
curve (:func:`rerokit.bounds.tradeoff.dpsgd_tradeoff`; ``reconstruction_risk``, ``rero_dpsgd(...,
comparisons=Comparisons(membership=True))``, the CLI) from the closed-form power and privacy profile
(:mod:`rerokit.bounds.dpsgd_tinysigma`), building its PLD only for a query they leave wide. The PLD
paths (``dpsgd_pld(...).epsilon``; ``TradeoffCurve.from_pld(...).membership_summary()``, what these calls
ran before) run once per setting in a subprocess with a timeout; the closed forms are the best of
``--repeats`` calls.

    python benchmarks/tiny_sigma_entries.py [--repeats 3] [--timeout 300] [--no-pld]

Measured 2026-11-26 (2-core machine shared with other jobs, load average 4-6; q = 1e-3, delta = 1e-5):

    sigma  T    what        PLD path                     closed forms   ratio
    1e-4   100  epsilon     1.7 s   1.500309374747e8     1.6 ms   1.500296623197e8   1.1e3
    1e-4   100  membership  PLDTooWide after 4.3 s       24 ms        (advantage 0.0952078528863)
    1e-4   1e6  epsilon     9.7 s   5.740660575182e10    0.33 s   5.689962020026e10  29
    1e-4   1e6  membership  PLDTooWide after 9.6 s       26 ms        (advantage 1 - 1.8e-15)
    3e-4   100  epsilon     (the closed form is not within 1e-6 there: the PLD answers, as before)

The closed-form epsilon is below the PLD's (which is pessimistic by its grid step, 250 nats at T = 100)
and above its own certified lower end by at most 1e-6 of itself, so the PLD's value minus the closed form
is the PLD's excess. The old entry points (base 735a598, fresh processes, same inputs):
``reconstruction_risk`` and every TradeoffCurve membership method raised PLDTooWide at T = 100 and 1e6;
``rero_dpsgd(..., membership)`` took 12 s; ``rerokit bound dpsgd`` 26 s; ``rerokit report`` failed. Now each
takes about 1 s in a fresh process (imports included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from _timing import best_time

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


def _pld_path(what: str, s: float, q: float, T: int, timeout: float) -> dict | None:
    """The PLD path in a fresh process (None if it ran past ``timeout`` seconds or failed)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        out = subprocess.run([sys.executable, "-c", _PLD_CODE, what, str(s), str(q), str(T)], env=env,
                             capture_output=True, text=True, timeout=timeout, check=True)
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


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
                r = _pld_path(what, s, q, T, args.timeout)
                line += (f" | PLD > {args.timeout:g} s or failed" if r is None else
                         f" | PLD {r['time']:.2f} s value {r['value']!r} ratio {r['time'] / t_new:.3g}x")
            print(line, flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
