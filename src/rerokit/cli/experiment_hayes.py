"""``rerokit experiment hayes-fig3 | hayes-fig5 | hayes-fig8``: Hayes et al. (2023) Figs. 3, 5, 8
on the digits (PNG + CSV + resumable JSONL per cell). Wire :func:`register` into the
"experiment" group. Heavy imports live in the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_clip_arg, add_command, add_delta_arg, add_executor_args
from rerokit.cli._common import add_json_flag, add_out_dir_arg, add_resume_args, add_steps_arg, executor_from_args

FIGURE_FIELDS = [
    ("png", "the figure written"),
    ("csv", "the CSV of all plotted numbers"),
    ("points", "rows of the figure (points x attacks)"),
    ("trials", "the --trials per point"),
    ("seed", "the --seed"),
    ("rows", "one row per point: x (epsilon or sampling rate), prior_size, attack, metric (success or mse), "
             "value, ci_low, ci_high (95% interval), gamma (the ReRo bound; null for mse)"),
]


def add_figure_common_args(p: argparse.ArgumentParser, *, trials: int) -> None:
    add_out_dir_arg(p)
    p.add_argument("--trials", type=int, default=trials, help=f"prior-aware trials per point (default {trials})")
    p.add_argument("--seed", type=int, default=0,
                   help="seed >= 0 (default 0; recorded in every JSONL header and record and in the output)")
    add_delta_arg(p, "for the calibration")
    add_steps_arg(p, "number of DP-SGD steps T >= 1 (default 100)", default=100)
    p.add_argument("--lr", type=float, default=10.0, help="learning rate (default 10)")
    p.add_argument("--n-known", type=int, default=999, help="|D-| (default 999)")
    add_resume_args(p, "continue the JSONL files in --out-dir (same settings; --trials may grow). Trials are "
                    "trained and logged in blocks (32 prior-aware, 8 gradient-attack trials): an interruption "
                    "loses at most the blocks in flight")
    add_executor_args(p, device=True, what="blocks of trials")
    add_json_flag(p)


def _summary(res: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    return {"png": res["png"], "csv": res["csv"], "points": len(res["rows"]), "trials": args.trials, "seed": args.seed,
            "rows": [{k: r[k] for k in ("x", "prior_size", "attack", "metric", "value", "ci_low", "ci_high", "gamma")}
                     for r in res["rows"]]}


def _kw(args: argparse.Namespace, ex: Any, **audit: Any) -> dict[str, Any]:
    from rerokit.executors import RunOptions
    from rerokit.experiments.audit import AuditConfig

    return dict(trials=args.trials, seed=args.seed, delta=args.delta,
                audit=AuditConfig(noise_multiplier=0.0, steps=args.steps, clip=args.clip, lr=args.lr,
                                  n_known=args.n_known, **audit),
                options=RunOptions(resume=args.resume, progress=not args.no_progress, executor=ex, device=args.device))


def check_distinct_values(name: str, values) -> None:
    """Values of a sweep name its result files with 6 significant digits (``fig3_eps4.jsonl``): two
    values that print alike would share one file."""
    from rerokit._validate import check_distinct

    try:
        check_distinct(name, [f"{float(v):g}" for v in values])
    except ValueError:
        raise ValueError(f"{name} must be distinct (to 6 significant digits: they name the result files), "
                         f"got {' '.join(f'{float(v):g}' for v in values)}") from None


def _precheck(args: argparse.Namespace, figure: str, files: list[str], *, prior_sizes=(10,), full: bool = False,
              gradient: bool = False) -> None:
    """Output folder, repeated sweep values and the memory of one chunk of trials, before any work."""
    from rerokit._files import check_output_dir
    from rerokit._validate import check_int
    from rerokit.experiments.audit import check_audit_memory
    from rerokit.experiments.audit import AuditConfig

    check_output_dir("out_dir", args.out_dir, files=[f"{figure}.png", f"{figure}.csv", *files])
    steps = check_int("steps", args.steps, minimum=1)
    n_known = check_int("n_known", args.n_known, minimum=0)
    trials = check_int("trials", args.trials, minimum=1)
    name = "prior_sizes" if gradient else "prior_size"
    for n in prior_sizes:
        cfg = AuditConfig(noise_multiplier=0.0, prior_size=check_int(name, n, minimum=2), steps=steps,
                          n_known=n_known, clip=1.0, lr=1.0)
        check_audit_memory(cfg, trials, 32, full=full)  # hayes_figures trains 32 prior-aware trials at once
    if gradient:
        gt = check_int("gradient_trials", args.gradient_trials, minimum=1)
        check_audit_memory(cfg, gt, 8)


def _prior_aware_figure(args: argparse.Namespace, figure: str, run, sweep: str, values, files: list[str],
                        **kw: Any) -> dict[str, Any]:
    """A figure of prior-aware audits swept over ``values`` (the option ``sweep``), one JSONL file each
    (``files``): checks first, then ``run`` on the executor."""
    check_distinct_values(sweep, values)
    with executor_from_args(args) as ex:
        _precheck(args, figure, files, prior_sizes=(args.prior_size,), full="alg2_nosub" in args.attacks)
        return _summary(run(args.out_dir, attacks=tuple(args.attacks), **kw,
                            **_kw(args, ex, prior_size=args.prior_size)), args)


def _fig3(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.experiments.hayes_figures import fig3

    return _prior_aware_figure(args, "fig3", fig3, "epsilons", args.epsilons,
                               [f"fig3_eps{float(e):g}.jsonl" for e in args.epsilons], epsilons=args.epsilons)


def _fig5(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.experiments.hayes_figures import fig5

    return _prior_aware_figure(args, "fig5", fig5, "sample_rates", args.sample_rates,
                               [f"fig5_q{float(q):g}.jsonl" for q in args.sample_rates],
                               sample_rates=args.sample_rates, epsilon=args.epsilon)


def _fig8(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_distinct
    from rerokit.experiments.hayes_figures import fig8

    check_distinct_values("epsilons", args.epsilons)
    check_distinct("prior_sizes", args.prior_sizes)
    with executor_from_args(args) as ex:
        _precheck(args, "fig8", [f"fig8_gradient_eps{float(e):g}.jsonl" for e in args.epsilons],
                  prior_sizes=args.prior_sizes, gradient=True)
        from rerokit.experiments.audit import GradientAttack

        return _summary(fig8(args.out_dir, epsilons=args.epsilons, prior_sizes=args.prior_sizes,
                             gradient_trials=args.gradient_trials,
                             attack=GradientAttack(args.iterations, args.restarts), **_kw(args, ex)), args)


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "hayes-fig3", _fig3, help="Hayes et al. 2023 Fig. 3: prior-aware success vs epsilon with the bound",
                    description="Prior size N (default 10), full batch, T = 100, C = 0.1; one prior-aware audit per "
                    "epsilon; writes fig3.png, fig3.csv and fig3_eps<E>.jsonl into --out-dir.", fields=FIGURE_FIELDS)
    add_figure_common_args(p, trials=100)
    p.add_argument("--epsilons", type=float, nargs="+", default=[1, 2, 4, 8, 16], help="epsilons > 0")
    p.add_argument("--prior-size", type=int, default=10, help="prior size N >= 2 (default 10)")
    add_clip_arg(p, "clipping norm C > 0 (default 0.1)", default=0.1)
    p.add_argument("--attacks", nargs="+", default=["alg2"], help="alg2 (default), alg3, loglik, alg2_nosub")

    p = add_command(sub, "hayes-fig5", _fig5, help="Hayes et al. 2023 Fig. 5: success vs sampling rate q at epsilon = 4",
                    description="T = 100, C = 1, prior size 10; sigma calibrated per q; Alg. 3 and the "
                    "log-likelihood attack; writes fig5.png, fig5.csv and fig5_q<Q>.jsonl into --out-dir.",
                    fields=FIGURE_FIELDS)
    add_figure_common_args(p, trials=100)
    p.add_argument("--sample-rates", type=float, nargs="+", default=[0.01, 0.05, 0.1, 0.25, 0.5, 1.0],
                   help="sampling rates q in (0, 1]")
    p.add_argument("--epsilon", type=float, default=4.0, help="epsilon > 0 (default 4)")
    p.add_argument("--prior-size", type=int, default=10, help="prior size N >= 2 (default 10)")
    add_clip_arg(p, "clipping norm C > 0 (default 1)", default=1.0)
    p.add_argument("--attacks", nargs="+", default=["alg3", "loglik"], help="alg3 and loglik (default), alg2")

    p = add_command(sub, "hayes-fig8", _fig8,
                    help="Hayes et al. 2023 Fig. 8: gradient-based vs prior-aware attack, prior sizes 2, 8, 128",
                    description="Full batch, T = 100, C = 0.1; per epsilon: one prior-aware audit per prior size "
                    "and one gradient-attack audit whose reconstructions are matched against priors of every size "
                    "(App. D); writes fig8.png, fig8.csv and JSONL files into --out-dir.", fields=FIGURE_FIELDS)
    add_figure_common_args(p, trials=50)
    p.add_argument("--gradient-trials", type=int, default=4, help="gradient-attack trials per epsilon (default 4)")
    p.add_argument("--epsilons", type=float, nargs="+", default=[1, 4, 16, 64], help="epsilons > 0")
    p.add_argument("--prior-sizes", type=int, nargs="+", default=[2, 8, 128], help="prior sizes >= 2")
    add_clip_arg(p, "clipping norm C > 0 (default 0.1)", default=0.1)
    p.add_argument("--iterations", type=int, default=200, help="gradient attack: Adam steps (default 200)")
    p.add_argument("--restarts", type=int, default=2, help="gradient attack: random restarts (default 2)")
