"""``rerokit audit ...``: attack DP-SGD training and compare the success with the ReRo bound.

Commands: ``prior-aware`` (Hayes et al. 2023 Alg. 2 / Alg. 3 / App. G) and ``gradient``
(Eq. 1 gradient-based attack with App. D prior matching). Heavy imports live in the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_json_flag, help_kw

_COMMON_FIELDS = [
    ("gamma", "the ReRo bound of DP-SGD at kappa (Hayes et al. 2023, Thm 2): no attack succeeds with a higher "
              "probability; 1 without noise"),
    ("kappa", "baseline success of the prior (1/N, or the largest --prior-weights)"),
    ("noise_multiplier", "sigma used (calibrated for --epsilon, or given)"),
    ("trials", "trials summarised (0..trials-1)"),
    ("seed", "the --seed; trial i depends on (seed, i) only"),
    ("epsilon", "the --epsilon sigma was calibrated for (null with --noise-multiplier)"),
    ("delta", "the --delta of that calibration"),
    ("settings", "the audit settings as used (dataset, model, prior, steps, sample rate, clip, ...)"),
    ("out", "the --out file"),
]


def register(sub: argparse._SubParsersAction) -> None:
    _register_prior_aware(sub)
    _register_gradient(sub)


def _common(p: argparse.ArgumentParser, *, trials: int, chunk: int) -> None:
    p.add_argument("--dataset", default="digits", help="digits (default), mnist or cifar10 (these need --data-path)")
    p.add_argument("--data-path", default=None, help="local MNIST / CIFAR-10 file or folder")
    p.add_argument("--prior-size", type=int, default=10, help="prior size N >= 2 (default 10; kappa = 1/N)")
    p.add_argument("--prior-weights", type=float, nargs="+", default=None,
                   help="N prior probabilities summing to 1 (default uniform; kappa = max weight)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--epsilon", type=float, default=None,
                   help="target epsilon > 0: sigma is calibrated for (epsilon, delta) with dp-accounting (PLD)")
    g.add_argument("--noise-multiplier", type=float, default=None, help="sigma >= 0 given directly instead of --epsilon")
    p.add_argument("--delta", type=float, default=1e-5, help="delta in (0, 1) for the calibration (default 1e-5)")
    p.add_argument("--steps", type=int, default=100, help="DP-SGD steps T (default 100)")
    p.add_argument("--sample-rate", type=float, default=1.0, help="Poisson sampling rate q in (0, 1] (default 1: full batch)")
    p.add_argument("--clip", type=float, default=0.1, help="clipping norm C > 0 (default 0.1)")
    p.add_argument("--lr", type=float, default=10.0, help="learning rate on the averaged noisy gradient (default 10: test accuracy ~0.8 at eps 1, ~0.9 at eps 16 on digits)")
    p.add_argument("--model", default="mlp", help="mlp (default; Flatten-Linear-ELU-Linear) or cnn")
    p.add_argument("--hidden", type=int, nargs="+", default=[10], help="MLP hidden widths (default 10); cnn: width")
    p.add_argument("--n-known", type=int, default=None,
                   help="|D-|, the known training points (default min(999, dataset size - N))")
    p.add_argument("--trials", type=int, default=trials, help=f"number of trials (default {trials})")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (default 0); trial i depends on (seed, i) only")
    p.add_argument("--out", default=None, help="JSON-lines file, one line per finished trial")
    p.add_argument("--resume", action="store_true", help="continue --out without repeating its trials")
    p.add_argument("--chunk-size", type=int, default=chunk,
                   help=f"trials trained together (default {chunk}); an interruption loses at most this many")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_json_flag(p)


def _register_prior_aware(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prior-aware",
        help="prior-aware attack (Hayes et al. 2023 Alg. 2/3, App. G) vs the ReRo bound",
        **help_kw(
            "Train --trials models with DP-SGD on D- + {z*}, with z* drawn from a prior of N dataset records, "
            "attack each training transcript with the prior-aware attack and report the success rate with a 95% "
            "Clopper-Pearson interval next to the bound gamma at kappa (Hayes et al. 2023, Thm 2). --out "
            "records one line per trial; --resume continues that file.",
            [("success", "fraction of trials in which the attack (--attack) picked the target"),
             ("ci_low", "lower end of its 95% Clopper-Pearson interval"),
             ("ci_high", "upper end of that interval"),
             ("empirical_success_lower", "one-sided lower confidence end of the success rate (at "
                                         "empirical_confidence), the basis of the two lower bounds below"),
             ("empirical_mu_lower", "what the attack proves: the mechanism is not mu-GDP for any mu below this "
                                    "(Phi^-1(success_lower) - Phi^-1(kappa); 0 = nothing proved)"),
             ("empirical_epsilon_lower", "the mechanism is not (eps, delta)-DP for any eps below this "
                                         "(log((success_lower - delta) / kappa)); compare with epsilon"),
             ("empirical_confidence", "confidence of those two statements (one-sided)"),
             *_COMMON_FIELDS[:5],
             ("attacks", "per attack run: metric, value, ci_low, ci_high"),
             ("attack", "the attack run (auto resolves to alg2 for full batches, else alg3)"),
             *_COMMON_FIELDS[5:7],
             ("mean_target_clipped_fraction", "mean fraction of steps whose target gradient was clipped"),
             *_COMMON_FIELDS[7:]]),
    )
    _common(p, trials=100, chunk=64)
    p.add_argument("--attack", default="auto",
                   help="alg2, alg3, loglik or alg2_nosub (no known-gradient subtraction, App. E); "
                   "default auto: alg2 if q = 1 else alg3")
    p.set_defaults(func=_prior_aware)


def _register_gradient(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gradient",
        help="gradient-based attack (Hayes et al. 2023 Eq. 1): MSE and App. D prior-matching success",
        **help_kw(
            "Train --trials models with DP-SGD, reconstruct the target z* by minimising Eq. (1) from uniform "
            "noise (label known, --restarts restarts) and report the reconstruction MSE and the probability that "
            "z* is the nearest to the reconstruction among N random dataset records (App. D), next to the bound "
            "at kappa = 1/N. --out records one line per trial; --resume continues that file.",
            [("mse", "mean reconstruction MSE over the trials"),
             ("mse_ci_low", "lower end of the 95% interval of mse"),
             ("mse_ci_high", "upper end of that interval"),
             ("success", "mean prior-matching success (App. D) at prior size --prior-size"),
             ("ci_low", "lower end of its 95% interval"),
             ("ci_high", "upper end of that interval"),
             *_COMMON_FIELDS[:5],
             ("attacks", "per summary (mse, prior_success_N): metric, value, ci_low, ci_high"),
             *_COMMON_FIELDS[5:]]),
    )
    _common(p, trials=10, chunk=8)
    p.add_argument("--iterations", type=int, default=200, help="Adam steps per restart (default 200)")
    p.add_argument("--restarts", type=int, default=2, help="random restarts (default 2)")
    p.add_argument("--attack-lr", type=float, default=0.05, help="Adam step size (default 0.05)")
    p.set_defaults(func=_gradient)


def _config(args: argparse.Namespace):
    """Validate the settings (cheap) before calibrating sigma (slower)."""
    import dataclasses

    from rerokit._validate import check_int, check_probability
    from rerokit.experiments.audit import AuditConfig

    from rerokit._files import check_data_path

    check_data_path(args.data_path)
    n_known = args.n_known
    n_data = None
    if args.dataset == "digits":
        from rerokit.data import load_dataset

        n_data = load_dataset("digits").n
    if n_known is None:
        n_known = 999 if n_data is None else max(0, min(999, n_data - check_int("prior_size", args.prior_size, minimum=2)))
    base = AuditConfig(
        noise_multiplier=0.0, dataset=args.dataset, data_path=args.data_path, prior_size=args.prior_size,
        n_known=n_known, steps=args.steps, sample_rate=args.sample_rate, clip=args.clip, lr=args.lr,
        model=args.model, hidden=tuple(args.hidden), prior_weights=tuple(args.prior_weights) if args.prior_weights else None,
    )
    if n_data is not None:
        from rerokit.experiments.audit import make_trial

        make_trial(n_data, base.prior_size, base.n_known, 0, base.prior_weights)
    check_int("trials", args.trials, minimum=1)
    check_int("seed", args.seed, minimum=0)
    check_int("chunk_size", args.chunk_size, minimum=1)
    if args.out is not None:
        from rerokit._files import check_output_file

        check_output_file("out", args.out)
    elif args.resume:
        raise ValueError("resume needs --out (the JSONL file of the run to continue)")
    check_audit_memory(base, args.trials, args.chunk_size, full=getattr(args, "attack", None) == "alg2_nosub")
    delta = check_probability("delta", args.delta, high_open=True)
    info: dict[str, Any] = {"delta": delta}
    if args.noise_multiplier is not None:
        from rerokit._validate import check_nonnegative

        sigma = check_nonnegative("noise_multiplier", args.noise_multiplier)
        info["epsilon"] = None
    else:
        if args.epsilon is None:
            raise ValueError("give --epsilon (> 0) or --noise-multiplier (>= 0)")
        from rerokit._validate import check_positive
        from rerokit.bounds.calibrate import noise_multiplier_for_epsilon

        eps = check_positive("epsilon", args.epsilon)
        sigma = noise_multiplier_for_epsilon(eps, delta, base.sample_rate, base.steps)
        info["epsilon"] = eps
    return dataclasses.replace(base, noise_multiplier=float(sigma)), info


def _prior_aware(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_choice
    from rerokit.experiments.audit import PRIOR_AWARE_ATTACKS, run_prior_aware_audit

    attack = check_choice("attack", args.attack, ("auto",) + PRIOR_AWARE_ATTACKS)
    if attack == "loglik" and args.noise_multiplier == 0:
        raise ValueError("attack loglik needs noise_multiplier > 0")
    cfg, info = _config(args)
    if attack == "auto":
        attack = "alg2" if cfg.sample_rate == 1.0 else "alg3"
    rep = run_prior_aware_audit(cfg, args.trials, args.seed, attacks=(attack,), out=args.out, resume=args.resume,
                                chunk_size=args.chunk_size, progress=not args.no_progress)
    d = rep.to_dict(primary=attack, delta=info["delta"])
    d.update(
        attack=attack,
        epsilon=info["epsilon"],
        delta=info["delta"],
        mean_target_clipped_fraction=sum(x["target_clipped_fraction"] for x in rep.records) / len(rep.records),
    )
    d["settings"] = d.pop("settings")  # settings last in the table
    if args.out:
        d["out"] = args.out
    return d


def _gradient(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_int, check_positive
    from rerokit.experiments.audit import run_gradient_audit

    check_int("iterations", args.iterations, minimum=1)
    check_int("restarts", args.restarts, minimum=1)
    check_positive("attack_lr", args.attack_lr)
    cfg, info = _config(args)
    rep = run_gradient_audit(cfg, args.trials, args.seed, iterations=args.iterations, restarts=args.restarts,
                             attack_lr=args.attack_lr, out=args.out, resume=args.resume,
                             chunk_size=args.chunk_size, progress=not args.no_progress)
    m = rep.results["mse"]
    d = {"mse": m.value, "mse_ci_low": m.interval[0], "mse_ci_high": m.interval[1]}
    d.update(rep.to_dict(primary=f"prior_success_{cfg.prior_size}"))
    d.update(epsilon=info["epsilon"], delta=info["delta"])
    d["settings"] = d.pop("settings")
    if args.out:
        d["out"] = args.out
    return d


# sample shape of each dataset an audit can use (the data need not be loaded for the estimate)
_SHAPES = {"digits": (1, 8, 8), "mnist": (1, 28, 28), "cifar10": (3, 32, 32)}


def check_audit_memory(cfg, trials: int, chunk_size: int, *, full: bool = False) -> None:
    """Refuse --trials / --chunk-size / --steps / --hidden whose DP-SGD transcripts (chunk x steps x
    parameters) or per-trial records do not fit in memory. ``cfg``: an AuditConfig (dataset, model,
    hidden, steps, n_known); ``full``: the noisy sums are recorded too (attack alg2_nosub)."""
    import math

    import torch

    from rerokit._resources import check_memory, dpsgd_trials_bytes, memory_limit, trial_records_bytes
    from rerokit.experiments.audit import build_model

    shape = _SHAPES.get(cfg.dataset, (1, 8, 8))
    with torch.device("meta"):  # count the parameters without allocating them
        P = build_model(cfg, shape, 10).num_params
    dim = math.prod(shape)
    n_train = cfg.n_known + 1
    chunk = min(int(chunk_size), int(trials))
    need = dpsgd_trials_bytes(chunk, cfg.steps, P, n_train, dim, full=full) + trial_records_bytes(trials)
    if need <= memory_limit():
        return
    one = dpsgd_trials_bytes(1, cfg.steps, P, n_train, dim, full=full)
    what = (f"{chunk} DP-SGD trials trained together x {cfg.steps} steps x {P} parameters "
            f"({cfg.model}, hidden {list(cfg.hidden)}) plus the records of {trials} trials")
    if trial_records_bytes(trials) > memory_limit() / 2:
        check_memory("--trials", need, what, hint="use fewer --trials")
    elif P > 10**7:
        check_memory("--hidden", need, what, hint="use a smaller model (--hidden)")
    elif chunk > 1 and one + trial_records_bytes(trials) <= memory_limit():
        check_memory("--chunk-size", need, what, hint="use a smaller --chunk-size (trials trained together)")
    else:
        check_memory("--steps", need, what, hint="use fewer --steps or a smaller model")
