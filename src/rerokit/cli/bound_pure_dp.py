"""``rerokit bound laplace | finite-support``: exact ReRo bounds of pure-DP releases.

``laplace``: gamma = 1 - f_eps(kappa) from the Laplace mechanism's trade-off curve (Dong, Roth &
Su 2022; Kaissis et al. 2023), beside Cor. 3's kappa e^eps and the curve of any eps-DP mechanism.
``finite-support``: exact reconstruction of a target from |Z| possible values under eps-DP
(Balle, Cherubin & Hayes 2022, Sec. VII-F). Library imports live inside the handlers.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import add_command, add_json_flag, add_prior_args, baseline_from_args

_LN10 = math.log(10.0)

_COMMON_FIELDS = [
    ("kappa", "baseline success of the prior (the best guess without the release)"),
    ("log10_kappa", "log10 of kappa"),
    ("gamma", "upper bound on the probability that any attack reconstructs the target (certified)"),
    ("log10_gamma", "log10 of gamma, exact also where gamma underflows"),
    ("error", "rounding margin added to gamma (gamma is never below the exact value)"),
    ("gamma_dp", "Balle et al. 2022, Cor. 3: min(1, kappa e^eps), what the (eps, 0) guarantee alone gives"),
]


def _laplace(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.laplace import laplace_epsilon, rero_laplace

    if (args.epsilon is None) == (args.scale is None):
        raise ValueError("give exactly one of --epsilon (a number >= 0) or --scale (the Laplace scale b > 0, with "
                         "--sensitivity)")
    if args.scale is None and args.sensitivity != 1.0:
        raise ValueError("--sensitivity goes with --scale (eps = sensitivity / scale); an --epsilon already includes it")
    eps = args.epsilon if args.scale is None else laplace_epsilon(args.scale, args.sensitivity)
    base = baseline_from_args(args)
    b = rero_laplace(eps, log_kappa=base.log_kappa)
    return {
        "bound": "laplace (Dong, Roth & Su 2022 trade-off curve; Kaissis et al. 2023: gamma = 1 - f(kappa))",
        "epsilon": b.inputs["epsilon"],
        **({"scale": args.scale, "sensitivity": args.sensitivity} if args.scale is not None else {}),
        "kappa": base.kappa, "log10_kappa": base.log10_kappa,
        "gamma": b.value, "log10_gamma": b.extras["log_gamma"] / _LN10, "error": b.error,
        "region": b.extras["region"],
        "gamma_dp": b.extras["gamma_dp"],
        "gamma_pure_dp_curve": b.extras["gamma_pure_dp_curve"],
    }


def _finite_support(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.information_flow import rero_finite_support

    base = baseline_from_args(args)
    b = rero_finite_support(args.epsilon, base.prior, support_size=args.support_size)
    return {
        "bound": "finite-support (Balle, Cherubin & Hayes 2022, Sec. VII-F; quantitative information flow)",
        "epsilon": b.inputs["epsilon"], "support_size": b.inputs["support_size"],
        "kappa": base.kappa, "log10_kappa": base.log10_kappa,
        "gamma": b.value, "log10_gamma": b.extras["log_gamma"] / _LN10, "error": b.error,
        "leakage": b.extras["leakage"], "gamma_dp": b.extras["gamma_dp"],
    }


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "laplace", _laplace, help="Laplace mechanism: exact gamma = 1 - f_eps(kappa) (tighter than kappa e^eps)",
        description="Reconstruction-risk bound of a one-dimensional Laplace release (noise scale b, sensitivity "
        "Delta, eps = Delta / b) from its exact trade-off curve (Dong, Roth & Su 2022): gamma = kappa e^eps for "
        "kappa < e^-eps/2, 1 - e^-eps/(4 kappa) up to kappa = 1/2, 1 - e^-eps (1 - kappa) above (Kaissis et al. "
        "2023: gamma = 1 - f(kappa)). It holds for every attacker; for a d-dimensional release calibrated to l1 "
        "sensitivity use gamma_pure_dp_curve, the bound of any eps-DP mechanism.",
        fields=[("bound", "which bound this is"), ("epsilon", "eps = sensitivity / scale"),
                ("scale", "the --scale b (when given)"), ("sensitivity", "the --sensitivity (with --scale)"),
                *_COMMON_FIELDS,
                ("region", "which piece of the trade-off curve kappa falls on"),
                ("gamma_pure_dp_curve", "1 - f_{eps,0}(kappa) = min(kappa e^eps, 1 - e^-eps (1 - kappa)): the bound "
                                        "of any eps-DP mechanism (certified)")])
    p.add_argument("--epsilon", type=float, default=None, help="eps = sensitivity / scale, >= 0")
    p.add_argument("--scale", type=float, default=None, help="Laplace scale b > 0 (instead of --epsilon)")
    p.add_argument("--sensitivity", type=float, default=1.0, help="sensitivity Delta >= 0 with --scale (default 1)")
    add_prior_args(p)
    add_json_flag(p)

    p = add_command(
        sub, "finite-support", _finite_support,
        help="eps-DP, target from |Z| values: gamma = kappa |Z| e^eps / (|Z| - 1 + e^eps)",
        description="Exact-reconstruction bound for an eps-DP mechanism (eps-DP under replacing the target record) "
        "when the target takes one of |Z| values (Balle, Cherubin & Hayes 2022, Sec. VII-F, from the quantitative "
        "information-flow literature): gamma = kappa |Z| e^eps / (|Z| - 1 + e^eps), kappa the prior's largest "
        "probability. With --prior-size N, |Z| = N and kappa = 1/N (then attained by N-ary randomised response).",
        fields=[("bound", "which bound this is"), ("epsilon", "the --epsilon"),
                ("support_size", "|Z|, the number of values the target can take"), *_COMMON_FIELDS,
                ("leakage", "the multiplicative Bayes leakage bound |Z| e^eps / (|Z| - 1 + e^eps)")])
    p.add_argument("--epsilon", type=float, required=True, help="pure-DP epsilon >= 0 (replace-one adjacency)")
    p.add_argument("--support-size", type=int, default=None,
                   help="|Z| >= 1, required with --kappa / --log10-kappa (default: --prior-size)")
    add_prior_args(p)
    add_json_flag(p)
