"""``rerokit experiment reconn-dpgd``: Balle et al. (2022) Fig. 9, RecoNN reconstruction MSE vs
epsilon of full-batch DP-GD (clip 1, delta 1e-5) on digits, with the nearest-neighbour oracle and
the non-private MSE (PNG + CSV + resumable JSONL in --out-dir). Heavy imports in the handler.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import (
    add_command, add_dataset_arg, add_dpgd_args, add_executor_args, add_json_flag, check_threads,
)
from rerokit.cli._common import add_out_dir_arg, add_reconn_args, add_resume_args, add_threads_arg, executor_from_args


def _dpgd(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit._resources import check_memory, reconn_bytes
    from rerokit._validate import check_distinct, check_int

    threads = check_threads(args.threads)
    check_output_dir("out_dir", args.out_dir, files=("reconn_dpgd.jsonl", "reconn_dpgd.csv", "reconn_dpgd.png"))
    check_distinct("epsilons", args.epsilons)
    if args.dataset == "digits":  # other datasets are refused by the sweep with their own message
        k = check_int("shadow_models", args.shadow_models, minimum=2)
        t = check_int("targets", args.targets, minimum=1)
        check_memory("--shadow-models", reconn_bytes(64, 10, (10,), (512, 512), k, t),
                     f"{k} shadow and {t} released models and the reconstructor (one RecoNN attack per epsilon)")
    ex = executor_from_args(args)
    import torch

    from rerokit.executors import RunOptions
    from rerokit.experiments.reconn import ReconnConfig
    from rerokit.experiments.reconn_dpgd import run_dpgd_sweep

    if threads:
        torch.set_num_threads(threads)
    try:
        config = ReconnConfig(shadow_models=args.shadow_models, fixed_size=args.fixed_size, epochs=args.epochs,
                              targets=args.targets, delta=args.delta, clip=args.clip,
                              reconstructor_epochs=args.reconstructor_epochs)
        rows = run_dpgd_sweep(
            args.out_dir, args.epsilons, include_nonprivate=not args.no_nonprivate, dataset=args.dataset,
            config=config, seed=args.seed,
            options=RunOptions(resume=args.resume, progress=not args.quiet, executor=ex, device=args.device),
        )
    finally:
        ex.close()  # a local Ray cluster started for this run
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
    p = add_command(
        sub, "reconn-dpgd", _dpgd, help="Balle et al. 2022 Fig. 9: RecoNN MSE vs epsilon of DP-GD",
        description="One RecoNN attack (see 'rerokit attack reconn') per epsilon, with released and shadow models "
        "trained by full-batch DP-GD (clip --clip, delta --delta), plus the non-private run; writes "
        "reconn_dpgd.png, reconn_dpgd.csv and reconn_dpgd.jsonl into --out-dir.",
        fields=[("rows", "one row per epsilon (inf: no DP): epsilon, noise_multiplier, mse (mean RecoNN MSE), "
                         "nn_oracle_mse (nearest-neighbour oracle), success (mse below the oracle), "
                         "released_model_accuracy"),
                ("seed", "the --seed"), ("jsonl", "the resumable record file"), ("csv", "the CSV of all rows"),
                ("png", "the figure"), ("reference", "the paper and figure")])
    add_out_dir_arg(p, "reconn_dpgd")
    p.add_argument("--epsilons", type=float, nargs="+", default=[1, 10, 100, 1000, 10000],
                   help="epsilons > 0 (default 1 10 100 1000 10000)")
    p.add_argument("--no-nonprivate", action="store_true", help="skip the epsilon = inf reference run")
    add_dataset_arg(p, "dataset (default digits)")
    add_reconn_args(p)
    add_dpgd_args(p)
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (recorded in the JSONL header and the output)")
    add_threads_arg(p)
    add_resume_args(p, "continue reconn_dpgd.jsonl in --out-dir (same settings); one line per finished epsilon, so "
                    "an interruption loses at most the epsilon in flight (one whole RecoNN attack)", quiet=True)
    add_executor_args(p, device=True, what="blocks of shadow models")
    add_json_flag(p)
