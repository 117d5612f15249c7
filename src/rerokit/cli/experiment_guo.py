"""``rerokit experiment guo-fig5`` and ``guo-dfil-hist``: Guo et al. 2022 Figs. 5 and 2 on the digits."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from rerokit.cli._common import add_command, add_data_args, add_executor_args, add_json_flag, add_out_dir_arg
from rerokit.cli._common import add_device_arg, add_resume_args, executor_from_args


def _numbers(name: str, text: str, kind) -> tuple:
    try:
        return tuple(kind(t) for t in text.split(","))
    except ValueError:
        raise ValueError(f"{name} must be a comma-separated list of {'integers' if kind is int else 'numbers'}, "
                         f"got {text!r}") from None


def _fig5(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit.experiments.guo_fig5 import GuoFig5Config, run_guo_fig5

    from rerokit._files import check_data_args

    check_data_args(args.dataset, args.data_path)
    check_output_dir("out_dir", args.out_dir, files=("guo_fig5.jsonl", "guo_fig5.csv", "guo_fig5.png"))
    hidden = () if args.hidden.strip() in ("", "0", "none") else _numbers("hidden", args.hidden, int)
    cfg = GuoFig5Config(
        sigmas=_numbers("noise_multipliers", args.noise_multipliers, float), steps=_numbers("steps", args.steps, int),
        clip=args.clip, lr=args.lr, hidden=hidden, train_size=args.train_size,
        coords=None if args.coords == 0 else args.coords, seed=args.seed, dataset=args.dataset,
        data_path=args.data_path, repeats=args.repeats,
    ).checked()
    with executor_from_args(args) as ex:
        return run_guo_fig5(args.out_dir, cfg, resume=args.resume, progress=not (args.no_progress or args.json),
                            executor=ex, device=args.device)


def _hist(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit.experiments.guo_dfil import GuoDfilHistConfig, run_guo_dfil_hist

    from rerokit._validate import check_int

    # a histogram of the records' dFIL: more bins than 10,000 draws for minutes and shows nothing more
    check_int("bins", args.bins, minimum=2, maximum=10_000)
    from rerokit._files import check_data_args

    check_data_args(args.dataset, args.data_path)
    check_output_dir("out_dir", args.out_dir, files=("guo_dfil_hist.csv", "guo_dfil_hist.png"))
    cls = _numbers("classes", args.classes, int)
    if len(cls) != 2:
        raise ValueError(f"classes must be two comma-separated labels, got {args.classes!r}")
    cfg = GuoDfilHistConfig(dataset=args.dataset, classes=(cls[0], cls[1]), lam=args.lam, noise_std=args.noise_std,
                            bins=args.bins, data_path=args.data_path)
    return run_guo_dfil_hist(args.out_dir, cfg, device=args.device)


def _fig5_summary(d: dict[str, Any]):
    """The generic rows without the per-cell list, a verdict in words, and the cells as a table."""
    from rerokit.report.format import fmt
    from rerokit.report.terminal import Table
    from rerokit.report.verdicts import generic_summary

    cells = d.get("cells") or []
    base = generic_summary("experiment guo-fig5", {k: v for k, v in d.items() if k != "cells"})
    above = sum(1 for c in cells if c.get("fil_mse_lower_bound_min", 0) > c.get("rdp_mse_lower_bound", 0))
    verdict = (f"Guo et al. Fig. 5 (reduced): the bound from the maximum dFIL is above the RDP bound in {above} of "
               f"the {len(cells)} cells; highest test accuracy whose bound is still >= 1 (perfect "
               f"privacy): RDP {fmt(d.get('best_accuracy_rdp_private'))}, max dFIL "
               f"{fmt(d.get('best_accuracy_fil_private'))}.",)
    cols = ("sigma", "steps", "test_accuracy", "epsilon_rdp2", "rdp_mse_lower_bound", "fil_mse_lower_bound_min",
            "fil_mse_lower_bound_median")
    table = Table("grid cells (MSE lower bounds of unbiased attacks)",
                  ("σ", "T", "test acc.", "(2, ε)-RDP ε", "RDP bound", "max-dFIL bound", "median-dFIL bound"),
                  tuple(tuple(fmt(c.get(k)) for k in cols) for c in cells))
    return dataclasses.replace(base, verdict=verdict, tables=(table, *base.tables))


FIG5_FIELDS = [
    ("cells", "one row per (noise multiplier, steps): test/train accuracy, (2, eps)-RDP eps and its Thm 1 bound, "
     "max/median/mean dFIL and the Thm 2 bounds from the max and median dFIL (also in guo_fig5.csv)"),
    ("fraction_fil_max_above_rdp", "fraction of cells where the bound from the maximum dFIL exceeds the RDP bound"),
    ("best_accuracy_rdp_private", "highest test accuracy whose RDP bound is still >= 1 (perfect privacy)"),
    ("best_accuracy_fil_private", "highest test accuracy whose max-dFIL bound is still >= 1"),
    ("note", "per-sample FIL can itself leak information about the record (Guo et al. 2022, footnote 2)"),
    ("files", "the JSONL, CSV and PNG written"), ("settings", "the inputs as used (seed included)"),
    ("reference", "the paper and results"),
]

HIST_FIELDS = [
    ("n", "training records (the two classes)"), ("dim", "data dimension"),
    ("epsilon_rdp2", "(2, eps)-RDP eps of the output perturbation"),
    ("rdp_mse_lower_bound", "the Thm 1 bound from it (one number for every record)"),
    ("dfil_bound_min", "smallest per-record bound 1/dFIL"), ("dfil_bound_median", "median of 1/dFIL"),
    ("dfil_bound_max", "largest 1/dFIL"),
    ("spectral_bound_min", "smallest per-record spectral bound 1/eta^2 (eta^2 = ||I||_2, Thm 2)"),
    ("spectral_bound_median", "median of 1/eta^2"),
    ("fraction_dfil_bound_above_rdp", "fraction of records whose 1/dFIL exceeds the RDP bound"),
    ("fraction_dfil_bound_above_1", "fraction of records whose 1/dFIL exceeds 1 (perfect privacy)"),
    ("train_accuracy", "accuracy of the fitted model on its training records"),
    ("note", "per-sample FIL can itself leak information about the record (Guo et al. 2022, footnote 2)"),
    ("files", "the CSV and PNG written"), ("settings", "the inputs as used"), ("reference", "the paper and results"),
]


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "guo-fig5", _fig5, fields=FIG5_FIELDS, summary=_fig5_summary,
                    help="Guo et al. 2022 Fig. 5 (reduced): RDP vs dFIL MSE bounds against test accuracy",
                    description="Guo et al. 2022, Fig. 5 at reduced scale: full-batch DP-GD (GELU clipping) of a tanh "
                    "MLP on the digits over a grid of noise multipliers x steps; per cell the test accuracy, the "
                    "MSE lower bound of unbiased attacks from the replace-one (2, eps)-RDP (Thm 1) and from the "
                    "maximum and median per-sample dFIL (Thm 2, Alg. 1). Writes guo_fig5.png, guo_fig5.csv and a "
                    "resumable guo_fig5.jsonl (one line per cell) into --out-dir.")
    add_out_dir_arg(p)
    add_data_args(p)
    p.add_argument("--noise-multipliers", default="0.5,1,2,4,8,16",
                   help="comma-separated noise multipliers sigma > 0 (default 0.5,1,2,4,8,16)")
    p.add_argument("--steps", default="10,30,100", help="comma-separated full-batch steps T >= 1 (default 10,30,100)")
    p.add_argument("--clip", type=float, default=1.0, help="clipping norm C > 0 (default 1)")
    p.add_argument("--lr", type=float, default=4.0, help="learning rate > 0 (default 4)")
    p.add_argument("--hidden", default="10", help="MLP hidden widths, comma-separated; 0 for a linear model (default 10)")
    p.add_argument("--train-size", type=int, default=500, help="training images; the rest are the test set (default 500)")
    p.add_argument("--coords", type=int, default=8,
                   help="coordinates sampled per record and step for the FIL trace (Eq. 5); 0 for all (default 8)")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 of the split, the network, the noise (default 0)")
    p.add_argument("--repeats", type=int, default=1,
                   help="training runs averaged per cell for the dFIL (Monte Carlo of Thm 3; paper: 10; default 1)")
    add_resume_args(p, "continue guo_fig5.jsonl in --out-dir (same settings), skipping finished cells")
    add_executor_args(p, device=True, what="grid cells")
    add_json_flag(p)

    p = add_command(sub, "guo-dfil-hist", _hist, fields=HIST_FIELDS,
                    help="Guo et al. 2022 Fig. 2: histogram of per-sample dFIL bounds vs the RDP bound",
                    description="Guo et al. 2022, Fig. 2: binary logistic regression on two digit classes released "
                    "with output perturbation; the histogram of the per-record MSE lower bounds 1/dFIL (Thm 2) "
                    "against the RDP bound (Thm 1) and the perfect-privacy line MSE = 1. Writes guo_dfil_hist.png "
                    "and guo_dfil_hist.csv (per record, with the spectral bound 1/eta^2) into --out-dir.")
    add_out_dir_arg(p)
    add_data_args(p)
    p.add_argument("--classes", default="0,1", help="the two labels compared (default 0,1)")
    p.add_argument("--lam", type=float, default=0.1, help="L2 penalty lambda > 0 of the mean loss (default 0.1)")
    p.add_argument("--noise-std", type=float, default=0.25, help="output perturbation noise std > 0 (default 0.25)")
    p.add_argument("--bins", type=int, default=40, help="histogram bins in [2, 10000] (default 40)")
    add_device_arg(p, "the Jacobians are computed")
    add_json_flag(p)
