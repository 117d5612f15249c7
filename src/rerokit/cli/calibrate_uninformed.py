"""``rerokit calibrate uninformed``: the noise multiplier for an MSE or PSNR target of the analytic attack.

The smallest sigma at which the optimal (unbiased) analytic gradient-inversion attack of "From
Mean to Extreme" (Prop. 3 for the MSE, Props. 4-5 for the PSNR) reaches the threshold with
probability at most --target-gamma (:func:`rerokit.bounds.uninformed.calibrate_noise_mse` /
``calibrate_noise_psnr``, one call of the one solver). This is the attack law - the exact law of
that one attack - not a certified bound on every attacker. Library imports live in the handler.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_clip_arg, add_command, add_json_flag

ATTACK_LAW = ("attack law: the exact law of the optimal unbiased analytic gradient-inversion attack (From Mean to "
              "Extreme, Prop. 3 / Props. 4-5), not a certified bound on every attacker (a shrunken estimate can do "
              "better; for every attacker use an informed bound with a prior)")

DESCRIPTION = """
The smallest noise multiplier sigma at which the optimal analytic gradient-inversion attack of an
adversary without data prior ("From Mean to Extreme", Cor. 1) reconstructs a record to MSE <=
--mse-threshold (or PSNR >= --psnr-threshold dB with --data-range R) with probability at most
--target-gamma: sigma = sqrt(N K eta / (2 r^2 Gamma_R^-1(N/2, target))) (Prop. 3 inverted), r the
smallest non-zero record norm (--min-norm; or --clip C, assuming C <= r), K matched releases
averaged (Prop. 7).

This is the attack law - the exact law of that one unbiased attack - not a certified bound on every
attacker.
"""

FIELDS = [
    ("noise_multiplier", "the calibrated sigma: any sigma at least this keeps the attack's success probability at "
                         "most target_gamma"),
    ("attack_success_probability", "P(MSE <= threshold) (or P(PSNR >= threshold)) of the attack at that sigma "
                                   "(attack law, <= target_gamma)"),
    ("target_gamma", "the --target-gamma"),
    ("metric", "mse or psnr"),
    ("mse_threshold", "MSE threshold eta (for psnr: 10^(-psnr/10) R^2)"),
    ("psnr_threshold_db", "the --psnr-threshold (psnr)"),
    ("data_range", "the --data-range R (psnr)"),
    ("dim", "data dimension N"),
    ("norm", "the record norm used: --min-norm r, or --clip C"),
    ("norm_used", "which one"),
    ("releases", "matched releases K averaged by the attacker"),
    ("expected_mse", "the attack's expected MSE at sigma for a record of norm r, sigma^2 r^2 / K (attack law)"),
    ("expected_psnr_db", "the attack's expected PSNR at sigma for a record of norm r (attack law; psnr)"),
    ("law", "what these numbers are"),
]


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_positive, check_real
    from rerokit.bounds import uninformed as U
    from rerokit.bounds.uninformed_metrics import expected_psnr

    # the options' own names in the messages (the library names them eta, psnr_threshold, ...)
    if args.mse_threshold is not None:
        check_positive("mse_threshold", args.mse_threshold)
    else:
        check_real("psnr_threshold", args.psnr_threshold)
    if args.data_range is not None:
        check_positive("data_range", args.data_range)
    kw = dict(min_norm=args.min_norm, clip=args.clip, releases=args.releases)
    if args.psnr_threshold is not None:
        if args.data_range is None:
            raise ValueError("data_range must be given (a number > 0) with --psnr-threshold")
        b = U.calibrate_noise_psnr(args.psnr_threshold, args.data_range, args.target_gamma, args.dim, **kw)
        metric = {"metric": "psnr", "mse_threshold": b.extras["mse_threshold"],
                  "psnr_threshold_db": float(args.psnr_threshold), "data_range": float(args.data_range)}
    else:
        if args.data_range is not None:
            raise ValueError("data_range is only used with --psnr-threshold")
        b = U.calibrate_noise_mse(args.mse_threshold, args.target_gamma, args.dim, **kw)
        metric = {"metric": "mse", "mse_threshold": float(args.mse_threshold)}
    sigma = b.value
    norm = args.min_norm if args.min_norm is not None else args.clip
    out = {
        "noise_multiplier": sigma,
        "attack_success_probability": b.extras["gamma_at_value"],
        "target_gamma": float(args.target_gamma),
        **metric,
        "dim": int(args.dim),
        "norm": float(norm),
        "norm_used": b.extras["norm_used"],
        "releases": int(args.releases),
        "expected_mse": U.averaged_variance(sigma, norm, args.releases),
    }
    if metric["metric"] == "psnr":
        out["expected_psnr_db"] = expected_psnr(sigma, norm, args.dim, args.data_range, args.releases)
    out["law"] = ATTACK_LAW
    return out


def _summary(d: dict[str, Any]):
    from dataclasses import replace

    from rerokit.report.format import Lead, fmt
    from rerokit.report.verdicts import generic_summary

    what = (f"PSNR \u2265 {fmt(d['psnr_threshold_db'])} dB" if d.get("metric") == "psnr"
            else f"MSE \u2264 {fmt(d.get('mse_threshold'))}")
    text = (f"with noise multiplier \u03c3 \u2265 {fmt(d.get('noise_multiplier'))} the optimal analytic attack reaches "
            f"{what} with probability at most {fmt(d.get('target_gamma'))} (attack law: the exact law of that "
            "one unbiased attack, not a certified bound on every attacker).")
    return replace(generic_summary("calibrate uninformed", d), verdict=((Lead("Uninformed adversary: "), text),))


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "uninformed", handle, description=DESCRIPTION, fields=FIELDS, summary=_summary,
                    help="noise multiplier for an MSE / PSNR target of the analytic attack (attack law)")
    p.add_argument("--target-gamma", type=float, required=True,
                   help="target probability in (0, 1) that the attack reaches the threshold")
    p.add_argument("--dim", type=int, required=True, help="data dimension N >= 1")
    norm = p.add_mutually_exclusive_group(required=True)
    norm.add_argument("--min-norm", type=float, help="smallest non-zero L2 norm r > 0 of a record")
    add_clip_arg(norm, "clipping norm C > 0, used as r (assumes C <= the smallest record norm)")
    thr = p.add_mutually_exclusive_group(required=True)
    thr.add_argument("--mse-threshold", type=float, help="MSE threshold eta > 0: success means MSE <= eta")
    thr.add_argument("--psnr-threshold", type=float, help="PSNR threshold in dB (needs --data-range)")
    p.add_argument("--data-range", type=float, default=None, help="data range R > 0 of the PSNR")
    p.add_argument("--releases", type=int, default=1, help="matched releases K >= 1 averaged by the attacker")
    add_json_flag(p)
