"""``rerokit audit ...``: attack DP-SGD training and compare the success with the ReRo bound.

Commands: ``prior-aware`` (Hayes et al. 2023 Alg. 2 / Alg. 3 / App. G) and ``gradient``
(Eq. 1 gradient-based attack with App. D prior matching). The handlers only parse: one call of
:func:`rerokit.experiments.audit.run_audit` (defaults, checks, calibration, the run) and its
``summary()`` is the output. Heavy imports live in the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_clip_arg, add_command, add_data_args, add_delta_arg
from rerokit.cli._common import add_executor_args, add_json_flag, add_noise_multiplier_arg, add_resume_args
from rerokit.cli._common import add_sample_rate_arg, add_steps_arg

_COMMON_FIELDS = [
    ("gamma", "the ReRo bound of DP-SGD at kappa (Hayes et al. 2023, Thm 2): no attack succeeds with a higher "
              "probability; 1 without noise"),
    ("kappa", "baseline success of the prior (1/N, or the largest --prior-weights)"),
    ("noise_multiplier", "sigma used (calibrated for --epsilon, or given)"),
    ("trials", "trials summarised (0..trials-1)"),
    ("seed", "the --seed; trial i depends on (seed, i) only"),
    ("epsilon", "the --epsilon sigma was calibrated for (null with --noise-multiplier)"),
    ("delta", "the --delta of that calibration"),
    ("settings", "the audit settings as used (dataset, model, prior, steps, sample rate, clip, ..., chunk_size: "
                 "the block size, device)"),
    ("out", "the --out file"),
]


PRIOR_AWARE_DESCRIPTION = """
Train --trials models with DP-SGD on D- + {z*}, with z* drawn from a prior of N dataset records,
attack each training transcript with the prior-aware attack and report the success rate with a 95%
Clopper-Pearson interval next to the bound gamma at kappa (Hayes et al. 2023, Thm 2). --out records
one line per trial; --resume continues that file. --executor ray runs the blocks of trials on Ray
workers with the same results.
"""

PRIOR_AWARE_FIELDS = [
    ("success", "fraction of trials in which the attack (--attack) picked the target"),
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
    *_COMMON_FIELDS[7:],
]

GRADIENT_DESCRIPTION = """
Train --trials models with DP-SGD, reconstruct the target z* by minimising Eq. (1) from uniform
noise (label known, --restarts restarts) and report the reconstruction MSE and the probability that
z* is the nearest to the reconstruction among N random dataset records (App. D), next to the bound
at kappa = 1/N. --out records one line per trial; --resume continues that file.
"""

GRADIENT_FIELDS = [
    ("mse", "mean reconstruction MSE over the trials"),
    ("mse_ci_low", "lower end of the 95% interval of mse"),
    ("mse_ci_high", "upper end of that interval"),
    ("success", "mean prior-matching success (App. D) at prior size --prior-size"),
    ("ci_low", "lower end of its 95% interval"),
    ("ci_high", "upper end of that interval"),
    *_COMMON_FIELDS[:5],
    ("attacks", "per summary (mse, prior_success_N): metric, value, ci_low, ci_high"),
    *_COMMON_FIELDS[5:],
]


def _common(p: argparse.ArgumentParser, *, trials: int, chunk: int) -> None:
    add_data_args(p, "digits (default), mnist or cifar10 (these need --data-path)")
    p.add_argument("--prior-size", type=int, default=10, help="prior size N >= 2 (default 10; kappa = 1/N)")
    p.add_argument("--prior-weights", type=float, nargs="+", default=None,
                   help="N prior probabilities summing to 1 (default uniform; kappa = max weight)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--epsilon", type=float, default=None,
                   help="target epsilon > 0: sigma is calibrated for (epsilon, delta) with dp-accounting (PLD)")
    add_noise_multiplier_arg(g, "sigma >= 0 given directly instead of --epsilon", default=None)
    add_delta_arg(p, "for the calibration")
    add_steps_arg(p, "number of DP-SGD steps T >= 1 (default 100)", default=100)
    add_sample_rate_arg(p, "Poisson sampling rate q in (0, 1] (default 1: full batch)", default=1.0)
    add_clip_arg(p, "clipping norm C > 0 (default 0.1)", default=0.1)
    p.add_argument("--lr", type=float, default=10.0, help="learning rate on the averaged noisy gradient (default 10: test accuracy ~0.8 at eps 1, ~0.9 at eps 16 on digits)")
    p.add_argument("--model", default=None,
                   help="mlp (default; Flatten-Linear-ELU-Linear) or cnn (two convolutions, global pooling and a "
                   "linear layer; any CxHxW input: digits 1x8x8, MNIST 1x28x28, CIFAR-10 3x32x32)")
    p.add_argument("--model-factory", default=None, metavar="MODULE:FUNCTION",
                   help="audit your own torch.nn.Module: package.module:function is called as "
                   "function(sample_shape, num_classes) and must return a module without buffers (no BatchNorm). "
                   "rerokit IMPORTS that module (it runs your code, from the current folder or PYTHONPATH); "
                   "per-sample gradients by vmap(grad); recorded as settings.model_factory; not with --model")
    p.add_argument("--hidden", type=int, nargs="+", default=[10], help="MLP hidden widths (default 10); cnn: width")
    p.add_argument("--n-known", type=int, default=None,
                   help="|D-|, the known training points (default min(999, dataset size - N))")
    p.add_argument("--trials", type=int, default=trials, help=f"number of trials (default {trials})")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (default 0); trial i depends on (seed, i) only")
    p.add_argument("--chunk-size", type=int, default=chunk,
                   help=f"block size B (default {chunk}): block b = trials [bB, (b+1)B), trained together and "
                   "recorded in the settings; an interruption loses at most the blocks in flight")
    add_resume_args(p, out="JSON-lines file, one line per finished trial",
                    resume="continue --out without repeating its trials")
    add_executor_args(p, device=True, what="blocks of trials")
    add_json_flag(p)


def _run(args: argparse.Namespace, kind: str, **kw: Any) -> dict[str, Any]:
    """One library call (:func:`rerokit.experiments.audit.run_audit`), rendered by its summary."""
    from rerokit._files import check_data_args

    if args.model is not None and args.model_factory is not None:
        raise ValueError("give --model or --model-factory, not both")
    if args.model_factory is not None and args.hidden != [10]:
        raise ValueError("--hidden sets the widths of --model mlp/cnn; a --model-factory builds its own model: "
                         "give one of them")
    check_data_args(args.dataset, args.data_path)  # before torch is imported (a second or more)
    from rerokit.executors import RunOptions
    from rerokit.experiments.audit import run_audit

    options = RunOptions(out=args.out, resume=args.resume, overwrite=args.overwrite, chunk_size=args.chunk_size,
                         progress=not args.no_progress, executor=args.executor, workers=args.workers,
                         address=args.address, device=args.device)
    rep = run_audit(
        kind, epsilon=args.epsilon, noise_multiplier=args.noise_multiplier, delta=args.delta, trials=args.trials,
        seed=args.seed, options=options, dataset=args.dataset, data_path=args.data_path, prior_size=args.prior_size, n_known=args.n_known,
        prior_weights=tuple(args.prior_weights) if args.prior_weights else None, steps=args.steps,
        sample_rate=args.sample_rate, clip=args.clip, lr=args.lr, hidden=tuple(args.hidden),
        **({"model_fn": args.model_factory} if args.model_factory else {"model": args.model or "mlp"}), **kw,
    )
    return rep.summary().to_dict()


def _prior_aware(args: argparse.Namespace) -> dict[str, Any]:
    return _run(args, "prior-aware", attack=args.attack)


def _gradient(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.experiments.audit import GradientAttack

    from rerokit._validate import check_loop_count

    check_loop_count("iterations", args.iterations)
    check_loop_count("restarts", args.restarts)
    return _run(args, "gradient", attack=GradientAttack(args.iterations, args.restarts, args.attack_lr))


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "prior-aware", _prior_aware, description=PRIOR_AWARE_DESCRIPTION, fields=PRIOR_AWARE_FIELDS,
                    help="prior-aware attack (Hayes et al. 2023 Alg. 2/3, App. G) vs the ReRo bound")
    _common(p, trials=100, chunk=64)
    p.add_argument("--attack", default="auto",
                   help="alg2, alg3, loglik or alg2_nosub (no known-gradient subtraction, App. E); "
                   "default auto: alg2 if q = 1 else alg3")

    p = add_command(sub, "gradient", _gradient, description=GRADIENT_DESCRIPTION, fields=GRADIENT_FIELDS,
                    help="gradient-based attack (Hayes et al. 2023 Eq. 1): MSE and App. D prior-matching success")
    _common(p, trials=10, chunk=8)
    p.add_argument("--iterations", type=int, default=200, help="Adam steps per restart (default 200)")
    p.add_argument("--restarts", type=int, default=2, help="random restarts (default 2)")
    p.add_argument("--attack-lr", type=float, default=0.05, help="Adam step size (default 0.05)")
