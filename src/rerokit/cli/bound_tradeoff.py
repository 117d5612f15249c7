"""``rerokit bound tradeoff``: the certified trade-off curve of DP-SGD and the risks read off it
(Hayes et al. 2023 Thm 2 pair; Kulynych et al. 2025). Stdlib only at import; numpy in the handler."""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_command, add_json_flag, add_sampling_args, add_schedule_args
from rerokit.cli._common import sampling_from_args, sampling_summary
from rerokit.cli._common import check_schedule_memory


_DESCRIPTION = """
The trade-off curve beta(alpha) of a DP-SGD run: the smallest miss rate (1 - TPR) of any test that
tells "trained with the target" from "trained without it" at false-positive rate alpha (Hayes et
al. 2023, Thm 2). Every membership, attribute and reconstruction risk is read off this one curve
(Kulynych et al. 2025): the TPR of any membership-inference attack at FPR alpha is at most
1 - beta(alpha); its advantage TPR - FPR is at most max(1 - alpha - beta(alpha)); attribute
inference with k equally likely values and reconstruction with baseline kappa succeed at most
with 1 - beta(1/k) and 1 - beta(kappa). Every number is a certified bracket [lower, upper].

--fpr F [F ...] gives the bracket at each false-positive rate; --grid N gives N points
(log-spaced from --alpha-min to 0.1, then linear to 1) for plotting. --adjacency add-remove gives
the symmetrised curve of add-or-remove adjacency (Dong, Roth and Su 2022, Def. F.1; what riskcal
reports); remove (default) is the pair of the reconstruction bound.

--sampler shuffle / full-batch: the curve certified without amplification by subsampling (each
epoch, or step, one Gaussian release of the target; see 'rerokit bound dpsgd --help');
--examples-per-user K: the curve of a user's K examples together.
"""

_FIELDS = [
    ("points", "with --fpr: per false-positive rate, the bracket of beta (miss rate) and of the TPR, "
               "and the bracket width (error)"),
    ("curve", "with --grid: alpha and the lower/upper ends of beta and of the TPR at each point"),
    ("max_error", "largest bracket width of the TPR over the points"),
    ("advantage", "upper bound on TPR - FPR of any membership test (total variation)"),
    ("advantage_interval", "certified bracket of the advantage"),
    ("bayes_accuracy", "upper bound on the accuracy of the best membership guess when the target is a member "
                       "with probability --prior-membership"),
    ("bayes_accuracy_interval", "certified bracket of the Bayes accuracy"),
    ("prior_membership", "the prior probability of membership used"),
    ("method", "exact (certified privacy-loss distribution), closed-form (q = 1) or envelope (noise "
               "multiplier outside [1e-4, 1e8])"),
    ("value_discretization_interval", "grid step of the privacy-loss distribution (null for closed forms)"),
    ("settings", "the inputs as used (with the sampler, examples_per_user and the neighbouring relation)"),
    ("poisson_assumption", "non-Poisson samplers: the Poisson curve's advantage (kind assumption: not certified for "
                           "this run)"),
    ("poisson_assumption.advantage", "the advantage under Poisson sampling"),
    ("poisson_assumption.kind", "assumption"),
    ("poisson_assumption.note", "why it is not certified for this run"),
]


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_choice, check_int, check_probability

    adjacency = check_choice("adjacency", args.adjacency, ("remove", "add-remove")).replace("-", "_")
    if args.fpr is not None:
        fprs = [check_probability("fpr", f, low_open=False) for f in args.fpr]
        if args.alpha_min != 1e-6:
            raise ValueError("--alpha-min is the smallest level of a --grid; with --fpr the levels are given")
    else:
        check_int("grid", args.grid, minimum=4, maximum=100_000)
        check_probability("alpha_min", args.alpha_min)
    check_probability("prior_membership", args.prior_membership, high_open=True)

    from rerokit.bounds.certify import certified_tradeoff
    from rerokit.bounds.schedule import Schedule
    from rerokit.bounds.tradeoff import tradeoff_grid

    check_schedule_memory(args)  # before the PLD grid is built
    sched = Schedule.from_settings(args.noise_multiplier, args.sample_rate, args.steps, **sampling_from_args(args))
    curve, _ = certified_tradeoff(sched, adjacency=adjacency)
    from rerokit.report.results import TradeoffOutput, TradeoffPoint, TradeoffTable

    points, table = None, None
    if args.fpr is not None:
        tpr = curve.tpr_at_fpr(fprs)
        beta = curve.beta(fprs)
        points = tuple(TradeoffPoint(a, (float(bl), float(bh)), (float(tl), float(th)), float(th - tl))
                       for a, bl, bh, tl, th in zip(fprs, beta.lower, beta.upper, tpr.lower, tpr.upper))
        max_error = float(max(tpr.error)) if fprs else 0.0
    else:
        alpha = tradeoff_grid(args.grid, args.alpha_min)
        tpr = curve.tpr_at_fpr(alpha)
        beta = curve.beta(alpha)
        table = TradeoffTable(alpha=tuple(alpha.tolist()), beta_lower=tuple(beta.lower.tolist()),
                              beta_upper=tuple(beta.upper.tolist()), tpr_lower=tuple(tpr.lower.tolist()),
                              tpr_upper=tuple(tpr.upper.tolist()))
        max_error = float(tpr.error.max())
    adv = curve.advantage()
    acc = curve.bayes_accuracy(args.prior_membership)
    pa = None
    if sched.sampler != "poisson" and not sched.full_batch:  # the Poisson curve's advantage, flagged as an assumption the run does not meet
        from rerokit.bounds.certify import POISSON_ASSUMPTION_NOTE

        pc, _ = certified_tradeoff(sched.as_poisson(), adjacency=adjacency)
        pa = {"advantage": pc.advantage().value, "kind": "assumption",
              "note": POISSON_ASSUMPTION_NOTE.format(sampler=sched.sampler)}
    return TradeoffOutput(
        noise_multiplier=args.noise_multiplier, sample_rate=args.sample_rate, steps=args.steps, adjacency=adjacency,
        sampling=sched.sampling_dict(),
        method=curve.method, value_discretization_interval=curve.value_discretization_interval, points=points,
        curve=table, max_error=max_error, advantage=adv.value, advantage_interval=tuple(adv.interval),
        bayes_accuracy=acc.value, bayes_accuracy_interval=tuple(acc.interval), prior_membership=args.prior_membership,
        poisson_assumption=pa).to_dict()


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "tradeoff", handle, description=_DESCRIPTION, fields=_FIELDS,
                    summary=sampling_summary("bound tradeoff"),
                    help="certified trade-off curve of DP-SGD: TPR at FPR, advantage, Bayes accuracy")
    add_schedule_args(p)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--fpr", type=float, nargs="+", default=None, help="false-positive rate(s) alpha in [0, 1]")
    g.add_argument("--grid", type=int, default=None, help="number N >= 4 of curve points for plotting")
    p.add_argument("--alpha-min", type=float, default=1e-6, help="smallest alpha of --grid, in (0, 0.1)")
    p.add_argument("--adjacency", default="remove", help="remove (default) or add-remove (symmetrised)")
    p.add_argument("--prior-membership", type=float, default=0.5,
                   help="prior probability of membership for the Bayes accuracy, in (0, 1)")
    add_sampling_args(p)
    add_json_flag(p)
