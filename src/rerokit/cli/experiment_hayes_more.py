"""``rerokit experiment hayes-fig3-sizes | hayes-fig9 | hayes-fig12 | hayes-fig13``: more Hayes et al.
(2023) appendix figures on the digits (PNG + CSV + resumable JSONL per cell). Heavy imports live in
the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_clip_arg, add_command, executor_from_args
from rerokit.cli.experiment_hayes import FIGURE_FIELDS, add_figure_common_args, check_distinct_values

_ROWS = ("x", "prior_size", "prior", "attack", "metric", "value", "ci_low", "ci_high", "gamma", "rho", "log_kappa",
         "grad_norm", "clipped_grad_norm", "zero_guess_success")


def _summary(res: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    return {"png": res["png"], "csv": res["csv"], "points": len(res["rows"]), "trials": args.trials, "seed": args.seed,
            "rows": [{k: r.get(k) for k in _ROWS if r.get(k) is not None} for r in res["rows"]]}


def _run(args: argparse.Namespace, ex, clip: float | None):
    from rerokit.experiments.hayes_more import HayesRun

    return HayesRun(trials=args.trials, seed=args.seed, delta=args.delta, steps=args.steps, clip=clip, lr=args.lr,
                    n_known=args.n_known, resume=args.resume, progress=not args.no_progress, executor=ex,
                    device=args.device)


def _fig3_sizes(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_distinct
    from rerokit.experiments.hayes_more import fig3_sizes

    check_distinct_values("epsilons", args.epsilons)
    check_distinct("prior_sizes", args.prior_sizes)
    with executor_from_args(args) as ex:
        return _summary(fig3_sizes(args.out_dir, _run(args, ex, args.clip), prior_sizes=args.prior_sizes,
                                   epsilons=args.epsilons, prior=args.prior), args)


def _fig9(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.experiments.hayes_more import fig9

    check_distinct_values("epsilons", args.epsilons)
    with executor_from_args(args) as ex:
        return _summary(fig9(args.out_dir, _run(args, ex, args.clip), epsilons=args.epsilons,
                             prior_size=args.prior_size), args)


def _fig13(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.experiments.hayes_more import fig13

    check_distinct_values("epsilons", args.epsilons)
    check_distinct_values("clips", args.clips)
    with executor_from_args(args) as ex:
        return _summary(fig13(args.out_dir, _run(args, ex, None), epsilons=args.epsilons, clips=args.clips,
                              prior_size=args.prior_size), args)


def _fig12(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.experiments.hayes_more import fig12

    check_distinct_values("epsilons", args.epsilons)
    check_distinct_values("rhos", args.rhos)
    with executor_from_args(args) as ex:
        return _summary(fig12(args.out_dir, _run(args, ex, args.clip), epsilons=args.epsilons, rhos=args.rhos,
                              iterations=args.iterations, restarts=args.restarts), args)


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "hayes-fig3-sizes", _fig3_sizes,
                    help="Hayes et al. Fig. 3 over prior sizes 2 ... 1024: Alg. 2 success vs the bound per size",
                    description="Full batch, T = 100, C = 0.1; one prior-aware audit per prior size and epsilon "
                    "(|D-| lowered to 1797 - N where a data prior needs it; --prior noise takes any N, e.g. 2048); "
                    "writes fig3_sizes.png, fig3_sizes.csv and fig3_sizes_n<N>_eps<E>.jsonl into --out-dir.",
                    fields=FIGURE_FIELDS)
    add_figure_common_args(p, trials=100)
    p.add_argument("--prior-sizes", type=int, nargs="+", default=[2**k for k in range(1, 11)],
                   help="prior sizes N >= 2 (default 2 4 ... 1024)")
    p.add_argument("--epsilons", type=float, nargs="+", default=[1, 4, 16], help="epsilons > 0 (default 1 4 16)")
    p.add_argument("--prior", default="data", help="data (default: distinct digits) or noise (uniform images)")
    add_clip_arg(p, "clipping norm C > 0 (default 0.1)", default=0.1)

    p = add_command(sub, "hayes-fig9", _fig9, help="Hayes et al. Fig. 9: a prior of digits vs a prior of noise images",
                    description="Prior size 10, full batch, T = 100, C = 0.1; Alg. 2 with a data prior and with "
                    "uniform-noise candidates of the data's intra-sample distance statistics; writes fig9.png, "
                    "fig9.csv and fig9_<prior>_eps<E>.jsonl into --out-dir.", fields=FIGURE_FIELDS)
    add_figure_common_args(p, trials=100)
    p.add_argument("--epsilons", type=float, nargs="+", default=[1, 2, 4, 8, 16], help="epsilons > 0")
    p.add_argument("--prior-size", type=int, default=10, help="prior size N >= 2 (default 10)")
    add_clip_arg(p, "clipping norm C > 0 (default 0.1)", default=0.1)

    p = add_command(sub, "hayes-fig13", _fig13,
                    help="Hayes et al. Fig. 13: average gradient norm over training and success at C = 0.1 and 1",
                    description="Prior size 10, full batch, T = 100; per (C, epsilon) Alg. 2's success and the mean "
                    "over all training points and steps of ||g|| and min(||g||, C); writes fig13.png, fig13.csv "
                    "and fig13_C<C>_eps<E>.jsonl into --out-dir.", fields=FIGURE_FIELDS)
    add_figure_common_args(p, trials=100)
    p.add_argument("--epsilons", type=float, nargs="+", default=[1, 4, 16, 40], help="epsilons > 0")
    p.add_argument("--clips", type=float, nargs="+", default=[0.1, 1.0], help="clipping norms C > 0 (default 0.1 1)")
    p.add_argument("--prior-size", type=int, default=10, help="prior size N >= 2 (default 10)")

    p = add_command(sub, "hayes-fig12", _fig12,
                    help="Hayes et al. Fig. 12: gradient attack, >= rho of pixels within 32/255, vs the bound",
                    description="Full batch, T = 100, C = 0.1; the gradient attack (Eq. 1) from uniform noise; "
                    "success when at least a fraction rho of the pixels is within 32/255 of the target; bound gamma "
                    "(Thm 2) at the uniform 17-level pixel prior's kappa (App. I); writes fig12.png, fig12.csv and "
                    "fig12_eps<E>.jsonl into --out-dir.", fields=FIGURE_FIELDS)
    add_figure_common_args(p, trials=8)
    p.add_argument("--epsilons", type=float, nargs="+", default=[1, 10, 100, 1000], help="epsilons > 0")
    p.add_argument("--rhos", type=float, nargs="+", default=[0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
                   help="pixel fractions rho in [0, 1]")
    add_clip_arg(p, "clipping norm C > 0 (default 0.1)", default=0.1)
    p.add_argument("--iterations", type=int, default=200, help="gradient attack: Adam steps (default 200)")
    p.add_argument("--restarts", type=int, default=2, help="gradient attack: random restarts (default 2)")
