"""``rerokit experiment reconn-dpgd``: Balle et al. (2022) Fig. 9, RecoNN reconstruction MSE vs
epsilon of full-batch DP-GD (clip 1, delta 1e-5) on digits, with the nearest-neighbour oracle and
the non-private MSE (PNG + CSV + resumable JSONL in --out-dir). Heavy imports in the handler.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_json_flag


def _dpgd(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_int

    threads = check_int("threads", args.threads, minimum=0)
    import torch

    from rerokit.experiments.reconn_dpgd import run_dpgd_sweep

    if threads:
        torch.set_num_threads(threads)
    rows = run_dpgd_sweep(
        args.out_dir, args.epsilons, include_nonprivate=not args.no_nonprivate, dataset=args.dataset,
        shadow_models=args.shadow_models, fixed_size=args.fixed_size, epochs=args.epochs, targets=args.targets,
        delta=args.delta, clip=args.clip, seed=args.seed, resume=args.resume, progress=not args.quiet,
        reconstructor_epochs=args.reconstructor_epochs,
    )
    return {
        "rows": [{k: r[k] for k in ("epsilon", "noise_multiplier", "mse", "nn_oracle_mse", "success",
                                    "released_model_accuracy")} for r in rows],
        "seed": args.seed,
        "jsonl": f"{args.out_dir}/reconn_dpgd.jsonl",
        "csv": f"{args.out_dir}/reconn_dpgd.csv",
        "png": f"{args.out_dir}/reconn_dpgd.png",
        "reference": "Balle et al. 2022, Sec. VI-D, Fig. 9",
    }


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reconn-dpgd", help="Balle et al. Fig. 9: RecoNN MSE vs epsilon of DP-GD",
                       description="One RecoNN attack per epsilon (released and shadow models trained with "
                       "full-batch DP-GD, clip --clip, delta --delta) plus the non-private run; writes "
                       "reconn_dpgd.png, reconn_dpgd.csv and reconn_dpgd.jsonl into --out-dir.")
    p.add_argument("--out-dir", default="reconn_dpgd")
    p.add_argument("--epsilons", type=float, nargs="+", default=[1, 10, 100, 1000, 10000])
    p.add_argument("--no-nonprivate", action="store_true", help="skip the epsilon = inf reference run")
    p.add_argument("--dataset", default="digits")
    p.add_argument("--shadow-models", type=int, default=2000)
    p.add_argument("--fixed-size", type=int, default=500)
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--targets", type=int, default=100)
    p.add_argument("--reconstructor-epochs", type=int, default=60)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (recorded in the JSONL header and the output)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--resume", action="store_true",
                   help="continue reconn_dpgd.jsonl in --out-dir (same settings); one line per finished epsilon, so "
                   "an interruption loses at most the epsilon in flight (one whole RecoNN attack)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_json_flag(p)
    p.set_defaults(func=_dpgd)
