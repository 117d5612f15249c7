"""``rerokit attack analytic``: the optimal analytic gradient-inversion attack (Riess et al. 2024, Cor. 1)
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

from rerokit.cli._common import add_clip_arg, add_command, add_data_args, add_executor_args, add_json_flag
from rerokit.cli._common import add_noise_multiplier_arg, add_resume_args, executor_from_args


DESCRIPTION = """
The optimal analytic gradient-inversion attack (Riess et al. 2024, Cor. 1) on real DP-SGD with batch size
1 (Opacus), one step per target, compared with the paper's predictions.

The targets are --targets K distinct records of the dataset drawn with --seed; the attacker's
linear layer has --rows M rows (default: the optimal number for the dataset's smallest non-zero
norm and --clip). Reports the reconstruction quality per target and on average, the predicted
expected MSE (Eq. 17 / Prop. 2) and the predicted success P(MSE <= eta) next to the bound
gamma(eta) of Prop. 3. --out FILE.jsonl records one line per target; --resume continues it.
"""

FIELDS = [
    ("settings", "the inputs as used (noise_multiplier, clip, rows, optimal_rows, dim, targets, seed, backend, "
                 "data_range, min_norm, mse_threshold, dataset, out)"),
    ("mean_mse", "mean reconstruction MSE ||x_hat - x||^2 / N over the targets"),
    ("mean_psnr", "mean PSNR in dB (data range of the dataset)"),
    ("mean_ncc", "mean normalised cross-correlation (records with constant values are left out)"),
    ("mean_ssim", "mean structural similarity (image datasets)"),
    ("predicted_expected_mse", "the mean MSE predicted for the attack as run (Eq. 17)"),
    ("predicted_expected_mse_optimal", "the mean MSE of the optimal attack, mean of sigma^2 ||x||^2 (Prop. 2)"),
    ("ncc_bound", "upper bound on the NCC of any reconstruction (Prop. 6)"),
    ("empirical_success", "fraction of targets with MSE <= --mse-threshold"),
    ("empirical_success_ci", "its 95% Clopper-Pearson interval"),
    ("predicted_success", "the success rate predicted by Thm 2"),
    ("predicted_gamma", "the ReRo bound gamma(eta) of Prop. 3 (an upper bound on the success of any attack)"),
    ("clipped_fraction", "fraction of targets whose gradient was clipped"),
    ("per_target", "per-target lists: index (in the dataset), mse, psnr, ncc, ssim, variance (Eq. 17), "
                   "clip_factor"),
    ("ncc_undefined", "targets whose NCC is undefined (constant records), when there are any"),
]


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
    if args.out is not None:
        from rerokit._files import check_output_file

        check_output_file("out", args.out)
    elif args.resume:
        raise ValueError("resume needs --out (the JSONL file of the run to continue)")
    from rerokit._files import check_data_args

    check_data_args(args.dataset, args.data_path)
    executor = executor_from_args(args)
    ds = load_dataset(args.dataset, args.data_path, seed=seed)
    k = check_int("targets", args.targets, minimum=1, maximum=ds.n)
    idx = np.sort(np.random.default_rng(seed).choice(ds.n, size=k, replace=False))
    X = ds.flat.astype(np.float64)
    _check_memory(args, X, k)
    image_shape = ds.sample_shape if len(ds.sample_shape) == 3 else None
    settings = {"dataset": args.dataset, "noise_multiplier": args.noise_multiplier, "clip": args.clip,
                "rows": args.rows, "targets": k, "seed": seed, "mse_threshold": args.mse_threshold,
                "backend": args.backend}
    from rerokit.executors import RunOptions
    from rerokit.experiments.analytic import AnalyticConfig, run_analytic_attack, trial_schema

    log = None
    if args.out is not None:
        from rerokit.experiments.records import TrialLog

        log = TrialLog(args.out, settings, resume=args.resume, trials=k, schema=trial_schema(), name="out",
                       overwrite=args.overwrite)
    try:
        config = AnalyticConfig(noise_multiplier=args.noise_multiplier, clip=args.clip, rows=args.rows,
                                mse_threshold=args.mse_threshold, backend=args.backend)
        out = run_analytic_attack(
            X[idx], config, seed=seed, data_range=ds.data_range, image_shape=image_shape,
            min_norm=min_nonzero_norm(X), indices=idx, log=log,
            options=RunOptions(progress=not args.no_progress, executor=executor),
        )
    finally:
        executor.close()  # a local Ray cluster started for this run
        if log is not None:
            log.close()
    from rerokit.report.results import AnalyticAttackOutput

    out["settings"]["dataset"] = args.dataset
    if args.out is not None:
        out["settings"]["out"] = args.out
    return AnalyticAttackOutput.of(out).to_dict()


def _check_memory(args: argparse.Namespace, X, k: int) -> None:
    """Refuse --rows (or the default rows that --clip implies) whose attack layer does not fit."""
    from rerokit._resources import analytic_attack_bytes, check_memory, memory_limit
    from rerokit.bounds.uninformed import min_nonzero_norm, optimal_rows

    n = X.shape[1]
    if args.rows is not None:
        m, option, what = args.rows, "--rows", f"the attacker's layer of {args.rows} x {n} weights"
    else:
        r = min_nonzero_norm(X)
        m = optimal_rows(args.clip, r)
        option = "--clip"
        what = (f"the attacker's layer with the optimal {m} rows for --clip {args.clip:g} (ceil((C/r)^2), smallest "
                f"record norm r = {r:.3g}) x {n} weights")
    opacus = analytic_attack_bytes(m, n, k, "opacus")
    need = analytic_attack_bytes(m, n, k, args.backend)
    hint = f"use a smaller {option}" if args.rows is not None else "use a smaller --clip or give a smaller --rows"
    if args.backend == "vmap" and opacus <= memory_limit():
        hint += " or --backend opacus (one target at a time)"
    check_memory(option, need, what + f" ({args.backend} backend)", hint=hint)


def _summary(d: dict[str, Any]):
    """The registered verdict, with the laws of Riess et al. 2024 named for what they are: the law of the optimal unbiased
    attack (kind "attack law"), not bounds on every attacker (a constant guess or a shrunk estimate can
    do better; see rerokit.bounds.uninformed_scope)."""
    import dataclasses

    from rerokit.report.verdicts import summary_for

    s = summary_for("attack analytic", d)
    rows = tuple(dataclasses.replace(r, status="attack law") if r.status == "certified" else r for r in s.rows)
    verdict = tuple(v.replace("no analytic attack exceeds", "the optimal unbiased analytic attack reaches at most")
                    if isinstance(v, str) else tuple(p.replace("no analytic attack exceeds", "the optimal unbiased "
                                                               "analytic attack reaches at most")
                                                     if isinstance(p, str) else p for p in v) for v in s.verdict)
    return dataclasses.replace(s, rows=rows, verdict=verdict)


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "analytic", handle, description=DESCRIPTION, fields=FIELDS, summary=_summary,
                    help="optimal analytic gradient-inversion attack on Opacus DP-SGD (batch size 1; Riess et al. 2024)")
    add_data_args(p)
    add_noise_multiplier_arg(p, required=True)
    add_clip_arg(p, required=True)
    p.add_argument("--rows", type=int, default=None, help="rows M >= 1 of the attacker's layer (default: optimal)")
    p.add_argument("--targets", type=int, required=True, help="number of attacked records K, 1..dataset size")
    p.add_argument("--seed", type=int, required=True, help="seed >= 0 (targets and noise)")
    p.add_argument("--mse-threshold", type=float, default=0.01, help="MSE threshold eta > 0 for gamma (default 0.01)")
    p.add_argument("--backend", default="opacus", help="opacus (default: Opacus DPOptimizer loop) or vmap (torch.func)")
    add_resume_args(p, out="JSONL file: a header with the settings (seed included), then one record per target, "
                    "appended per chunk of 100 targets (an interruption loses at most that chunk)",
                    resume="continue the run in --out (same settings, --targets included) without repeating its "
                    "targets")
    add_executor_args(p, what="blocks of 100 targets")
    add_json_flag(p)
