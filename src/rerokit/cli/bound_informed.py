"""``rerokit bound dp|rdp|zcdp|gdp|fano``: ReRo bounds from a privacy guarantee and a baseline.

dp/rdp/zcdp/gdp take the prior as ``--prior-size N``, ``--kappa K`` (in (0, 1]) or
``--log10-kappa L`` (<= 0, for baselines that underflow, e.g. -472.015) and print ``gamma`` (Balle et al. 2022, Cor. 3,
Thm 2, Cor. 4; Gaussian DP: Kaissis et al. 2023). ``fano`` prints the Guo et al. 2022b advantage
bound for a uniform prior. Library imports live inside the handlers so the CLI starts fast.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import add_command, add_json_flag, add_noise_multiplier_arg, add_prior_args, baseline_from_args

_GAMMA_FIELDS = [
    ("bound", "which conversion this is"),
    ("kappa", "baseline success of the prior (the best guess without the model)"),
    ("log10_kappa", "log10 of kappa"),
    ("gamma", "upper bound on the probability that any attack reconstructs the target (ReRo)"),
    ("log10_gamma", "log10 of gamma, exact also where gamma underflows"),
    ("advantage", "(gamma - kappa) / (1 - kappa): the bound's gain over the baseline, in [0, 1] (0 when "
                  "kappa = 1)"),
]


_LN10 = math.log(10.0)


def _result(name: str, params: dict[str, Any], log_gamma: float, base: Any) -> dict[str, Any]:
    """The JSON of a conversion (:class:`rerokit.report.results.ConversionBound`)."""
    from rerokit.bounds.conversions import advantage
    from rerokit.report.results import ConversionBound

    gamma = max(math.exp(log_gamma), base.kappa)  # every bound here has gamma >= kappa; undo exp/log round-off
    return ConversionBound(bound=name, inputs=params, kappa=base.kappa, log10_kappa=base.log10_kappa, gamma=gamma,
                           log10_gamma=log_gamma / _LN10, advantage=advantage(gamma, base.kappa)).to_dict()


def _dp(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.conversions import log_rero_from_dp

    base = baseline_from_args(args)
    return _result("dp (Balle et al. 2022, Cor. 3)", {"epsilon": args.epsilon},
                   log_rero_from_dp(args.epsilon, base.log_kappa), base)


def _rdp(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.conversions import log_rero_from_rdp

    base = baseline_from_args(args)
    lg = log_rero_from_rdp(args.alpha, args.epsilon, base.log_kappa)
    return _result("rdp (Balle et al. 2022, Thm 2)", {"alpha": args.alpha, "epsilon": args.epsilon}, lg, base)


def _zcdp(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.conversions import log_rero_from_zcdp

    base = baseline_from_args(args)
    return _result("zcdp (Balle et al. 2022, Cor. 4)", {"rho": args.rho}, log_rero_from_zcdp(args.rho, base.log_kappa),
                   base)


def _gdp(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.conversions import log_rero_from_gdp

    base = baseline_from_args(args)
    return _result("gdp (Kaissis et al. 2023)", {"mu": args.mu}, log_rero_from_gdp(args.mu, base.log_kappa), base)


def _fano(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds import fano

    if args.noise_multiplier is not None:
        b = fano.fano_advantage_gaussian(args.noise_multiplier, args.prior_size, args.sensitivity)
    elif args.sensitivity != 1.0:
        raise ValueError("--sensitivity is the Gaussian mechanism's and needs --noise-multiplier; a --mutual-information "
                         "or --rdp-epsilon bound already includes it")
    elif args.rdp_epsilon is not None:
        from rerokit._validate import check_nonnegative

        b = fano.fano_advantage_rdp(check_nonnegative("rdp_epsilon", args.rdp_epsilon), args.prior_size)
    else:
        b = fano.fano_advantage_from_mi(args.mutual_information, args.prior_size)
    from rerokit.report.results import FanoBound

    return FanoBound.of("fano (Guo et al. 2022b; Hayes et al. 2023 App. H)", b).to_dict()


def _add_conversion(sub: Any, name: str, func, help: str, description: str, *options: tuple[str, str]) -> None:
    """One conversion of a privacy guarantee into gamma: the guarantee's ``options`` (flag, help; numbers,
    all required), then the prior and --json."""
    params = [(flag[2:], f"the {flag}") for flag, _ in options]
    p = add_command(sub, name, func, help=help, description=description,
                    fields=[_GAMMA_FIELDS[0], *params, *_GAMMA_FIELDS[1:]])
    for flag, text in options:
        p.add_argument(flag, type=float, required=True, help=text)
    add_prior_args(p)
    add_json_flag(p)


def register(sub: Any) -> None:
    _add_conversion(sub, "dp", _dp, "eps-DP -> ReRo: gamma = kappa e^eps (Balle et al. 2022, Cor. 3)",
                    "Reconstruction-risk bound of an epsilon-DP mechanism (Balle et al. 2022, Cor. 3): gamma = "
                    "min(1, kappa e^epsilon). Give the prior as --prior-size N, its baseline as --kappa or, for "
                    "baselines that underflow, --log10-kappa.",
                    ("--epsilon", "DP epsilon >= 0"))
    _add_conversion(sub, "rdp", _rdp, "(alpha, eps)-RDP -> ReRo (Balle et al. 2022, Thm 2)",
                    "Reconstruction-risk bound of an (alpha, epsilon)-RDP mechanism (Balle et al. 2022, Thm 2): "
                    "gamma = min(1, (kappa e^epsilon)^((alpha - 1) / alpha)).",
                    ("--alpha", "RDP order > 1"), ("--epsilon", "RDP epsilon >= 0 at that order"))
    _add_conversion(sub, "zcdp", _zcdp, "rho-zCDP -> ReRo (Balle et al. 2022, Cor. 4)",
                    "Reconstruction-risk bound of a rho-zCDP mechanism (Balle et al. 2022, Cor. 4): "
                    "gamma = exp(-(sqrt(log 1/kappa) - sqrt(rho))^2) for rho < log(1/kappa), else 1.",
                    ("--rho", "zCDP rho >= 0"))
    _add_conversion(sub, "gdp", _gdp, "mu-GDP -> ReRo: gamma = Phi(Phi^-1(kappa) + mu)",
                    "Reconstruction-risk bound of a mu-Gaussian-DP mechanism (Kaissis et al. 2023): "
                    "gamma = Phi(Phi^-1(kappa) + mu), exact (attained by the Gaussian mechanism).",
                    ("--mu", "Gaussian DP mu >= 0"))

    p = add_command(
        sub, "fano", _fano, help="Guo et al. 2022b Fano bound on the advantage, uniform prior",
        description="Fano bound on the advantage of any attack against a uniform prior of --prior-size candidates "
        "(Guo et al. 2022b; Hayes et al. 2023, App. H), from a bound on the mutual information between the target "
        "and the released model: given directly, as a replace-one RDP epsilon (I <= epsilon), or for the Gaussian mechanism "
        "with --noise-multiplier and --sensitivity.",
        fields=[("bound", "which bound this is"),
                ("noise_multiplier", "the --noise-multiplier (Gaussian mechanism)"),
                ("mutual_information", "the --mutual-information"),
                ("epsilon", "the --rdp-epsilon"),
                ("prior_size", "the --prior-size"),
                ("sensitivity", "the --sensitivity (Gaussian mechanism)"),
                ("advantage", "upper bound on (gamma - kappa) / (1 - kappa)"),
                ("gamma", "the corresponding bound on the success probability"),
                ("kappa", "baseline success 1 / prior_size"),
                ("error", "numerical width of the bound"),
                ("mutual_information_bound", "the mutual-information bound of the Gaussian mechanism used")])
    g = p.add_mutually_exclusive_group(required=True)
    add_noise_multiplier_arg(g, "Gaussian noise std / sensitivity scale, > 0")
    g.add_argument("--mutual-information", type=float,
                   help="bound on I(pi; w) >= 0 (nats)")
    g.add_argument("--rdp-epsilon", type=float,
                   help="RDP epsilon >= 0 at any order (I <= eps) for REPLACE-ONE neighbours (the datasets differ in "
                   "which candidate the target is); an add/remove RDP epsilon (the usual DP-SGD accountant's) does "
                   "not bound it: for DP-SGD use rerokit.accounting.replace_one_rdp_order2")
    p.add_argument("--prior-size", type=int, required=True, help="size n >= 2 of the uniform prior")
    p.add_argument("--sensitivity", type=float, default=1.0,
                   help="l2 sensitivity Delta >= 0 (default 1; sqrt(2) reproduces Hayes et al. 2023 Table 2)")
    add_json_flag(p)
