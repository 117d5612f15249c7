"""``rerokit bound dpsgd``: the DP-SGD ReRo bound of Hayes et al. 2023 (Thm 2 / Cor. 3).

gamma = sup{mu(E) : nu(E) <= kappa} for nu = N(0, sigma^2)^T and mu the product of T mixtures
(1-q) N(0, sigma^2) + q N(1, sigma^2). ``--method exact`` (default) is a certified upper bound
from the privacy-loss distribution, ``error`` being the width of its certified bracket;
``closed-form`` is exact for q = 1; ``mc`` is Hayes et al.'s Algorithm 1 (an estimate; error =
half-width of its 95% interval). ``comparisons`` holds the RDP-based bound (Balle et al. 2022
Thm 2) and the (epsilon, delta) of the same schedule; ``membership`` the membership-inference
risks from the same composed PLD (advantage, TPR at FPR 0.001/0.01/0.1, Bayes accuracy at prior
0.5; certified, upper ends as values; see ``rerokit bound tradeoff``).

Only the standard library is imported at module level; numpy inside the handler (scipy,
dp-accounting and torch are not imported on this path for ordinary settings).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import add_command, add_delta_arg, add_json_flag, add_prior_args, add_sampling_args
from rerokit.cli._common import add_schedule_args, baseline_from_args, prior_echo, sampling_from_args
from rerokit.cli._common import sampling_summary
from rerokit.cli._common import check_schedule_memory

_LN10 = math.log(10.0)

EPSILON_INF_NOTE = (
    "epsilon is inf: no finite epsilon is certified at delta = {delta:.3g}, which is at or below the privacy-loss "
    "mass the pessimistic PLD accountant leaves at infinity (discretisation and tail truncation, typically about "
    "1e-13 or more); use a larger --delta for a finite epsilon (gamma does not depend on --delta)"
)


DESCRIPTION = """
Upper bound gamma on the probability that any reconstruction attack recovers a training record of
DP-SGD (Hayes et al. 2023, Thm 2 / Cor. 3), for a prior whose baseline success (the best guess
without the model) is kappa. DP-SGD here: T steps, Poisson sampling rate q, noise multiplier sigma.

  gamma = sup{ mu(E) : nu(E) <= kappa },  nu = N(0, sigma^2)^T,
  mu = product of T mixtures (1 - q) N(0, sigma^2) + q N(1, sigma^2)

--method exact (default): a certified upper bound from the privacy-loss distribution (for noise
multipliers outside [1e-4, 1e8], where that is not computed in double precision, a certified
closed-form envelope: method envelope). closed-form: exact for q = 1 (Gaussian DP). mc: Hayes et
al.'s Algorithm 1, a Monte Carlo estimate with a 95% interval.

--sampler shuffle (fixed-size shuffled batches, each example at most once per epoch, as most
PyTorch / JAX / Keras loaders and Opacus' poisson_sampling=False) is certified without
amplification by subsampling: with the batch assignment given to the attacker, each of the
E = ceil(T q) epochs releases the target once through a Gaussian of noise sigma (zero-out
neighbours, sensitivity C), so gamma = Phi(Phi^-1(kappa) + sqrt(E)/sigma); the Poisson number
is shown beside it as an assumption the run did not meet. --examples-per-user K protects a
user's K examples together (shuffle: mu = K sqrt(E)/sigma; Poisson: each example sampled
independently).
"""

FIELDS = [
    ("gamma", "bound on the success probability of any attack (an estimate for --method mc)"),
    ("kappa", "baseline success of the prior (1/N for --prior-size N)"),
    ("advantage", "(gamma - kappa) / (1 - kappa): how much of the room above the baseline the bound allows "
                  "(0 when kappa = 1)"),
    ("method", "exact, closed-form, mc or envelope (see above)"),
    ("direction", "upper: gamma is a certified upper bound; estimate: a Monte Carlo estimate"),
    ("error", "exact/envelope: width of the certified bracket [lower, gamma]; mc: half-width of the 95% "
              "interval; closed-form: 0"),
    ("interval", "the bracket [lower, gamma] (exact, envelope) or the 95% interval (mc)"),
    ("log10_gamma", "log10 of gamma (exact even where gamma underflows to 0)"),
    ("log10_interval", "where gamma is below 1e-300 (e.g. pixel-tolerance priors): the certified bracket "
                       "[lower, gamma] in log10 (the float interval underflows there)"),
    ("log10_kappa", "log10 of kappa"),
    ("epsilon", "without a prior: epsilon of (epsilon, delta)-DP at --delta (certified PLD accountant)"),
    ("delta", "without a prior: the --delta"),
    ("note", "without a prior: why gamma is not reported"),
    ("epsilon_note", "without a prior: why epsilon is inf, when it is"),
    ("settings", "the inputs as used: noise_multiplier, sample_rate, steps, the kappa option given, sampler "
                 "(and whether declared or assumed), examples_per_user, neighbouring_relation"),
    ("certification.amplified", "true when amplification by Poisson subsampling is used"),
    ("certification.releases", "Gaussian releases of the target counted (epochs for shuffle, steps otherwise)"),
    ("certification.group_size", "examples per user composed by the engine under Poisson sampling"),
    ("poisson_assumption", "non-Poisson samplers: the gamma and epsilon a Poisson accountant would report "
                           "(kind assumption: not certified for this run)"),
    ("poisson_assumption.gamma", "gamma under Poisson sampling (null without a prior)"),
    ("poisson_assumption.epsilon", "epsilon at delta under Poisson sampling"),
    ("poisson_assumption.delta", "its delta"),
    ("poisson_assumption.kind", "assumption"),
    ("poisson_assumption.note", "why it is not certified for this run"),
    ("details.lower", "certified lower end of the bracket (exact, envelope)"),
    ("details.value_discretization_interval", "grid step of the privacy-loss distribution (exact)"),
    ("details.threshold_epsilon", "the epsilon attaining gamma = min over epsilon of e^epsilon kappa + "
                                  "delta(epsilon) (exact)"),
    ("details.floored", "true when the accountant's round-off floor dominates at this kappa (exact; see "
                        "details.note)"),
    ("details.note", "why the value is what it is (floored accounting, envelope)"),
    ("details.seed", "seed of the Monte Carlo sampler (mc)"),
    ("details.mc_samples", "Monte Carlo samples (mc)"),
    ("details.standard_error", "standard error of the estimate (mc)"),
    ("details.mu_gdp", "mu of the equivalent mu-Gaussian-DP guarantee (closed-form)"),
    ("comparisons.rdp_gamma", "the RDP-based bound of Balle et al. 2022, Thm 2, for the same schedule "
                              "(null under envelope)"),
    ("comparisons.rdp_order", "RDP order at which rdp_gamma is attained"),
    ("comparisons.epsilon", "epsilon of (epsilon, delta)-DP of the schedule at --delta (PLD accountant); inf "
                            "when none is certified (see comparisons.note)"),
    ("comparisons.delta", "the --delta of that comparison"),
    ("comparisons.note", "why comparisons.epsilon is inf, when it is"),
    ("membership.advantage", "upper bound on TPR - FPR of any membership-inference test (the same trade-off "
                             "curve as gamma; Kulynych et al. 2025)"),
    ("membership.advantage_interval", "certified bracket of the membership advantage"),
    ("membership.tpr_at_fpr", "list of {fpr, tpr, interval}: upper bound on the TPR of any membership test at "
                              "false-positive rate fpr (0.001, 0.01, 0.1) and its certified bracket"),
    ("membership.bayes_accuracy", "upper bound on the accuracy of the best membership guess when the target is a "
                                  "member with probability membership.prior_membership"),
    ("membership.bayes_accuracy_interval", "certified bracket of the Bayes accuracy"),
    ("membership.prior_membership", "prior probability of membership used for the Bayes accuracy (0.5)"),
    ("membership.adjacency", "remove: H1 = the target was trained on (the pair of gamma)"),
    ("membership.method", "how the curve was computed (exact, closed-form, envelope)"),
]


def _schedule(args: argparse.Namespace):
    from rerokit.bounds.schedule import Schedule

    return Schedule.from_settings(args.noise_multiplier, args.sample_rate, args.steps, **sampling_from_args(args))


def _certification(sched: Any, c: Any) -> dict[str, Any]:
    from rerokit.report.results import DpsgdOutput

    return {k: getattr(c, k) for k in DpsgdOutput.CERTIFICATION}


def _poisson(sched: Any, log_kappa: float | None, delta: float) -> dict[str, Any] | None:
    """The Poisson accountant's numbers for a run that did not sample that way (kind "assumption")."""
    if sched.sampler == "poisson" or sched.full_batch:  # q = 1: the Poisson view is the same mechanism
        return None
    from rerokit.bounds.certify import certified_rero, poisson_assumption
    from rerokit.bounds.dpsgd_details import DpsgdDetails
    from rerokit.bounds.options import Comparisons

    b, _ = certified_rero(sched.as_poisson(), log_kappa=0.0 if log_kappa is None else log_kappa,
                          comparisons=Comparisons(delta=delta))
    eps = DpsgdDetails.of(b).comparisons.epsilon
    return poisson_assumption(sched, None if log_kappa is None else b.value, eps, delta).to_dict()


def handle(args: argparse.Namespace) -> dict[str, Any]:
    if args.method != "mc" and (args.mc_samples != 1_000_000 or args.seed is not None):
        raise ValueError("--mc-samples and --seed set the Monte Carlo estimate: they need --method mc")
    base = baseline_from_args(args, required=False)
    if args.method != "mc":  # the Monte Carlo estimate holds no PLD grid
        check_schedule_memory(args)
    if base is None:
        return _without_prior(args)
    from rerokit.bounds.certify import certified_rero
    from rerokit.bounds.conversions import advantage

    lk = base.log_kappa
    sched = _schedule(args)
    from rerokit._validate import check_int
    from rerokit.bounds.dpsgd_details import DpsgdDetails
    from rerokit.bounds.options import Comparisons, MonteCarlo

    # validated whatever the method (a typo fails before any work), named as the options
    mc = MonteCarlo(samples=check_int("mc_samples", args.mc_samples, minimum=1, maximum=10**9),
                    seed=None if args.seed is None else check_int("seed", args.seed, minimum=0))
    method = mc if args.method == "mc" else args.method
    b, cert = certified_rero(sched, log_kappa=lk, method=method,
                             comparisons=Comparisons(delta=args.delta, membership=True))
    kappa = base.kappa
    x = DpsgdDetails.of(b)
    log_gamma = x.log_gamma if x.log_gamma is not None else (math.log(b.value) if b.value > 0 else -math.inf)
    log_lower = b.extras.get("log_gamma_lower") if b.method == "exact" else None
    # below double range the float bracket is [0, 5e-324]: its log ends carry the information
    log10_interval = (None if log_lower is None or not log_gamma < math.log(1e-300)
                      else (float(log_lower) / _LN10, log_gamma / _LN10))
    from rerokit.report.results import DpsgdComparisons, DpsgdOutput

    if b.method == "exact":
        details = {"lower": x.lower, "value_discretization_interval": x.value_discretization_interval,
                   "threshold_epsilon": x.threshold_epsilon, "floored": x.floored}
        if x.note is not None:
            details["note"] = x.note
    elif b.method == "mc":
        details = {"seed": x.monte_carlo.seed, "mc_samples": x.monte_carlo.samples,
                   "standard_error": x.monte_carlo.standard_error}
    elif b.method == "closed-form":
        details = {"mu_gdp": x.mu_gdp}
    else:  # envelope
        details = {"lower": x.lower, "note": x.note}
    return DpsgdOutput(
        gamma=b.value, kappa=kappa, advantage=advantage(b.value, kappa), method=b.method, direction=b.direction,
        error=b.error, interval=None if b.interval is None else tuple(b.interval), log10_gamma=log_gamma / _LN10,
        log10_kappa=lk / _LN10, log10_interval=log10_interval, noise_multiplier=args.noise_multiplier, sample_rate=args.sample_rate,
        steps=args.steps, prior_option=prior_echo(args), sampling=sched.sampling_dict(),
        certification=_certification(sched, cert), details=details,
        comparisons=DpsgdComparisons(**_comparisons(x)),
        # membership inference read off the same composed PLD (certified brackets; upper ends as values)
        membership=x.membership, poisson_assumption=_poisson(sched, lk, args.delta),
    ).to_dict()


def _comparisons(x: Any) -> dict[str, Any]:
    """The JSON ``comparisons`` object of a bound's :class:`~rerokit.bounds.dpsgd_details.DpsgdDetails`."""
    v = x.comparisons
    if v is None:  # envelope: sigma outside the range where accounting is computed in double precision
        return {"rdp_gamma": None, "rdp_order": None, "epsilon": None, "delta": None}
    c = {"rdp_gamma": v.rdp_gamma, "rdp_order": v.rdp_order, "epsilon": v.epsilon, "delta": v.delta}
    if not math.isfinite(v.epsilon):
        c["note"] = EPSILON_INF_NOTE.format(delta=v.delta)
    return c


def _without_prior(args: argparse.Namespace) -> dict[str, Any]:
    """No prior given: the run's epsilon and membership risks (gamma needs a prior's kappa)."""
    from rerokit.bounds.certify import certified_rero
    from rerokit.bounds.dpsgd_details import DpsgdDetails
    from rerokit.bounds.options import Comparisons

    # kappa = 1 costs nothing extra: the same composed PLD gives epsilon and the membership curve
    sched = _schedule(args)
    b, cert = certified_rero(sched, kappa=1.0, comparisons=Comparisons(delta=args.delta, membership=True))
    x = DpsgdDetails.of(b)
    c = _comparisons(x)
    from rerokit.report.results import DpsgdNoPriorOutput

    return DpsgdNoPriorOutput(
        epsilon=c["epsilon"], delta=args.delta, membership=x.membership,
        note="no prior given: gamma needs the adversary's prior (--prior-size, --kappa or --log10-kappa)",
        noise_multiplier=args.noise_multiplier, sample_rate=args.sample_rate, steps=args.steps,
        sampling=sched.sampling_dict(), certification=_certification(sched, cert),
        poisson_assumption=_poisson(sched, None, args.delta), epsilon_note=c.get("note"),
    ).to_dict()


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "dpsgd", handle, description=DESCRIPTION, fields=FIELDS,
                    summary=sampling_summary("bound dpsgd"),
                    help="ReRo bound gamma of DP-SGD (Hayes et al. 2023, Thm 2 / Cor. 3)")
    add_schedule_args(p)
    add_prior_args(p, what="the prior (omit it for epsilon and the membership risks only)")
    p.add_argument("--method", default="exact", help="exact (default), closed-form (q = 1 only) or mc")
    p.add_argument("--mc-samples", type=int, default=1_000_000, help="Monte Carlo samples (method mc)")
    p.add_argument("--seed", type=int, default=None, help="seed of the Monte Carlo sampler (recorded)")
    add_delta_arg(p, "of the (epsilon, delta) comparison")
    add_sampling_args(p)
    add_json_flag(p)
