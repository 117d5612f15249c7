"""``rerokit experiment balle-mia | reconn-seeds | reconn-weaker``: Balle, Cherubin & Hayes (2022) experiments
against weaker adversaries on the digits (PNG + CSV + resumable JSONL). Heavy imports live in the
handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import (
    add_command, add_executor_args, add_json_flag, add_out_dir_arg, add_resume_args, check_threads,
)
from rerokit.cli._common import add_threads_arg, executor_from_args


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


def _weak_config(args: argparse.Namespace):
    from rerokit.experiments.reconn_weaker import WeakConfig

    return WeakConfig(fixed_size=args.fixed_size, shadow_models=args.shadow_models, targets=args.targets,
                      epochs=args.epochs, lr=args.lr, momentum=args.momentum,
                      reconstructor_epochs=args.reconstructor_epochs, seed=args.seed)


def _weak_run(args: argparse.Namespace, cells, name: str) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit.experiments.reconn_weaker import run_weaker_cells

    from rerokit._validate import check_int

    cfg = _weak_config(args)
    threads = check_threads(args.threads)
    check_output_dir("out_dir", args.out_dir, files=[f"{name}.csv", f"{name}.png", f"{name}.jsonl"])
    import torch

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        res = run_weaker_cells(args.out_dir, cells, cfg, name=name, resume=args.resume, progress=not args.no_progress)
    finally:
        torch.set_num_threads(before)
    return {"png": res["png"], "csv": res["csv"], "jsonl": res["jsonl"], "seed": args.seed,
            "rows": [{k: r[k] for k in ("batch_size", "seed_knowledge", "access", "shadow_data", "steps", "mse",
                                        "nn_oracle_mse", "success_rate")} for r in res["rows"]],
            "reference": "Balle, Cherubin & Hayes 2022, Sec. VI-B (empirical attack results, not bounds)"}


def _seeds(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_distinct, check_int
    from rerokit.experiments.reconn_weaker import ReconnCell

    _weak_config(args)  # the settings first (their messages name their options)
    for b in args.batch_sizes:
        check_int("batch_sizes", b, minimum=1)
    check_distinct("batch_sizes", args.batch_sizes)
    check_distinct("seeds", args.seeds)
    full = args.fixed_size + 1
    cells = []
    for b in args.batch_sizes:
        for s in args.seeds:
            c = ReconnCell(b, s)
            if b >= full and any(x.batch_size >= full for x in cells):
                continue  # a full batch draws no batches: known and unknown seed are the same run
            cells.append(c)
    return _weak_run(args, cells, "reconn_seeds")


def _weaker(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_choice, check_distinct
    from rerokit.experiments.reconn_weaker import ReconnCell

    _weak_config(args)  # the settings first (their messages name their options)
    check_distinct("variants", args.variants)
    full = args.fixed_size + 1
    cells = [ReconnCell(full)]
    for v in args.variants:
        v = check_choice("variants", v, ("logits", "last-layer", "shifted", "faces"))
        cells.append(ReconnCell(full, shadow_data=v) if v in ("shifted", "faces")
                     else ReconnCell(full, access=v.replace("-", "_")))
    return _weak_run(args, cells, "reconn_weaker")


def _weak_common(p: argparse.ArgumentParser, lr: float, epochs: int, momentum: float) -> None:
    add_out_dir_arg(p)
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (default 0; recorded in the JSONL header)")
    p.add_argument("--fixed-size", type=int, default=500, help="|D-| (default 500)")
    p.add_argument("--shadow-models", type=int, default=1000, help="shadow models k >= 2 (default 1000)")
    p.add_argument("--targets", type=int, default=50, help="held-out released models (default 50)")
    p.add_argument("--epochs", type=int, default=epochs, help=f"passes over the data (default {epochs})")
    p.add_argument("--lr", type=float, default=lr, help=f"learning rate (default {lr:g})")
    p.add_argument("--momentum", type=float, default=momentum, help=f"momentum in [0, 1) (default {momentum:g})")
    p.add_argument("--reconstructor-epochs", type=int, default=40, help="reconstructor epochs (default 40)")
    add_threads_arg(p)
    add_resume_args(p, "skip the cells already in the JSONL file in --out-dir (same settings); one line per "
                    "finished cell (one whole RecoNN attack)")
    add_json_flag(p)


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

    fields = [("png", "the figure (MSE per cell, PCA of released models)"), ("csv", "the CSV of all rows"),
              ("jsonl", "the resumable record file"), ("seed", "the --seed"),
              ("rows", "one row per cell: batch_size, seed_knowledge, access, shadow_data, steps, mse (mean RecoNN "
                       "MSE), nn_oracle_mse, success_rate (targets below their oracle)"),
              ("reference", "the paper")]
    p = add_command(sub, "reconn-seeds", _seeds,
                    help="Balle et al. Figs. 7-8: RecoNN on mini-batch SGD with a known or unknown batch seed",
                    description="Released and shadow models trained by SGD with Poisson sampling at expected batch "
                    "size B for --epochs passes (known init); the batch seed known to the adversary or not. Writes "
                    "reconn_seeds.png, reconn_seeds.csv and reconn_seeds.jsonl into --out-dir.", fields=fields)
    _weak_common(p, lr=0.01, epochs=20, momentum=0.0)
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 128, 501],
                   help="expected batch sizes B >= 1 (>= |D-| + 1: full batch; default 32 128 501)")
    p.add_argument("--seeds", nargs="+", default=["known", "unknown"], help="known and/or unknown (default both)")

    p = add_command(sub, "reconn-weaker", _weaker,
                    help="Balle et al. Sec. VI-B: RecoNN with black-box logits, the last layer only, shifted shadows",
                    description="Full-batch GD (known init); the reference attack on all parameters plus one cell per "
                    "--variants: logits (black box, 64 probe images), last-layer (output layer only), shifted "
                    "(shadow targets from another distribution: digits moved by one pixel), faces (scikit-image's LFW "
                    "faces at 8 x 8 with random labels). Writes "
                    "reconn_weaker.png, reconn_weaker.csv and reconn_weaker.jsonl into --out-dir.", fields=fields)
    _weak_common(p, lr=0.2, epochs=100, momentum=0.9)
    p.add_argument("--variants", nargs="+", default=["logits", "last-layer", "shifted", "faces"],
                   help="logits, last-layer, shifted and/or faces (default all four)")
