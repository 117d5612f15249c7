"""``rerokit bound dpsgd``: the DP-SGD ReRo bound of Hayes et al. 2023 (Thm 2 / Cor. 3).

gamma = sup{mu(E) : nu(E) <= kappa} for nu = N(0, sigma^2)^T and mu the product of T mixtures
(1-q) N(0, sigma^2) + q N(1, sigma^2). ``--method exact`` (default) is a certified upper bound
from the privacy-loss distribution, ``error`` being the width of its certified bracket;
``closed-form`` is exact for q = 1; ``mc`` is Hayes et al.'s Algorithm 1 (an estimate; error =
half-width of its 95% interval). ``comparisons`` holds the RDP-based bound (Balle et al. 2022
Thm 2) and the (epsilon, delta) of the same schedule; ``membership`` the membership-inference
risks from the same composed PLD (advantage, TPR at FPR 0.001/0.01/0.1, Bayes accuracy at prior
0.5; certified, upper ends as values; see ``rerokit bound tradeoff``).

Only the standard library is imported at module level; numpy inside the handler (scipy,
dp-accounting and torch are not imported on this path for ordinary settings).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import add_json_flag, help_kw

_LN10 = math.log(10.0)

EPSILON_INF_NOTE = (
    "epsilon is inf: no finite epsilon is certified at delta = {delta:.3g}, which is at or below the privacy-loss "
    "mass the pessimistic PLD accountant leaves at infinity (discretisation and tail truncation, typically about "
    "1e-13 or more); use a larger --delta for a finite epsilon (gamma does not depend on --delta)"
)


DESCRIPTION = """
Upper bound gamma on the probability that any reconstruction attack recovers a training record of
DP-SGD (Hayes et al. 2023, Thm 2 / Cor. 3), for a prior whose baseline success (the best guess
without the model) is kappa. DP-SGD here: T steps, Poisson sampling rate q, noise multiplier sigma.

  gamma = sup{ mu(E) : nu(E) <= kappa },  nu = N(0, sigma^2)^T,
  mu = product of T mixtures (1 - q) N(0, sigma^2) + q N(1, sigma^2)

--method exact (default): a certified upper bound from the privacy-loss distribution (for noise
multipliers outside [1e-4, 1e8], where that is not computed in double precision, a certified
closed-form envelope: method envelope). closed-form: exact for q = 1 (Gaussian DP). mc: Hayes et
al.'s Algorithm 1, a Monte Carlo estimate with a 95% interval.
"""

FIELDS = [
    ("gamma", "bound on the success probability of any attack (an estimate for --method mc)"),
    ("kappa", "baseline success of the prior (1/N for --prior-size N)"),
    ("advantage", "(gamma - kappa) / (1 - kappa): how much of the room above the baseline the bound allows "
                  "(0 when kappa = 1)"),
    ("method", "exact, closed-form, mc or envelope (see above)"),
    ("direction", "upper: gamma is a certified upper bound; estimate: a Monte Carlo estimate"),
    ("error", "exact/envelope: width of the certified bracket [lower, gamma]; mc: half-width of the 95% "
              "interval; closed-form: 0"),
    ("interval", "the bracket [lower, gamma] (exact, envelope) or the 95% interval (mc)"),
    ("log10_gamma", "log10 of gamma (exact even where gamma underflows to 0)"),
    ("log10_kappa", "log10 of kappa"),
    ("settings", "the inputs as used: noise_multiplier, sample_rate, steps and the kappa option given"),
    ("details.lower", "certified lower end of the bracket (exact, envelope)"),
    ("details.value_discretization_interval", "grid step of the privacy-loss distribution (exact)"),
    ("details.threshold_epsilon", "the epsilon attaining gamma = min over epsilon of e^epsilon kappa + "
                                  "delta(epsilon) (exact)"),
    ("details.floored", "true when the accountant's round-off floor dominates at this kappa (exact; see "
                        "details.note)"),
    ("details.note", "why the value is what it is (floored accounting, envelope)"),
    ("details.seed", "seed of the Monte Carlo sampler (mc)"),
    ("details.mc_samples", "Monte Carlo samples (mc)"),
    ("details.standard_error", "standard error of the estimate (mc)"),
    ("details.mu_gdp", "mu of the equivalent mu-Gaussian-DP guarantee (closed-form)"),
    ("comparisons.rdp_gamma", "the RDP-based bound of Balle et al. 2022, Thm 2, for the same schedule "
                              "(null under envelope)"),
    ("comparisons.rdp_order", "RDP order at which rdp_gamma is attained"),
    ("comparisons.epsilon", "epsilon of (epsilon, delta)-DP of the schedule at --delta (PLD accountant); inf "
                            "when none is certified (see comparisons.note)"),
    ("comparisons.delta", "the --delta of that comparison"),
    ("comparisons.note", "why comparisons.epsilon is inf, when it is"),
    ("membership.advantage", "upper bound on TPR - FPR of any membership-inference test (the same trade-off "
                             "curve as gamma; Kulynych et al. 2025)"),
    ("membership.advantage_interval", "certified bracket of the membership advantage"),
    ("membership.tpr_at_fpr_0.001", "upper bound on the TPR of any membership test at false-positive rate 0.001"),
    ("membership.tpr_at_fpr_0.01", "the same at false-positive rate 0.01"),
    ("membership.tpr_at_fpr_0.1", "the same at false-positive rate 0.1"),
    ("membership.tpr_at_fpr_intervals", "certified brackets of those TPRs, keyed by the false-positive rate"),
    ("membership.bayes_accuracy", "upper bound on the accuracy of the best membership guess when the target is a "
                                  "member with probability membership.prior_membership"),
    ("membership.bayes_accuracy_interval", "certified bracket of the Bayes accuracy"),
    ("membership.prior_membership", "prior probability of membership used for the Bayes accuracy (0.5)"),
    ("membership.adjacency", "remove: H1 = the target was trained on (the pair of gamma)"),
    ("membership.method", "how the curve was computed (exact, closed-form, envelope)"),
]


def add_kappa_args(p: argparse.ArgumentParser) -> None:
    """--prior-size N | --kappa K | --log10-kappa L (exactly one; checked by :func:`log_kappa_from_args`)."""
    p.add_argument("--prior-size", type=int, default=None,
                   help="size N >= 1 of a uniform discrete prior (exact match): kappa = 1/N")
    p.add_argument("--kappa", type=float, default=None, help="baseline kappa in (0, 1]")
    p.add_argument("--log10-kappa", type=float, default=None,
                   help="log10 of kappa (<= 0), for baselines that underflow (e.g. -472.0)")


def log_kappa_from_args(args: argparse.Namespace) -> tuple[float, dict[str, Any]]:
    """(natural log kappa, echo of the given option) from --prior-size / --kappa / --log10-kappa."""
    from rerokit._validate import check_int, check_probability, check_real

    given = [n for n in ("prior_size", "kappa", "log10_kappa") if getattr(args, n, None) is not None]
    if len(given) != 1:
        raise ValueError(
            "give exactly one of --prior-size (integer >= 1), --kappa (in (0, 1]) or --log10-kappa (<= 0)"
            + (f"; got {', '.join('--' + g.replace('_', '-') for g in given)}" if given else "")
        )
    if args.prior_size is not None:
        n = check_int("prior_size", args.prior_size, minimum=1)
        return -math.log(n), {"prior_size": n}
    if args.kappa is not None:
        return math.log(check_probability("kappa", args.kappa)), {}
    l10 = check_real("log10_kappa", args.log10_kappa)
    if l10 > 0:
        raise ValueError(f"log10_kappa must be a finite number <= 0, got {args.log10_kappa!r}")
    return l10 * _LN10, {"log10_kappa": l10}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dpsgd",
        help="ReRo bound gamma of DP-SGD (Hayes et al. 2023, Thm 2 / Cor. 3)",
        **help_kw(DESCRIPTION, FIELDS),
    )
    p.add_argument("--noise-multiplier", type=float, required=True, help="noise multiplier sigma > 0")
    p.add_argument("--sample-rate", type=float, required=True, help="Poisson sampling rate q in (0, 1]")
    p.add_argument("--steps", type=int, required=True, help="number of steps T >= 1")
    add_kappa_args(p)
    p.add_argument("--method", default="exact", help="exact (default), closed-form (q = 1 only) or mc")
    p.add_argument("--mc-samples", type=int, default=1_000_000, help="Monte Carlo samples (method mc)")
    p.add_argument("--seed", type=int, default=None, help="seed of the Monte Carlo sampler (recorded)")
    p.add_argument("--delta", type=float, default=1e-5, help="delta of the (epsilon, delta) comparison")
    add_json_flag(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.dpsgd import rero_dpsgd

    lk, echo = log_kappa_from_args(args)
    kw = {"kappa": args.kappa} if args.kappa is not None else {"log_kappa": lk}
    b = rero_dpsgd(
        args.noise_multiplier, args.sample_rate, args.steps, method=args.method,
        mc_samples=args.mc_samples, seed=args.seed, delta=args.delta, membership=True, **kw,
    )
    kappa = b.inputs["kappa"]
    log_gamma = b.extras.get("log_gamma", math.log(b.value) if b.value > 0 else -math.inf)
    out: dict[str, Any] = {
        "gamma": b.value,
        "kappa": kappa,
        # (gamma - kappa) / (1 - kappa) (Hayes et al. App. H, Eq. 4); = conversions.advantage,
        # inlined so that this path does not import scipy
        "advantage": 0.0 if kappa >= 1.0 else (b.value - kappa) / (1.0 - kappa),
        "method": b.method,
        "direction": b.direction,
        "error": b.error,
    }
    if b.interval is not None:
        out["interval"] = list(b.interval)
    out["log10_gamma"] = log_gamma / _LN10
    out["log10_kappa"] = lk / _LN10
    out["settings"] = {
        "noise_multiplier": b.inputs["noise_multiplier"],
        "sample_rate": b.inputs["sample_rate"],
        "steps": b.inputs["steps"],
        **echo,
    }
    x = b.extras
    if b.method == "exact":
        out["details"] = {
            "lower": x["lower"],
            "value_discretization_interval": x["value_discretization_interval"],
            "threshold_epsilon": x["threshold_epsilon"],
            "floored": x["floored"],
        }
        if "note" in x:
            out["details"]["note"] = x["note"]
    elif b.method == "mc":
        out["details"] = {"seed": x["seed"], "mc_samples": x["mc_samples"], "standard_error": x["se"]}
    elif b.method == "closed-form":
        out["details"] = {"mu_gdp": x["mu_gdp"]}
    elif b.method == "envelope":
        out["details"] = {"lower": x["lower"], "note": x["note"]}
    if "rdp_gamma" in x:
        out["comparisons"] = {
            "rdp_gamma": x["rdp_gamma"],
            "rdp_order": x["rdp_order"],
            "epsilon": x["epsilon"],
            "delta": x["delta"],
        }
        if not math.isfinite(x["epsilon"]):
            out["comparisons"]["note"] = EPSILON_INF_NOTE.format(delta=x["delta"])
    else:  # envelope: sigma outside the range where accounting is computed in double precision
        out["comparisons"] = {"rdp_gamma": None, "rdp_order": None, "epsilon": None, "delta": None}
    # membership inference read off the same composed PLD (certified brackets; upper ends as values)
    out["membership"] = x["membership"]
    return out
