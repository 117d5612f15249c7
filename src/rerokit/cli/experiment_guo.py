"""``rerokit experiment guo-fig2 | guo-fig5``: Guo et al. (2022) Figs. 2 and 5 at reduced scale on the
digits (PNG + CSV; Fig. 5 resumable). Heavy imports live in the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_command, add_json_flag, add_out_dir_arg, add_resume_args

_WARN = ("warning", "per-sample FIL is data-dependent and can itself leak (Guo et al. 2022, footnote 2)")


def _fig2(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit._validate import check_positive
    from rerokit.experiments.guo_fil import guo_fig2

    check_positive("lam", args.lam)
    check_positive("noise_std", args.noise_std)
    check_output_dir("out_dir", args.out_dir, files=("guo_fig2.csv", "guo_fig2.png"))
    return guo_fig2(args.out_dir, lam=args.lam, noise_std=args.noise_std, progress=False)


def _fig5(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit._validate import check_distinct
    from rerokit.experiments.guo_fil import GuoGrid, guo_fig5

    grid = GuoGrid(noise_multipliers=tuple(args.noise_multipliers), steps=tuple(args.steps),
                   sample_rate=args.sample_rate, clip=args.clip, lr=args.lr, hidden=args.hidden,
                   test_size=args.test_size, seed=args.seed)
    check_distinct("noise_multipliers", args.noise_multipliers)
    check_distinct("steps", args.steps)
    check_output_dir("out_dir", args.out_dir, files=("guo_fig5.csv", "guo_fig5.png", "guo_fig5.jsonl"))
    res = guo_fig5(args.out_dir, grid, resume=args.resume, progress=not args.no_progress)
    return {"png": res["png"], "csv": res["csv"], "jsonl": res["jsonl"], "seed": args.seed, "rows": res["rows"],
            "warning": res["warning"]}


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "guo-fig2", _fig2, help="Guo et al. Fig. 2: RDP bound vs per-sample dFIL and spectral-FIL bounds",
        description="Logistic regression on digits 0 vs 1 released with output perturbation: the RDP MSE bound "
        "(Thm 1) and the histograms of the per-sample Cramer-Rao bounds 1/dFIL and 1/eta^2 (spectral-norm FIL, "
        "Thm 2). Writes guo_fig2.png and guo_fig2.csv into --out-dir.",
        fields=[("png", "the figure"), ("csv", "one row per sample: dfil, its bound, the spectral FIL and bound"),
                ("n", "samples"), ("epsilon_rdp2", "RDP epsilon at order 2"), ("rdp_mse_bound", "Thm 1's bound"),
                ("dfil_bound_median", "median 1/dFIL"), ("spectral_bound_median", "median 1/eta^2"), _WARN])
    add_out_dir_arg(p)
    p.add_argument("--lam", type=float, default=1e-2, help="L2 penalty lambda > 0 (default 1e-2)")
    p.add_argument("--noise-std", type=float, default=1e-2, help="output noise std > 0 (default 1e-2)")
    add_json_flag(p)

    p = add_command(
        sub, "guo-fig5", _fig5, help="Guo et al. Fig. 5 (reduced): RDP vs dFIL MSE bounds against test accuracy",
        description="DP-SGD with FIL accounting (Alg. 1; MLP 64-h-10 tanh on digits, 500 held out) for every pair of "
        "--noise-multipliers and --steps: test accuracy, the RDP bound (Thm 1 from the replace-one (2, eps)-RDP) and the bounds at the largest and "
        "median per-sample dFIL (Thm 2). Writes guo_fig5.png, guo_fig5.csv and guo_fig5.jsonl into --out-dir.",
        fields=[("png", "the figure"), ("csv", "the CSV"), ("jsonl", "the resumable record file"),
                ("seed", "the --seed"), ("rows", "one row per setting"), _WARN])
    add_out_dir_arg(p)
    p.add_argument("--noise-multipliers", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0], help="sigmas > 0")
    p.add_argument("--steps", type=int, nargs="+", default=[50, 200], help="step counts T >= 1 (default 50 200)")
    p.add_argument("--sample-rate", type=float, default=0.05, help="Poisson sampling rate q in (0, 1] (default 0.05)")
    p.add_argument("--clip", type=float, default=1.0, help="clipping norm C > 0 (default 1)")
    p.add_argument("--lr", type=float, default=0.5, help="learning rate > 0 (default 0.5)")
    p.add_argument("--hidden", type=int, default=32, help="hidden width >= 1 (default 32)")
    p.add_argument("--test-size", type=int, default=500, help="held-out digits (default 500)")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (default 0)")
    add_resume_args(p, "skip the settings already in guo_fig5.jsonl in --out-dir (same grid); one line per setting")
    add_json_flag(p)
