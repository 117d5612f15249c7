"""``rerokit calibrate dpsgd``: DP-SGD settings for a target reconstruction risk.

With ``--steps T``: the smallest noise multiplier sigma whose certified ReRo bound (Hayes et al.
2023, Thm 2 / Cor. 3; ``rerokit bound dpsgd --method exact``) is <= ``--target-gamma``. With
``--noise-multiplier S`` instead: the largest number of steps. Also prints the (epsilon, delta)
of the result from dp-accounting's PLD accountant (``--delta``, default 1e-5).

Only the standard library at module level; the library is imported inside the handler.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import NOISE_MULTIPLIER_HELP, STEPS_HELP, add_command, add_delta_arg, add_json_flag
from rerokit.cli._common import add_noise_multiplier_arg, add_prior_args, add_sample_rate_arg, add_steps_arg
from rerokit.cli._common import add_sampling_args, baseline_from_args, prior_echo, sampling_from_args
from rerokit.cli._common import sampling_summary


DESCRIPTION = """
DP-SGD settings for a target reconstruction risk. With --steps T: the smallest noise multiplier
sigma whose certified ReRo bound gamma (the one of 'rerokit bound dpsgd --method exact') is at
most --target-gamma. With --noise-multiplier sigma instead: the largest number of steps. Also
reports the (epsilon, delta)-DP of the result at --delta (PLD accountant).

Calibrates under the run's --sampler: with shuffled fixed-size batches (--sampler shuffle,
--sample-rate = 1/(batches per epoch)) no amplification by subsampling is certified, so sigma
meets Phi(Phi^-1(kappa) + K sqrt(E)/sigma) <= --target-gamma for E = ceil(T q) epochs and K =
--examples-per-user.
"""

FIELDS = [
    ("noise_multiplier", "the calibrated noise multiplier sigma (with --steps)"),
    ("steps", "the calibrated largest number of steps T (with --noise-multiplier)"),
    ("note", "remarks: steps capped at --max-steps; why epsilon is inf, when it is"),
    ("target_gamma", "the --target-gamma asked for"),
    ("gamma", "the certified bound gamma at the calibrated setting (<= target_gamma)"),
    ("error", "width of gamma's certified bracket"),
    ("kappa", "baseline success of the prior"),
    ("log10_kappa", "log10 of kappa"),
    ("epsilon", "epsilon of (epsilon, delta)-DP at the calibrated setting; inf when none is certified"),
    ("delta", "the --delta of epsilon"),
    ("settings", "the DP-SGD setting found: noise_multiplier, sample_rate, steps, the kappa option, the sampler "
                 "and examples_per_user calibrated under"),
    ("search.bracket", "the last bracket of the search (sigma or steps)"),
    ("poisson_assumption", "non-Poisson samplers: what a Poisson calibration would give (kind assumption: not "
                           "certified for this run)"),
    ("poisson_assumption.noise_multiplier", "the Poisson calibration's sigma (with --steps)"),
    ("poisson_assumption.steps", "the Poisson calibration's steps (with --noise-multiplier)"),
    ("poisson_assumption.error", "why the Poisson calibration has no answer, when it has none"),
    ("poisson_assumption.kind", "assumption"),
    ("poisson_assumption.note", "why it is not certified for this run"),
    ("search.evaluations", "bounds evaluated during the search"),
]


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.calibrate import calibrate_noise_multiplier, calibrate_steps
    from rerokit.bounds.schedule import Schedule

    if (args.steps is None) == (args.noise_multiplier is None):
        raise ValueError(
            "give exactly one of --steps (integer >= 1; calibrates the noise multiplier) or "
            "--noise-multiplier (number > 0; calibrates the steps)"
        )
    base = baseline_from_args(args)
    lk, echo = base.log_kappa, prior_echo(args)
    if lk >= 0.0:
        # kappa = 1 leaves no target gamma in (kappa, 1); name the option that set it
        opt = "prior_size" if "prior_size" in echo else ("log10_kappa" if "log10_kappa" in echo else "kappa")
        rng = {"prior_size": "an integer >= 2", "log10_kappa": "a finite number < 0", "kappa": "a number in (0, 1)"}[opt]
        raise ValueError(f"{opt} must be {rng} to calibrate (target_gamma must lie in (kappa, 1)), "
                         f"got {getattr(args, opt)!r}")
    sampling = sampling_from_args(args)
    from rerokit.bounds.schedule import Sampling

    kw = {"prior": base.prior, "sampler": Sampling(sampling["sampler"] or "poisson", sampling["examples_per_user"])}
    if args.steps is not None and args.max_steps != 10_000_000:
        raise ValueError("--max-steps limits the steps calibrated for a --noise-multiplier; with --steps the noise "
                         "multiplier is calibrated and --max-steps has no effect")
    note = None
    if args.steps is not None:
        r = calibrate_noise_multiplier(args.target_gamma, args.sample_rate, args.steps, delta=args.delta, **kw)
    else:
        r = calibrate_steps(
            args.target_gamma, args.noise_multiplier, args.sample_rate, delta=args.delta,
            max_steps=args.max_steps, **kw,
        )
        if r.capped:
            note = f"target holds up to --max-steps={args.max_steps}; steps capped there"
    if not math.isfinite(r.epsilon):
        from rerokit.cli.bound_dpsgd import EPSILON_INF_NOTE

        note = (note + "; " if note is not None else "") + EPSILON_INF_NOTE.format(delta=r.delta)
    pa = None
    if kw["sampler"].sampler != "poisson" and r.sample_rate < 1.0:  # the Poisson calibration, flagged as an assumption the run does not meet
        from rerokit.bounds.certify import POISSON_ASSUMPTION_NOTE

        pkw = dict(kw, sampler=Sampling("poisson", sampling["examples_per_user"]))
        try:
            if args.steps is not None:
                p = {"noise_multiplier": calibrate_noise_multiplier(args.target_gamma, args.sample_rate, args.steps,
                                                                    delta=None, **pkw).noise_multiplier}
            else:
                p = {"steps": calibrate_steps(args.target_gamma, args.noise_multiplier, args.sample_rate, delta=None,
                                              max_steps=args.max_steps, **pkw).steps}
        except ValueError as exc:
            p = {"error": str(exc)}
        pa = {**p, "kind": "assumption", "note": POISSON_ASSUMPTION_NOTE.format(sampler=kw["sampler"].sampler)}
    from rerokit.report.results import CalibrateOutput

    sched = Schedule.from_settings(r.noise_multiplier, r.sample_rate, r.steps, sampler=sampling["sampler"],
                                   examples_per_user=r.examples_per_user)
    return CalibrateOutput(calibration=r, solved="noise_multiplier" if args.steps is not None else "steps", note=note,
                           prior_option=echo, sampling=sched.sampling_dict(), poisson_assumption=pa).to_dict()


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "dpsgd", handle, description=DESCRIPTION, fields=FIELDS,
                    summary=sampling_summary("calibrate dpsgd"),
                    help="noise multiplier (or steps) of DP-SGD for a target ReRo bound gamma")
    p.add_argument("--target-gamma", type=float, required=True, help="target bound gamma in (kappa, 1)")
    add_sample_rate_arg(p, required=True)
    add_steps_arg(p, f"{STEPS_HELP} (calibrates sigma)")
    add_noise_multiplier_arg(p, f"{NOISE_MULTIPLIER_HELP} (calibrates T)")
    add_prior_args(p)
    add_delta_arg(p)
    p.add_argument("--max-steps", type=int, default=10_000_000, help="search limit when calibrating steps")
    add_sampling_args(p)
    add_json_flag(p)
