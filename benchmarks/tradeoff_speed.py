"""Speed and agreement of a 100-point DP-SGD trade-off curve: rerokit (one certified curve object)
vs riskcal's ``get_beta_for_dpsgd`` vs dp-accounting's own PLD read by Neyman-Pearson, measured in
the same run.

For each setting, alpha = 100 points log-spaced on [1e-6, 1]. Prints, per method, the wall time
(best of ``--repeats``), its ratio to rerokit, and the largest discrepancy against rerokit's
certified bracket [lower, upper] of the TPR 1 - beta(alpha): how far the method's value lies
above the upper end or below the lower end (0 = inside the bracket). riskcal reports the
symmetrised (add-or-remove) curve, so it is compared with rerokit's ``adjacency="add_remove"``
bracket (and, for information, with the remove bracket); dp-accounting's REMOVE pmf is the
remove pair. Also one ``rero_dpsgd`` call (a single alpha) for scale.

    python benchmarks/tradeoff_speed.py [--repeats 3] [--grid 1e-4]

Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from _timing import best_time

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.tradeoff import dpsgd_tradeoff

SETTINGS = [(1.0, 0.01, 1000), (0.8, 0.004, 5000), (2.0, 1.0, 100)]
ALPHAS = np.logspace(-6, 0, 100)


def outside(values: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[float, float]:
    """(largest excess above the upper end, largest deficit below the lower end), >= 0."""
    return float(max(0.0, np.max(values - upper))), float(max(0.0, np.max(lower - values)))


def dp_accounting_curve(sigma: float, q: float, T: int, h: float) -> np.ndarray:
    """TPR at ALPHAS from dp-accounting's pessimistic REMOVE pmf: take atoms from the top (largest
    privacy loss) until their nu-mass p e^-loss reaches alpha, the last one fractionally."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    pld = pldlib.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=h).self_compose(T)
    d = pld._pmf_remove.to_dense_pmf()
    p = np.maximum(d._probs, 0.0)[::-1]
    loss = ((d._lower_loss + np.arange(p.size)) * d._discretization)[::-1]
    qm = p * np.exp(-loss)
    cq, cp = np.cumsum(qm), np.cumsum(p)
    k = np.minimum(np.searchsorted(cq, ALPHAS, side="left"), p.size - 1)
    q_above = np.where(k > 0, cq[np.maximum(k - 1, 0)], 0.0)
    p_above = np.where(k > 0, cp[np.maximum(k - 1, 0)], 0.0)
    frac = np.where(qm[k] > 0, np.minimum(1.0, (ALPHAS - q_above) / np.where(qm[k] > 0, qm[k], 1.0)), 0.0)
    return np.minimum(1.0, d._infinity_mass + p_above + frac * p[k])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--grid", type=float, default=1e-4, help="PLD grid of riskcal and dp-accounting")
    args = ap.parse_args()
    try:
        from riskcal.calibration.dpsgd import get_beta_for_dpsgd
    except ImportError:
        get_beta_for_dpsgd = None
    print(f"100-point trade-off curve, alpha log-spaced on [1e-6, 1]; load average {os.getloadavg()}")
    dpsgd_tradeoff(1.0, 0.1, 10).tpr_at_fpr(ALPHAS)  # warm-up (imports)
    for sigma, q, T in SETTINGS:
        print(f"\nsigma={sigma} q={q} T={T}")
        t_one, _ = best_time(lambda: rero_dpsgd(sigma, q, T, 0.01), args.repeats)
        t_rem, rem = best_time(lambda: dpsgd_tradeoff(sigma, q, T).tpr_at_fpr(ALPHAS), args.repeats)
        t_sym, sym = best_time(lambda: dpsgd_tradeoff(sigma, q, T, adjacency="add_remove").tpr_at_fpr(ALPHAS),
                               args.repeats)
        print(f"  rero_dpsgd (one kappa, default comparisons) {t_one * 1e3:8.1f} ms")
        print(f"  rerokit remove curve      {t_rem * 1e3:8.1f} ms  (x{t_rem / t_one:.2f} of one rero_dpsgd)  "
              f"max bracket width {np.max(rem.error):.2e}")
        print(f"  rerokit add_remove curve  {t_sym * 1e3:8.1f} ms  (x{t_sym / t_one:.2f})  "
              f"max bracket width {np.max(sym.error):.2e}")
        if get_beta_for_dpsgd is None:
            print("  riskcal not installed")
        else:
            t_rc, beta = best_time(lambda: get_beta_for_dpsgd(sigma, q, T, ALPHAS, grid_step=args.grid), args.repeats)
            rc = 1.0 - np.asarray(beta)
            a_s, b_s = outside(rc, sym.lower, sym.upper)
            a_r, b_r = outside(rc, rem.lower, rem.upper)
            worst = int(np.argmax(sym.lower - rc))
            print(f"  riskcal get_beta_for_dpsgd {t_rc * 1e3:8.1f} ms  (x{t_rc / t_rem:.1f} of rerokit)  vs add_remove "
                  f"bracket: above {a_s:.2e}, below {b_s:.2e} (worst at alpha={ALPHAS[worst]:.2e}: riskcal "
                  f"{rc[worst]:.4g}, bracket [{sym.lower[worst]:.4g}, {sym.upper[worst]:.4g}]); vs remove "
                  f"bracket: above {a_r:.2e}, below {b_r:.2e}; riskcal TPR < FPR at {int(np.sum(rc < ALPHAS))} points")
        t_da, da = best_time(lambda: dp_accounting_curve(sigma, q, T, args.grid), args.repeats)
        a_d, b_d = outside(da, rem.lower, rem.upper)
        print(f"  dp-accounting PLD + NP    {t_da * 1e3:8.1f} ms  (x{t_da / t_rem:.1f} of rerokit)  vs remove "
              f"bracket: above {a_d:.2e} (allowed: a pessimistic PLD gives an upper bound), below {b_d:.2e} "
              "(would contradict)")


if __name__ == "__main__":
    main()
