"""``rerokit experiment balle-mia | reconn-seeds``: Balle, Cherubin & Hayes (2022) experiments
against weaker adversaries on the digits (PNG + CSV + resumable JSONL). Heavy imports live in the
handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_command, add_executor_args, add_json_flag, add_out_dir_arg, add_resume_args
from rerokit.cli._common import executor_from_args


def _mia(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit._validate import check_distinct, check_int
    from rerokit.experiments.balle_mia import MIAConfig, informed_mia_figure

    cfg = MIAConfig(fixed_size=args.fixed_size, epochs=args.epochs, lr=args.lr, momentum=args.momentum,
                    epsilon=args.epsilon, delta=args.delta, clip=args.clip, seed=args.seed,
                    shadow_pairs=args.shadow_pairs)
    check_int("trials", args.trials, minimum=1)
    check_distinct("inits", args.inits)
    check_output_dir("out_dir", args.out_dir, files=["informed_mia.csv", "informed_mia.png",
                                                     *[f"informed_mia_{i}.jsonl" for i in args.inits]])
    with executor_from_args(args) as ex:
        res = informed_mia_figure(args.out_dir, cfg, trials=args.trials, inits=args.inits, resume=args.resume,
                                  progress=not args.no_progress, executor=ex)
    return {"png": res["png"], "csv": res["csv"], "seed": args.seed, "noise_multiplier": cfg.noise_multiplier,
            "rows": [{k: r[k] for k in ("init", "attack", "success", "ci_low", "ci_high", "bound")}
                     for r in res["rows"]],
            "reference": "Balle, Cherubin & Hayes 2022, Sec. II-D Alg. 2, Fig. 11"}


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "balle-mia", _mia, help="Balle et al. Alg. 2: the informed membership-inference game, known vs random init",
        description="b ~ Unif{0,1}; theta = A(D- + {z_b}) by full-batch GD with momentum (digits MLP 64-10-10; "
        "DP-GD with --epsilon); two adversaries guess b: a calibrated loss test and the nearest of their own shadow "
        "models. Writes informed_mia.png (loss distributions, Fig. 11, and the success rates), informed_mia.csv and "
        "informed_mia_<init>.jsonl into --out-dir.",
        fields=[("png", "the figure"), ("csv", "the CSV of all rows"), ("seed", "the --seed"),
                ("noise_multiplier", "sigma of DP-GD (0 without --epsilon)"),
                ("rows", "one row per init and attack: success, ci_low, ci_high (95% Clopper-Pearson), bound "
                         "(certified Phi(sqrt(T)/sigma) with --epsilon; null without noise)"),
                ("reference", "the paper and figure")])
    add_out_dir_arg(p)
    p.add_argument("--trials", type=int, default=500, help="released models per init setting (default 500)")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (default 0; recorded in the JSONL header)")
    p.add_argument("--inits", nargs="+", default=["known", "random"], help="known and/or random (default both)")
    p.add_argument("--fixed-size", type=int, default=500, help="|D-| (default 500)")
    p.add_argument("--epochs", type=int, default=100, help="full-batch steps T (default 100)")
    p.add_argument("--lr", type=float, default=0.2, help="learning rate (default 0.2)")
    p.add_argument("--momentum", type=float, default=0.9, help="momentum in [0, 1) (default 0.9)")
    p.add_argument("--epsilon", type=float, default=None, help="DP-GD at (epsilon, delta)-DP (default: no noise)")
    p.add_argument("--delta", type=float, default=1e-5, help="delta of DP-GD (default 1e-5)")
    p.add_argument("--clip", type=float, default=1.0, help="clipping norm C of DP-GD (default 1)")
    p.add_argument("--shadow-pairs", type=int, default=8, help="the adversary's models per candidate (default 8)")
    add_resume_args(p, "continue the JSONL files in --out-dir (same settings; --trials may grow); trials are "
                    "trained and logged in blocks of 100, so an interruption loses at most the block in flight")
    add_executor_args(p, what="blocks of released models")
    add_json_flag(p)
