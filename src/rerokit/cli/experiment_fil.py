"""``rerokit experiment fil-glm``: Guo et al. 2022 Fig. 3 (GLM attack MSE vs dFIL bound on digits 0 vs 1)."""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_command, add_dataset_arg, add_executor_args, add_glm_args, add_json_flag
from rerokit.cli._common import add_out_dir_arg, add_resume_args, executor_from_args


def _handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit.experiments.fil_glm import run_fil_glm

    check_output_dir("out_dir", args.out_dir, files=("fil_glm.jsonl", "fil_glm.csv", "fil_glm.png"))
    try:
        cls = tuple(int(c) for c in args.classes.split(","))
    except ValueError:
        raise ValueError(f"classes must be two comma-separated integer labels, got {args.classes!r}") from None
    from rerokit.experiments.guo_dfil import FIL_LEAK_NOTE

    with executor_from_args(args) as ex:
        from rerokit.executors import RunOptions

        options = RunOptions(resume=args.resume, progress=not args.no_progress, executor=ex, device=args.device)
        return {"note": FIL_LEAK_NOTE} | run_fil_glm(args.out_dir, dataset=args.dataset, classes=cls, lam=args.lam, noise_std=args.noise_std,
                           draws=args.draws, seed=args.seed, options=options)


def register(sub: argparse._SubParsersAction) -> None:
    fields = [
        ("n", "records of the two classes"), ("dim", "data dimension"),
        ("samples_attack_failed", "records the attack never reconstructed (left out below)"),
        ("fraction_bound_holds", "fraction of records whose attack MSE is >= the bound 1/dFIL"),
        ("fraction_bound_holds_below_1", "the same over records whose bound is <= 1"),
        ("samples_bound_below_1", "records whose bound is <= 1"),
        ("spearman", "rank correlation of bound and attack MSE"),
        ("fraction_trinv_bound_holds", "fraction above the tighter bound Tr(I^-1)/d"),
        ("bound_min", "smallest bound 1/dFIL"), ("bound_median", "median bound"), ("bound_max", "largest bound"),
        ("attack_mse_median", "median attack MSE"),
        ("epsilon_rdp2", "RDP epsilon at order 2 of the output perturbation"),
        ("rdp_mse_lower_bound", "the RDP-based bound of Guo et al. 2022 Thm 1 for comparison"),
        ("train_accuracy", "accuracy of the fitted model on its training records"),
        ("files", "the PNG, CSV and JSONL written"), ("settings", "the inputs as used (seed included)"),
        ("note", "per-record FIL can itself leak information about the record (Guo et al. 2022, footnote 2)"),
    ]
    p = add_command(sub, "fil-glm", _handle,
                    help="Guo et al. 2022 Fig. 3: GLM attack MSE vs dFIL bound on digits 0 vs 1",
                    description="Guo et al. 2022, Fig. 3: the closed-form GLM attack's MSE against the dFIL lower "
                    "bound, per record, for logistic regression released with output perturbation. Writes "
                    "fil_glm.png, fil_glm.csv and a resumable fil_glm.jsonl into --out-dir.",
                    fields=fields)
    add_out_dir_arg(p)
    add_dataset_arg(p, "dataset (default digits)")
    add_glm_args(p, classes="the two labels of the dataset compared (default 0,1)", model=False)
    p.add_argument("--noise-std", type=float, default=1e-4,
                   help="output perturbation noise standard deviation > 0 (default 1e-4)")
    p.add_argument("--draws", type=int, default=1000, help="output-perturbation draws (default 1000)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed >= 0 (block b of draws uses seed [seed, b]; recorded in the JSONL header and records)")
    add_resume_args(p, "continue fil_glm.jsonl in --out-dir (same settings); one line per block of 100 draws, so "
                    "an interruption loses at most the block in flight")
    add_executor_args(p, device=True, what="blocks of 100 draws")
    add_json_flag(p)
