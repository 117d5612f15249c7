"""``rerokit attack reconn``: the reconstructor-network attack of Balle et al. 2022 (Sec. IV-V).

Trains ``--shadow-models`` shadow models on D_- (``--fixed-size`` points) plus one shadow target
each, a reconstructor network on (parameters, target) pairs, and evaluates it on ``--targets``
held-out released models against the nearest-neighbour oracle (Sec. V-B). ``--epochs`` is the
number of full-batch GD steps of the released/shadow models (Table V: 100). With ``--epsilon``
the released and shadow models are trained with DP-GD (clip ``--clip``, delta ``--delta``,
Sec. VI-D). Writes a PNG of targets (top) above reconstructions (bottom) unless ``--no-png``.
Library imports live inside the handler.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import (
    add_command, add_data_args, add_dpgd_args, add_executor_args, add_json_flag, check_threads,
)
from rerokit.cli._common import add_reconn_args, add_resume_args, add_threads_arg, executor_from_args

DESCRIPTION = """
The reconstructor-network attack of Balle et al. 2022 (Sec. IV-V). Trains --shadow-models shadow
models on a fixed set D- (--fixed-size records) plus one shadow target each, a reconstructor
network from model parameters to the target, and evaluates it on --targets held-out released
models against the nearest-neighbour oracle (Sec. V-B). --epochs is the number of full-batch
gradient steps of the released and shadow models (Table V: 100). With --epsilon they are trained
with DP-GD (clip --clip, delta --delta; Sec. VI-D). Writes a PNG of targets (top row) above their
reconstructions (bottom row) unless --no-png.
"""

FIELDS = [
    ("mse", "mean reconstruction MSE over the evaluation targets"),
    ("mse_ci", "95% interval of mse"),
    ("nn_oracle_mse", "mean MSE of the nearest-neighbour oracle (the closest record the attacker could "
                      "know); the attack succeeds (Table II) when mse is below it"),
    ("success", "true when mse < nn_oracle_mse"),
    ("success_rate", "fraction of targets reconstructed better than by the oracle"),
    ("success_rate_ci", "95% Clopper-Pearson interval of success_rate"),
    ("kl", "mean KL divergence between a classifier's outputs on target and reconstruction (Sec. V-B)"),
    ("nn_oracle_kl", "the same for the oracle's guess"),
    ("targets", "evaluation targets (released models)"),
    ("noise_multiplier", "DP-GD noise multiplier for (--epsilon, --delta) (0 without --epsilon)"),
    ("shadow_shifted", "shadow targets shifted to keep them out of the evaluation set"),
    ("shadow_train_mse", "reconstructor MSE on (up to 1000) shadow models it was trained on"),
    ("classifier_accuracy", "accuracy of the classifier used for kl"),
    ("released_model_accuracy", "mean test accuracy of the released models"),
    ("settings", "the inputs as used (seed included)"),
    ("png", "the PNG written (without --no-png)"),
    ("jsonl", "the --out file"),
    ("reference", "the paper and result"),
]


def _int_list(name: str, s: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(v) for v in str(s).split(",") if v.strip() != "")
    except ValueError:
        raise ValueError(f"{name} must be comma-separated positive integers, got {s!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise ValueError(f"{name} must be comma-separated positive integers, got {s!r}")
    return vals


def _dataset_for_memory_check(args: argparse.Namespace, hidden, reconstructor_hidden):
    """Load the dataset (passed on to the attack) and refuse sizes whose models do not fit in memory."""
    from rerokit._resources import check_memory, mlp_num_params, reconn_bytes
    from rerokit._validate import check_int
    from rerokit.data import load_dataset

    from rerokit._files import check_data_args

    check_data_args(args.dataset, args.data_path)
    ds = load_dataset(args.dataset, path=args.data_path)
    k = check_int("shadow_models", args.shadow_models, minimum=2)
    t = check_int("targets", args.targets, minimum=1)
    need = reconn_bytes(ds.dim, int(ds.num_classes), hidden, reconstructor_hidden, k, t)
    models_only = reconn_bytes(ds.dim, int(ds.num_classes), hidden, (), k, t)
    P = mlp_num_params([ds.dim, *hidden, int(ds.num_classes)])
    # name the option that makes the estimate large
    option = "--hidden" if P > 10**6 else ("--shadow-models" if models_only >= need / 2 else "--reconstructor-hidden")
    check_memory(option, need,
                 f"{k} shadow and {t} released models (hidden {args.hidden}) and the reconstructor (hidden "
                 f"{args.reconstructor_hidden})",
                 hint="use fewer --shadow-models or smaller --hidden / --reconstructor-hidden")
    return ds


def _reconn(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_loop_count, check_positive, check_probability

    threads = check_threads(args.threads)
    check_loop_count("epochs", args.epochs)
    check_loop_count("reconstructor_epochs", args.reconstructor_epochs)
    # --delta and --clip set the DP-GD of a private attack: checked always, refused without --epsilon
    check_probability("delta", args.delta, high_open=True)
    check_positive("clip", args.clip)
    if args.epsilon is None and (args.delta != 1e-5 or args.clip != 1.0):
        raise ValueError("--delta and --clip set the DP-GD of a private attack and need --epsilon (without it the "
                         "models are trained without noise or clipping)")
    import torch

    from rerokit.attacks.reconn import save_reconstructions_png
    from rerokit.executors import RunOptions
    from rerokit.experiments.reconn import ReconnConfig, run_reconn

    if threads:
        torch.set_num_threads(threads)
    from rerokit._files import check_output_file

    # paths that cannot be written fail now, not after the attack has run
    if args.out is not None:
        check_output_file("out", args.out)
    elif args.resume:
        raise ValueError("resume needs --out (the JSONL file of the run to continue)")
    if not args.no_png:
        png = check_output_file("png", args.png)
        png.parent.mkdir(parents=True, exist_ok=True)
    hidden = _int_list("hidden", args.hidden)
    reconstructor_hidden = _int_list("reconstructor_hidden", args.reconstructor_hidden)
    executor = executor_from_args(args)  # checked before the data are read
    ds = _dataset_for_memory_check(args, hidden, reconstructor_hidden)
    try:
        config = ReconnConfig(
            shadow_models=args.shadow_models, fixed_size=args.fixed_size, targets=args.targets, epochs=args.epochs,
            init="random" if args.random_init else "known", epsilon=args.epsilon, delta=args.delta, clip=args.clip,
            hidden=hidden, lr=args.lr, momentum=args.momentum, reconstructor_hidden=reconstructor_hidden,
            reconstructor_epochs=args.reconstructor_epochs, optimizer=args.optimizer, compile=args.compile,
        )
        options = RunOptions(out=args.out, resume=args.resume, overwrite=args.overwrite, progress=not args.quiet,
                             chunk_size=args.chunk_size, executor=executor, device=args.device)
        res = run_reconn(ds, config, seed=args.seed, data_path=args.data_path, options=options)
    finally:
        executor.close()  # a local Ray cluster started for this run
    from rerokit.report.results import ReconnOutput

    png = None
    if not args.no_png:
        png = save_reconstructions_png(
            res.targets, res.reconstructions, res.shape, args.png,
            title=f"RecoNN {res.settings['dataset']}: mse {res.mse:.4f} vs NN oracle {res.nn_oracle_mse:.4f}",
        )
    return ReconnOutput.of(res.to_dict(), png=png, jsonl=args.out or None,
                           reference="Balle et al. 2022, Sec. IV-V (Table II: success = mean MSE below the NN oracle)"
                           ).to_dict()


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "reconn", _reconn, description=DESCRIPTION, fields=FIELDS,
                    help="reconstructor-network attack with shadow models (Balle et al. 2022 Sec. IV)")
    add_data_args(p, "digits (default), mnist or cifar10 (these need --data-path)")
    add_reconn_args(p)
    p.add_argument("--lr", type=float, default=0.2, help="released/shadow model learning rate (Table V: 0.2)")
    p.add_argument("--momentum", type=float, default=0.9, help="released/shadow model momentum (Table V: 0.9)")
    p.add_argument("--hidden", default="10", help="hidden widths of the released MLP (ELU), comma-separated")
    p.add_argument("--random-init", action="store_true", help="adversary does not know the initialisation (Sec. VI-B)")
    p.add_argument("--epsilon", type=float, default=None, help="train with (epsilon, delta)-DP full-batch DP-GD")
    add_dpgd_args(p)
    p.add_argument("--reconstructor-hidden", default="512,512", help="reconstructor hidden widths (paper: 1000,1000)")
    p.add_argument("--optimizer", default="adam", choices=("adam", "rmsprop"),
                   help="reconstructor optimizer (default adam)")
    p.add_argument("--compile", action="store_true", help="torch.compile the shadow-model step (needs a C++ compiler)")
    add_threads_arg(p)
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (data split, initialisation, noise; default 0)")
    p.add_argument("--png", default="reconn.png", help="PNG of targets above reconstructions (default reconn.png)")
    p.add_argument("--no-png", action="store_true", help="write no PNG")
    add_resume_args(p, out="JSONL file: a header with the settings (seed included), then one line per evaluation "
                    "target, written when the attack is evaluated (the unit of resumption is the whole attack run)",
                    resume="continue --out written with the same settings (recomputes deterministically, appends "
                    "the missing targets); checked before any training", quiet=True)
    p.add_argument("--chunk-size", type=int, default=None,
                   help="models per block (shadow and released models; default: about 2^21 activations per block, "
                   "e.g. 418 for |D-| = 500 and hidden 10); recorded in the settings")
    add_executor_args(p, device=True, what="blocks of shadow models")
    add_json_flag(p)
