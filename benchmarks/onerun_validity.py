"""Validity of the one-run audit on the engine: how often an HONEST run rejects its own claim.

Runs ``--runs`` seeded white-box one-run audits (membership, 1,000 gradient canaries, 100
pre-registered guesses, MLP 64-20-10, 200 known records, epsilon = 4 at delta = 1e-5) at q = 1
(T = 10) and q = 0.5 (T = 20), and counts the runs whose guesses reject the run's own certified
DP-SGD curve (must be at most about 5% of them: the bound's confidence is 95%) and the runs whose
epsilon_lower exceeds the certified epsilon. Printed, not asserted.

    python benchmarks/onerun_validity.py [--runs 100]
"""

from __future__ import annotations

import argparse
import math

from rerokit.experiments.onerun import config_from_args, run_one_run_audit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    a = ap.parse_args()
    for q, T in ((1.0, 10), (0.5, 20)):
        cfg = config_from_args(epsilon=4.0, noise_multiplier=None, delta=1e-5,
                               train=dict(hidden=(20,), steps=T, n_known=200, sample_rate=q),
                               audit=dict(canaries=1000, guess_counts=(100,)))
        rej = above = 0
        for s in range(a.runs):
            r = run_one_run_audit(cfg, seed=1000 + s)
            rej += bool(r["claim_rejected"])
            above += r["epsilon_lower"] > r["certified_epsilon"]
        se = math.sqrt(0.05 * 0.95 / a.runs)
        print(f"q={q:g}, T={T}: {a.runs} honest runs, own claim rejected in {rej} (allowed about "
              f"{100 * (0.05 + 2 * se):.0f}%), epsilon_lower > certified epsilon in {above}", flush=True)


if __name__ == "__main__":
    main()
