"""``rerokit bound uninformed``: ReRo, expected MSE and NCC bounds against the optimal analytic
gradient-inversion attack of an adversary without data prior (paper 004, Props. 2-7).

The dataset enters through its smallest non-zero norm r (``--min-norm`` or ``--dataset``, which
computes it). ``--clip C`` adds the attacker's optimal number of rows and, when C <= r, the
data-independent gamma' of Prop. 3 / Prop. 5. ``--releases K`` averages K matched releases
(Prop. 7); ``--steps T --sampling-rate q`` adds the worst case over T Poisson-sampled steps.
Only the standard library is imported at module level; numpy/scipy inside the handler.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "uninformed",
        help="bounds against the optimal analytic gradient-inversion attack (no data prior; paper 004)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--noise-multiplier", type=float, required=True, help="DP-SGD noise multiplier sigma > 0")
    p.add_argument("--dim", type=int, default=None, help="data dimension N >= 1 (taken from --dataset if omitted)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--min-norm", type=float, help="smallest non-zero L2 norm r > 0 of a record")
    src.add_argument("--dataset", help="dataset name (digits, mnist, cifar10, synthetic) to compute r from")
    p.add_argument("--data-path", default=None, help="local files of mnist/cifar10")
    p.add_argument("--clip", type=float, default=None, help="clipping norm C > 0 (optional)")
    thr = p.add_mutually_exclusive_group(required=True)
    thr.add_argument("--mse-threshold", type=float, help="MSE threshold eta >= 0")
    thr.add_argument("--psnr-threshold", type=float, help="PSNR threshold in dB (needs --data-range)")
    p.add_argument("--data-range", type=float, default=None, help="data range R > 0 for PSNR (default: the dataset's)")
    p.add_argument("--releases", type=int, default=1, help="matched releases averaged by the attacker, K >= 1")
    p.add_argument("--steps", type=int, default=None, help="DP-SGD steps T >= 1 (worst case over all steps)")
    p.add_argument("--sampling-rate", type=float, default=None, help="Poisson sampling rate q in (0, 1]")
    add_json_flag(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_int, check_positive
    from rerokit.bounds import uninformed as U

    sigma = check_positive("noise_multiplier", args.noise_multiplier)
    data_range = args.data_range
    if args.dataset is not None:
        from rerokit.data import load_dataset

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
        out["optimal_rows"] = U.optimal_rows(clip, r)
        # what choosing M gains the attacker: E[MSE] of the smallest-norm record with one row
        # (Eq. 17: sigma^2 max(r^2, C^2)) versus expected_mse at optimal_rows (Prop. 1)
        out["expected_mse_one_row"] = U.estimator_variance(r, sigma, clip, 1) / k
        if clip <= r:
            out["gamma_data_independent"] = b.extras["gamma_data_independent"]
            out["expected_mse_data_independent"] = U.expected_mse(sigma, clip, k)
        else:
            out["gamma_data_independent"] = None  # Prop. 3's gamma' needs C <= min ||X||
    if args.steps is not None or args.sampling_rate is not None:
        if args.steps is None or args.sampling_rate is None:
            raise ValueError("steps and sampling_rate must be given together (steps >= 1, sampling_rate in (0, 1])")
        bt = U.mse_rero_over_steps(eta, sigma, n, args.steps, args.sampling_rate, min_norm=r)
        out["steps"] = bt.inputs["steps"]
        out["sampling_rate"] = bt.inputs["sampling_rate"]
        out["gamma_over_steps"] = bt.value
    return out
