"""``rerokit experiment hayes-fig15 | hayes-table2``: figures of the bounds alone (no training).

``hayes-fig15``: Hayes et al. (2023) Fig. 15, the certified ReRo bound over (q, sigma) at fixed
epsilons. ``hayes-table2``: Table 2 / Fig. 11, the Fano bounds of Guo et al. (2022b), closed form
and Monte Carlo, against the exact bound. Heavy imports live in the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_command, add_delta_arg, add_json_flag, add_out_dir_arg, add_steps_arg


def _progress_and_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    add_json_flag(p)


def _fig15(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit.experiments.hayes_fig15 import fig15

    check_output_dir("out_dir", args.out_dir, files=("hayes_fig15.png", "hayes_fig15.csv"))
    res = fig15(args.out_dir, epsilons=args.epsilons, sample_rates=args.sample_rates, prior_sizes=args.prior_sizes,
                steps=args.steps, delta=args.delta, progress=not args.no_progress)
    return {"png": res["png"], "csv": res["csv"], "cells": len(res["rows"]),
            "rows": [{k: r[k] for k in ("epsilon", "sample_rate", "noise_multiplier", "prior_size", "gamma")}
                     for r in res["rows"]]}


def _table2(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit.experiments.hayes_table2 import table2

    check_output_dir("out_dir", args.out_dir, files=("hayes_table2.png", "hayes_table2.csv"))
    res = table2(args.out_dir, prior_sizes=args.prior_sizes, sigmas=args.sigmas, samples=args.samples, seed=args.seed,
                 progress=not args.no_progress)
    return {"png": res["png"], "csv": res["csv"], "seed": res["seed"], "samples": res["samples"],
            "rows": [{k: r.get(k) for k in ("prior_size", "noise_multiplier", "method", "advantage", "se", "paper")}
                     for r in res["rows"]]}


def _uninformed_metrics(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit.experiments.uninformed_metrics import run_uninformed_metrics

    check_output_dir("out_dir", args.out_dir, files=("uninformed_metrics.png", "uninformed_metrics.csv"))
    res = run_uninformed_metrics(args.out_dir, sigmas=args.sigmas, repeats=args.repeats,
                                 target_index=args.target_index, seed=args.seed, progress=not args.no_progress)
    keys = ("sigma", "psnr_mean", "expected_psnr", "psnr_prop2_expression", "ncc_mean", "ncc_law_mean", "nmi_mean")
    return {"png": res["png"], "csv": res["csv"], "seed": res["seed"],
            "rows": [{k: r[k] for k in keys} for r in res["rows"]],
            "note": "expected_psnr and ncc_law_mean are the attack law (the exact law of the optimal unbiased analytic "
                    "attack), not bounds on every attacker"}


def _pure_dp(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit.experiments.pure_dp import run_pure_dp

    check_output_dir("out_dir", args.out_dir, files=("pure_dp.png", "pure_dp.csv"))
    res = run_pure_dp(args.out_dir, epsilons=args.epsilons, prior_sizes=args.prior_sizes, trials=args.trials,
                      seed=args.seed)
    keys = ("epsilon", "prior_size", "gamma_dp", "gamma_pure_dp_curve", "gamma_laplace", "gamma_finite_support",
            "attack_exact", "attack_success")
    return {"png": res["png"], "csv": res["csv"], "seed": res["seed"], "rows": [{k: r[k] for k in keys}
                                                                                for r in res["rows"]]}


def register(sub: argparse._SubParsersAction) -> None:
    from rerokit.experiments.hayes_fig15 import DEFAULT_EPSILONS, DEFAULT_PRIOR_SIZES, DEFAULT_SAMPLE_RATES

    p = add_command(
        sub, "hayes-fig15", _fig15,
        help="Hayes et al. Fig. 15: certified gamma over (q, sigma) at fixed epsilon (epsilon alone does not fix risk)",
        description="For each epsilon and sampling rate q, sigma is calibrated so that DP-SGD with T steps is "
        "(epsilon, delta)-DP (certified PLD accountant), then the certified ReRo bound gamma (Hayes et al. 2023, "
        "Thm 2) is computed for each uniform prior size. No training, no randomness; writes hayes_fig15.png and "
        "hayes_fig15.csv into --out-dir.",
        fields=[("png", "the figure written"), ("csv", "the CSV of every cell"), ("cells", "number of cells"),
                ("rows", "one row per cell: epsilon, sample_rate, noise_multiplier (calibrated), prior_size, gamma "
                         "(certified upper bound)")])
    add_out_dir_arg(p)
    p.add_argument("--epsilons", type=float, nargs="+", default=list(DEFAULT_EPSILONS), help="target epsilons > 0")
    p.add_argument("--sample-rates", type=float, nargs="+", default=list(DEFAULT_SAMPLE_RATES),
                   help="sampling rates q in (0, 1]")
    p.add_argument("--prior-sizes", type=int, nargs="+", default=list(DEFAULT_PRIOR_SIZES),
                   help="uniform prior sizes >= 2 (default 2 10 100)")
    add_steps_arg(p, "number of DP-SGD steps T >= 1 (default 100)", default=100)
    add_delta_arg(p, "of the calibration")
    _progress_and_json(p)

    p = add_command(
        sub, "hayes-table2", _table2,
        help="Hayes et al. Table 2 / Fig. 11: Fano bounds of Guo et al. (closed form and Monte Carlo) vs the exact one",
        description="One full-batch DP-SGD step, uniform priors, sigma = 0.5 ... 3: the advantage bound of Guo et al. "
        "2022b (Fano with their closed-form mutual-information bound, sensitivity sqrt(2)), the same with the mutual "
        "information of the regular-simplex prior estimated by Monte Carlo (seeded; an estimate with its standard "
        "error), and Hayes et al.'s bound (exact). The paper's printed values are in the CSV's column 'paper'. "
        "Writes hayes_table2.png and hayes_table2.csv into --out-dir.",
        fields=[("png", "the figure written"), ("csv", "the CSV of every number"), ("seed", "the --seed"),
                ("samples", "the --samples per Monte Carlo cell"),
                ("rows", "one row per (prior_size, noise_multiplier, method): advantage, se (Monte Carlo standard "
                         "error; MC row only), paper (Hayes et al. 2023 Table 2, where printed)")])
    add_out_dir_arg(p)
    p.add_argument("--prior-sizes", type=int, nargs="+", default=[10, 100], help="uniform prior sizes >= 2")
    p.add_argument("--sigmas", type=float, nargs="+", default=[0.5, 1.0, 1.5, 2.0, 2.5, 3.0],
                   help="noise multipliers > 0 (default 0.5 1 1.5 2 2.5 3)")
    p.add_argument("--samples", type=int, default=100_000,
                   help="Monte Carlo draws per cell, in [2, 1e9] (default 100000, the paper's)")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 of the Monte Carlo row (recorded in the output)")
    _progress_and_json(p)

    from rerokit.experiments.uninformed_metrics import DEFAULT_SIGMAS as UM_SIGMAS

    p = add_command(
        sub, "uninformed-metrics", _uninformed_metrics,
        help="analytic attack on one digit: PSNR, sample NCC, NMI vs their attack laws over sigma",
        description="The optimal analytic gradient-inversion attack (From Mean to Extreme, Cor. 1; one batch-size-1 "
        "DP-SGD step, C = ||X|| / 2, M = 1) is run --repeats times per noise multiplier on one digit; writes "
        "uninformed_metrics.csv (mean PSNR vs its exact attack-law value and the earlier version's Prop. 2 "
        "expression, sample NCC vs its law, measured NMI) and uninformed_metrics.png into --out-dir.",
        fields=[("png", "the figure written"), ("csv", "the CSV of every plotted number"), ("seed", "the --seed"),
                ("rows", "one row per sigma: measured means and the attack-law values"),
                ("note", "what the law values are")])
    add_out_dir_arg(p)
    p.add_argument("--sigmas", type=float, nargs="+", default=list(UM_SIGMAS), help="noise multipliers > 0")
    p.add_argument("--repeats", type=int, default=500, help="attacks per sigma, in [2, 100000] (default 500)")
    p.add_argument("--target-index", type=int, default=0, help="index of the attacked digit (default 0)")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 of the noise (recorded in the output)")
    _progress_and_json(p)

    p = add_command(
        sub, "pure-dp", _pure_dp,
        help="eps-DP releases: Cor. 3, the pure-DP curve, the exact Laplace curve and the finite-support bound vs an "
             "attack on a Laplace release",
        description="For each epsilon and uniform prior size: the certified bounds kappa e^eps (Balle et al. 2022, "
        "Cor. 3), 1 - f_{eps,0}(kappa) (any eps-DP mechanism), 1 - f_eps(kappa) (Laplace trade-off curve, Dong, Roth "
        "& Su 2022) and e^eps / (n - 1 + e^eps) (finite support, Balle et al. 2022 Sec. VII-F), against the "
        "nearest-candidate attack on a Laplace release of n equally spaced candidates (exact and simulated, seeded). "
        "Writes pure_dp.png and pure_dp.csv into --out-dir.",
        fields=[("png", "the figure written"), ("csv", "the CSV of every number"), ("seed", "the --seed"),
                ("rows", "one row per (epsilon, prior size): the four certified bounds, the attack's exact success "
                         "and its simulated success")])
    add_out_dir_arg(p)
    p.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0, 8.0], help="epsilons > 0")
    p.add_argument("--prior-sizes", type=int, nargs="+", default=[2, 10, 100], help="uniform prior sizes >= 2")
    p.add_argument("--trials", type=int, default=100_000, help="simulated releases per point, in [1, 1e8]")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 of the simulation (recorded in the output)")
    add_json_flag(p)
