"""``rerokit bound uninformed``: ReRo, expected MSE and NCC bounds against the optimal analytic
gradient-inversion attack of an adversary without data prior (paper 004, Props. 2-7).

The dataset enters through its smallest non-zero norm r (``--min-norm`` or ``--dataset``, which
computes it). ``--clip C`` adds the attacker's optimal number of rows and, when C <= r, the
data-independent gamma' of Prop. 3 / Prop. 5. ``--releases K`` averages K matched releases
(Prop. 7); ``--steps T --sample-rate q`` adds the worst case over T Poisson-sampled steps.
Only the standard library is imported at module level; numpy/scipy inside the handler.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import NOISE_MULTIPLIER_HELP, add_clip_arg, add_command, add_data_path_arg, add_dataset_arg
from rerokit.cli._common import add_deprecated_spelling, add_json_flag, add_noise_multiplier_arg, add_sample_rate_arg
from rerokit.cli._common import add_steps_arg


DESCRIPTION = """
Reconstruction-risk (ReRo), expected-MSE and NCC bounds for DP-SGD against an adversary without
a data prior, who runs the optimal analytic gradient-inversion attack (paper 004, "From Mean to
Extreme", Props. 2-7).

The dataset enters through its smallest non-zero record norm r: give --min-norm r (with --dim),
or --dataset to compute it. --clip C adds the attacker's optimal number of rows and, when C <= r,
the data-independent bound of Prop. 3 / Prop. 5. --releases K: the attacker averages K matched
releases (Prop. 7). --steps T with --sample-rate q adds the worst case over T Poisson-sampled
steps (Sec. 4.3).
"""

FIELDS = [
    ("bound", "which bound this is"),
    ("noise_multiplier", "the noise multiplier sigma"),
    ("dim", "data dimension N"),
    ("min_norm", "smallest non-zero record norm r used"),
    ("min_norm_source", "where r comes from (--min-norm or the dataset)"),
    ("clip", "the clipping norm C (null without --clip)"),
    ("releases", "matched releases K averaged by the attacker"),
    ("metric", "mse or psnr: the success criterion"),
    ("mse_threshold", "MSE threshold eta: success means MSE <= eta (for psnr: the MSE of the PSNR "
                      "threshold, 10^(-psnr/10) R^2; may be inf for an extreme --data-range, see note)"),
    ("psnr_threshold_db", "the --psnr-threshold (psnr metric)"),
    ("data_range", "data range R of the PSNR (psnr metric)"),
    ("gamma", "upper bound on P(success) of any reconstruction (Prop. 3 / Prop. 5); the smallest positive "
              "double when it underflows (then see log10_gamma)"),
    ("gamma_error", "safety margin added to gamma for floating-point error"),
    ("log10_gamma", "log10 of gamma, exact also where gamma underflows"),
    ("expected_mse", "expected MSE of the optimal analytic attack on a record of the smallest norm r, "
                     "sigma^2 r^2 / K (Prop. 2; larger for larger norms; see note when it exceeds the largest "
                     "double)"),
    ("ncc_bound", "upper bound on the normalised cross-correlation of any reconstruction (Prop. 6)"),
    ("optimal_rows", "rows M of the attacker's layer that minimise its MSE, ceil((C / r)^2) (with --clip)"),
    ("expected_mse_one_row", "expected MSE of the attack with a single row, sigma^2 max(r, C)^2 / K: what "
                             "choosing M gains (with --clip)"),
    ("gamma_data_independent", "Prop. 3's bound with C in place of r, valid without knowing the data when "
                               "C <= r (null when C > r)"),
    ("expected_mse_data_independent", "sigma^2 C^2 / K, the data-independent expected MSE (when C <= r)"),
    ("steps", "the --steps T"),
    ("sample_rate", "the --sample-rate q"),
    ("sampling_rate", "the same (the key before rerokit 0.2; kept until 0.3)"),
    ("gamma_over_steps", "bound on success when the attacker matches and averages every release of the "
                         "record over T steps (Sec. 4.3)"),
    ("log10_expected_mse", "exact log10 of expected_mse when it exceeds the largest double"),
    ("log10_expected_mse_one_row", "exact log10 of expected_mse_one_row when it exceeds the largest double"),
    ("log10_expected_mse_data_independent", "exact log10 of expected_mse_data_independent when it exceeds the "
                                            "largest double"),
    ("note", "why a value was replaced by the largest double or is inf"),
]


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_int, check_positive
    from rerokit.bounds import uninformed as U

    sigma = check_positive("noise_multiplier", args.noise_multiplier)
    data_range = args.data_range
    if args.dataset is not None:
        from rerokit.data import load_dataset

        from rerokit._files import check_data_args

        check_data_args(args.dataset, args.data_path)
        ds = load_dataset(args.dataset, args.data_path)
        r = U.min_nonzero_norm(ds.flat)
        if args.dim is not None and check_int("dim", args.dim, minimum=1) != ds.dim:
            raise ValueError(f"dim must equal the dimension {ds.dim} of dataset {args.dataset}, got {args.dim}")
        n = ds.dim
        if data_range is None:
            data_range = float(ds.data_range)
        source = f"dataset {args.dataset} (n={ds.n})"
    else:
        r = check_positive("min_norm", args.min_norm)
        if args.dim is None:
            raise ValueError("dim must be given (an integer >= 1) with --min-norm")
        n = check_int("dim", args.dim, minimum=1)
        source = "--min-norm"
    k = check_int("releases", args.releases, minimum=1)
    clip = None if args.clip is None else check_positive("clip", args.clip)

    if args.mse_threshold is not None:
        from rerokit._validate import check_nonnegative

        b = U.mse_rero(check_nonnegative("mse_threshold", args.mse_threshold), sigma, n, min_norm=r, clip=clip, releases=k)
        eta = b.inputs["eta"]
        metric = {"metric": "mse", "mse_threshold": eta}
    else:
        if data_range is None:
            raise ValueError("data_range must be given (a number > 0) with --psnr-threshold")
        b = U.psnr_rero(args.psnr_threshold, data_range, sigma, n, min_norm=r, clip=clip, releases=k)
        eta = b.extras["mse_threshold"]
        metric = {"metric": "psnr", "psnr_threshold_db": float(args.psnr_threshold), "data_range": float(data_range),
                  "mse_threshold": eta}
    out: dict[str, Any] = {
        "bound": "uninformed analytic attack (004 Props. 3-6)",
        "noise_multiplier": sigma,
        "dim": n,
        "min_norm": r,
        "min_norm_source": source,
        "clip": clip,
        "releases": k,
        **metric,
        "gamma": b.value,
        "gamma_error": b.error,
        "log10_gamma": b.extras["log_value"] / math.log(10.0) if "log_value" in b.extras else None,
        "expected_mse": U.expected_mse(sigma, r, k),
        "ncc_bound": U.ncc_bound(sigma, n, k),
    }
    if clip is not None:
        if clip / r > 1e150:
            raise ValueError(f"clip / min_norm must be <= 1e150, got {clip / r:.3g}: the attacker's optimal number of "
                             "rows (clip / min_norm)^2 would exceed the largest double")
        out["optimal_rows"] = U.optimal_rows(clip, r)
        # what choosing M gains the attacker: E[MSE] of the smallest-norm record with one row
        # (Eq. 17: sigma^2 max(r^2, C^2)) versus expected_mse at optimal_rows (Prop. 1)
        try:
            out["expected_mse_one_row"] = U.estimator_variance(r, sigma, clip, 1) / k
        except OverflowError:  # beyond the largest double: explained by _explain_overflow below
            out["expected_mse_one_row"] = math.inf
        if clip <= r:
            out["gamma_data_independent"] = b.extras["gamma_data_independent"]
            out["expected_mse_data_independent"] = U.expected_mse(sigma, clip, k)
        else:
            out["gamma_data_independent"] = None  # Prop. 3's gamma' needs C <= min ||X||
    if args.steps is not None or args.sample_rate is not None:
        if args.steps is None or args.sample_rate is None:
            raise ValueError("steps and sample_rate must be given together (steps >= 1, sample_rate in (0, 1])")
        from rerokit._resources import check_memory, release_mixture_bytes
        from rerokit._validate import check_probability

        t = check_int("steps", args.steps, minimum=1)
        q = check_probability("sample_rate", args.sample_rate)
        check_memory("--steps", release_mixture_bytes(t, q),
                     f"the mixture over the likely release counts of Binomial({t}, {q:g})")
        out["steps"] = t
        out["sample_rate"] = q
        out["sampling_rate"] = q  # the JSON key before 0.2, kept for one release
        # an MSE threshold beyond the largest double: every reconstruction succeeds, gamma 1
        out["gamma_over_steps"] = U.mse_rero_over_steps(eta, sigma, n, t, q, min_norm=r).value if math.isfinite(eta) \
            else 1.0
    _explain_overflow(out, sigma, r, clip, k)
    if not math.isfinite(eta):
        out["note"] = ((out["note"] + "; ") if "note" in out else "") + (
            "mse_threshold = 10^(-psnr_threshold/10) x data_range^2 exceeds the largest double (shown as inf); "
            "gamma is computed from its logarithm"
            + (" and gamma_over_steps is 1" if "gamma_over_steps" in out else ""))
    return out


def _explain_overflow(out: dict[str, Any], sigma: float, r: float, clip: float | None, k: int) -> None:
    """An expected MSE sigma^2 x^2 / K beyond the largest double is shown as that largest double
    (a valid lower bound: the true value is larger) with its exact log10 and a note, not as inf."""
    import sys

    l10 = math.log10
    logs = {"expected_mse": 2 * l10(sigma) + 2 * l10(r) - l10(k)}
    if clip is not None:
        logs["expected_mse_one_row"] = 2 * l10(sigma) + 2 * l10(max(r, clip)) - l10(k)
        if out.get("expected_mse_data_independent") is not None:
            logs["expected_mse_data_independent"] = 2 * l10(sigma) + 2 * l10(clip) - l10(k)
    over = [key for key in logs if key in out and not math.isfinite(out[key])]
    for key in over:
        out[key] = sys.float_info.max
        out[f"log10_{key}"] = logs[key]
    if over:
        out["note"] = (f"{', '.join(over)} = sigma^2 x norm^2 / releases exceeds the largest double (1.8e308): shown "
                       "as that largest double, a lower bound on the true value; log10_" + over[0]
                       + " holds the exact order of magnitude")


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "uninformed", handle, description=DESCRIPTION, fields=FIELDS,
                    help="bounds against the optimal analytic gradient-inversion attack (no data prior; paper 004)")
    add_noise_multiplier_arg(p, f"DP-SGD {NOISE_MULTIPLIER_HELP}", required=True)
    p.add_argument("--dim", type=int, default=None, help="data dimension N >= 1 (taken from --dataset if omitted)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--min-norm", type=float, help="smallest non-zero L2 norm r > 0 of a record")
    add_dataset_arg(src, "dataset name (digits, mnist, cifar10, synthetic) to compute r from", default=None)
    add_data_path_arg(p)
    add_clip_arg(p, "clipping norm C > 0 (optional)")
    thr = p.add_mutually_exclusive_group(required=True)
    thr.add_argument("--mse-threshold", type=float, help="MSE threshold eta >= 0")
    thr.add_argument("--psnr-threshold", type=float, help="PSNR threshold in dB (needs --data-range)")
    p.add_argument("--data-range", type=float, default=None, help="data range R > 0 for PSNR (default: the dataset's)")
    p.add_argument("--releases", type=int, default=1, help="matched releases averaged by the attacker, K >= 1")
    add_steps_arg(p, "DP-SGD steps T >= 1 (worst case over all steps)")
    add_sample_rate_arg(p, "Poisson sampling rate q in (0, 1] (with --steps)")
    add_deprecated_spelling(p, "--sampling-rate", "--sample-rate", type=float)
    add_json_flag(p)
