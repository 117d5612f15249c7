"""``rerokit bound tradeoff``: the certified trade-off curve of DP-SGD and the risks read off it.

beta(alpha) = inf{1 - mu(E) : nu(E) <= alpha} for nu = N(0, sigma^2)^T (trained without the
target) and mu = prod_t [(1-q) N(0, sigma^2) + q N(1, sigma^2)] (trained with it) (Hayes et al.
2023, Thm 2): TPR at FPR alpha of any membership test is at most 1 - beta(alpha); the advantage
is sup(1 - alpha - beta(alpha)); Bayes accuracy, attribute inference (alpha = 1/k) and
reconstruction (alpha = kappa) follow from the same curve (Kulynych et al. 2025). Every number
is a certified bracket [lower, upper] from one composed privacy-loss distribution.

``--fpr F [F ...]`` prints the bracket at each FPR; ``--grid N`` prints N points (log-spaced
from --alpha-min to 0.1, then linear to 1) for plotting. ``--adjacency add-remove`` gives the
symmetrised curve of add-or-remove adjacency (Dong, Roth & Su 2022, Def. F.1; what riskcal
reports), ``remove`` (default) the Hayes et al. pair.

Only the standard library is imported at module level; numpy inside the handler.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tradeoff",
        help="certified trade-off curve of DP-SGD: TPR at FPR, advantage, Bayes accuracy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--noise-multiplier", type=float, required=True, help="noise multiplier sigma > 0")
    p.add_argument("--sample-rate", type=float, required=True, help="Poisson sampling rate q in (0, 1]")
    p.add_argument("--steps", type=int, required=True, help="number of steps T >= 1")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--fpr", type=float, nargs="+", default=None, help="false-positive rate(s) alpha in [0, 1]")
    g.add_argument("--grid", type=int, default=None, help="number N >= 4 of curve points for plotting")
    p.add_argument("--alpha-min", type=float, default=1e-6, help="smallest alpha of --grid, in (0, 0.1)")
    p.add_argument("--adjacency", default="remove", help="remove (default) or add-remove (symmetrised)")
    p.add_argument("--prior-membership", type=float, default=0.5,
                   help="prior probability of membership for the Bayes accuracy, in (0, 1)")
    add_json_flag(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_choice, check_int, check_probability

    adjacency = check_choice("adjacency", args.adjacency, ("remove", "add-remove")).replace("-", "_")
    if args.fpr is not None:
        fprs = [check_probability("fpr", f, low_open=False) for f in args.fpr]
    else:
        check_int("grid", args.grid, minimum=4, maximum=100_000)
        check_probability("alpha_min", args.alpha_min)
    check_probability("prior_membership", args.prior_membership, high_open=True)

    from rerokit.bounds.tradeoff import dpsgd_tradeoff, tradeoff_grid

    curve = dpsgd_tradeoff(args.noise_multiplier, args.sample_rate, args.steps, adjacency=adjacency)
    out: dict[str, Any] = {
        "settings": {
            "noise_multiplier": args.noise_multiplier,
            "sample_rate": args.sample_rate,
            "steps": args.steps,
            "adjacency": adjacency,
        },
        "method": curve.method,
        "value_discretization_interval": curve.value_discretization_interval,
    }
    if args.fpr is not None:
        tpr = curve.tpr_at_fpr(fprs)
        beta = curve.beta(fprs)
        out["points"] = [
            {"fpr": a, "beta": [float(bl), float(bh)], "tpr": [float(tl), float(th)], "error": float(th - tl)}
            for a, bl, bh, tl, th in zip(fprs, beta.lower, beta.upper, tpr.lower, tpr.upper)
        ]
        out["max_error"] = float(max(tpr.error)) if fprs else 0.0
    else:
        alpha = tradeoff_grid(args.grid, args.alpha_min)
        tpr = curve.tpr_at_fpr(alpha)
        beta = curve.beta(alpha)
        out["curve"] = {
            "alpha": alpha.tolist(),
            "beta_lower": beta.lower.tolist(),
            "beta_upper": beta.upper.tolist(),
            "tpr_lower": tpr.lower.tolist(),
            "tpr_upper": tpr.upper.tolist(),
        }
        out["max_error"] = float(tpr.error.max())
    adv = curve.advantage()
    acc = curve.bayes_accuracy(args.prior_membership)
    out["advantage"] = adv.value
    out["advantage_interval"] = list(adv.interval)
    out["bayes_accuracy"] = acc.value
    out["bayes_accuracy_interval"] = list(acc.interval)
    out["prior_membership"] = args.prior_membership
    return out
