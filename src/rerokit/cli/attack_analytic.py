"""``rerokit attack analytic``: the optimal analytic gradient-inversion attack (paper 004, Cor. 1)
on real DP-SGD with batch size 1 (Opacus), one step per target, compared with the paper's laws.

Targets are ``--targets K`` distinct records of the dataset drawn with ``--seed``; the attacker's
linear layer has ``--rows M`` rows (default: the optimal number for the dataset's smallest
non-zero norm). Prints per-target MSE / PSNR / NCC / SSIM, their means, the predicted expected
MSE (Eq. 17 / Prop. 2) and the predicted success P(MSE <= eta) with the Prop. 3 bound gamma(eta).
``--out FILE.jsonl`` appends one record per target (``--resume`` continues a run).
torch, opacus and numpy are imported inside the handler.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analytic",
        help="optimal analytic gradient-inversion attack on Opacus DP-SGD (batch size 1; paper 004)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--dataset", default="digits", help="digits (default), mnist, cifar10 or synthetic")
    p.add_argument("--data-path", default=None, help="local files of mnist/cifar10")
    p.add_argument("--noise-multiplier", type=float, required=True, help="noise multiplier sigma > 0")
    p.add_argument("--clip", type=float, required=True, help="clipping norm C > 0")
    p.add_argument("--rows", type=int, default=None, help="rows M >= 1 of the attacker's layer (default: optimal)")
    p.add_argument("--targets", type=int, required=True, help="number of attacked records K, 1..dataset size")
    p.add_argument("--seed", type=int, required=True, help="seed >= 0 (targets and noise)")
    p.add_argument("--mse-threshold", type=float, default=0.01, help="MSE threshold eta > 0 for gamma (default 0.01)")
    p.add_argument("--backend", default="opacus", help="opacus (default: Opacus DPOptimizer loop) or vmap (torch.func)")
    p.add_argument("--out", default=None,
                   help="JSONL file: a header with the settings (seed included), then one record per target, "
                   "appended per chunk of 100 targets (an interruption loses at most that chunk)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out (same settings, --targets included) without repeating its targets")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_json_flag(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from rerokit._validate import check_choice, check_int, check_positive
    from rerokit.bounds.uninformed import min_nonzero_norm
    from rerokit.data import load_dataset

    check_positive("noise_multiplier", args.noise_multiplier)
    check_positive("clip", args.clip)
    check_positive("mse_threshold", args.mse_threshold)
    check_choice("backend", args.backend, ("opacus", "vmap"))
    seed = check_int("seed", args.seed, minimum=0)
    if args.rows is not None:
        check_int("rows", args.rows, minimum=1)
    ds = load_dataset(args.dataset, args.data_path, seed=seed)
    k = check_int("targets", args.targets, minimum=1, maximum=ds.n)
    idx = np.sort(np.random.default_rng(seed).choice(ds.n, size=k, replace=False))
    X = ds.flat.astype(np.float64)
    image_shape = ds.sample_shape if len(ds.sample_shape) == 3 else None
    settings = {"dataset": args.dataset, "noise_multiplier": args.noise_multiplier, "clip": args.clip,
                "rows": args.rows, "targets": k, "seed": seed, "mse_threshold": args.mse_threshold,
                "backend": args.backend}
    from rerokit.attacks.analytic import run_analytic_attack, trial_schema

    log = None
    if args.out is not None:
        from rerokit.experiments.records import TrialLog

        log = TrialLog(args.out, settings, resume=args.resume, trials=k, schema=trial_schema(), name="out")
    try:
        out = run_analytic_attack(
            X[idx], noise_multiplier=args.noise_multiplier, clip=args.clip, rows=args.rows, seed=seed,
            data_range=ds.data_range, image_shape=image_shape, min_norm=min_nonzero_norm(X),
            mse_threshold=args.mse_threshold, backend=args.backend, indices=idx, log=log,
            progress=not args.no_progress,
        )
    finally:
        if log is not None:
            log.close()
    out["settings"]["dataset"] = args.dataset
    if args.out is not None:
        out["settings"]["out"] = args.out
    return out
