"""``rerokit audit one-run-bound`` (counts from anywhere) and ``rerokit audit one-run`` (rerokit's engine).

Both print at least ``epsilon_lower`` and ``mu_lower``: what one training run's canary guesses
prove (Steinke, Nasr & Jagielski 2023; Mahloujifar, Melis & Chaudhuri 2025). Stdlib only at
import; the handlers import the library.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_clip_arg, add_command, add_data_args, add_delta_arg, add_device_arg, add_json_flag
from rerokit.cli._common import add_noise_multiplier_arg, add_resume_args, add_sample_rate_arg, add_steps_arg

BOUND_DESCRIPTION = """
Lower bounds on the privacy of ONE training run from its canary guesses: M canary slots, each
holding one of K candidates drawn uniformly (K = 2: membership, a canary present or absent); the
auditor guessed G of them (abstaining on the rest) and C guesses were correct. --method fdp
(default): Mahloujifar, Melis and Chaudhuri 2025, Thm 3.1 (f-DP, any K); --method steinke:
Steinke, Nasr and Jagielski 2023, Thm 5.2 (K = 2). mu_lower: the run is not mu-GDP for any mu up
to it; epsilon_lower: the epsilon at --delta of the strongest rejected hypothesis. With
--sample-rate and --steps the hypotheses are the run's certified DP-SGD curves at that (q, T)
(membership: add/remove, symmetrised; K > 2 or --adjacency replace-one: replace-one); with
--noise-multiplier too, the run's own claim is tested and the certified upper tail of C is given.
The number of guesses must be fixed before looking at the secrets; if you tried several, say how
many with --thresholds-tried (Bonferroni). Every statement holds with probability >= --confidence.
"""

BOUND_FIELDS = [
    ("epsilon_lower", "the run is not (epsilon, delta)-private in the hypothesis family for any epsilon up to this "
                      "(0 = no evidence)"),
    ("mu_lower", "the run is not mu-GDP for any mu up to this (0 = no evidence)"),
    ("family", "gdp (mu-GDP curves), dpsgd (the run's DP-SGD curves) or dp ((eps, delta)-DP, steinke)"),
    ("noise_multiplier_rejected", "dpsgd family: every noise multiplier >= this is rejected"),
    ("claim", "with --noise-multiplier: rejected (yes/no), correct_upper (an honest run makes more correct guesses "
              "with probability < 1 - confidence), its epsilon and mu"),
    ("significance", "level of each test: (1 - confidence) / thresholds_tried"),
    ("selection", "how the number of guesses was chosen"),
    ("canaries, guesses, correct, options, adjacency, method, confidence, delta", "the inputs as used"),
]

RUN_DESCRIPTION = """
Audit ONE DP-SGD training run on rerokit's engine with --canaries canary slots. --threat white-box
(default): Dirac gradient canaries on their own coordinates of the model (Nasr et al. 2023),
included at the run's Poisson rate, scored from every privatized update after subtracting the
known records' clipped gradients (membership: present/absent; reconstruction: --options K
candidates, antipodal for K = 2, a regular simplex for K > 2). --threat black-box: input canaries
(data records with a wrong label) scored by the final model's loss. The counts of the most
confident guesses give epsilon_lower and mu_lower (audit one-run-bound), next to the run's
certified epsilon and mu; the guess count is chosen among 0.5% ... 100% of the slots with a
Bonferroni correction (or --selection split). --out writes the result file (a header first, the
result at the end); --resume returns a finished result of the same settings.
"""

RUN_FIELDS = [
    ("epsilon_lower", "what this one run proves: not (epsilon, delta)-private for any epsilon up to this"),
    ("mu_lower", "not mu-GDP for any mu up to this"),
    ("certified_epsilon", "the run's certified epsilon at delta (same family)"),
    ("certified_mu", "sqrt(T)/sigma (replace-one: 2 sqrt(T)/sigma): the run's Gaussian-DP mu at q = 1, an upper "
                     "bound of it for q < 1"),
    ("claim_rejected", "whether the guesses reject the run's own certified curve (an honest run: no)"),
    ("guesses, correct", "the guesses of the reported count and how many were right"),
    ("correct_upper", "certified upper tail: an honest run gets more right with probability < 1 - confidence"),
    ("accuracy_all", "fraction of all slots whose best candidate is the secret; accuracy_interval its 95% "
                     "Clopper-Pearson interval"),
    ("rero_gamma", "certified reconstruction success at kappa = 1/K (Hayes et al. 2023, Thm 2), to compare with "
                   "accuracy_all in the reconstruction game"),
    ("tried", "every guess count tried: guesses, correct, epsilon_lower and mu_lower of the mu-GDP family"),
    ("bound", "the full one-run bound (see audit one-run-bound)"),
    ("wall_seconds", "the audit's time; train_seconds the training loop's"),
    ("settings", "the settings as used, with the seed"),
]


def _summary(d: dict[str, Any]):
    """Verdict and rows for the human output (the shared renderer)."""
    from rerokit.report.terminal import Row, Summary

    claim = d.get("claim") if isinstance(d.get("claim"), dict) else None
    if "claim_rejected" in d and d.get("claim_rejected") is not None:
        claim = {"rejected": d["claim_rejected"], "correct_upper": d.get("correct_upper"),
                 "epsilon": d.get("certified_epsilon"), "mu": d.get("certified_mu")}
    b = d.get("bound") or d
    eps, mu = d["epsilon_lower"], d["mu_lower"]
    verdict = [f"One run proves \u03b5 \u2265 {eps:.4g} and \u03bc \u2265 {mu:.4g} "
               f"({b.get('correct')} of {b.get('guesses')} guesses right, {b.get('canaries')} canaries, "
               f"{100 * b.get('confidence', 0.95):.4g}% confidence)." if eps > 0 else
               "No evidence: these guesses reject no privacy claim (\u03b5_lower = 0)."]
    if claim is not None:
        verdict.append("The run's own certified claim is REJECTED: it is less private than claimed." if claim["rejected"]
                       else "The run's own certified claim is consistent with the guesses.")
    method = "Mahloujifar et al. 2025, Thm 3.1" if b.get("method") == "fdp" else "Steinke et al. 2023, Thm 5.2"
    rows = [Row("\u03b5 proven", f"\u2265 {eps:.4g}", f"at \u03b4 = {b.get('delta')}", method, "empirical lower bound"),
            Row("\u03bc proven", f"\u2265 {mu:.4g}", "", method, "empirical lower bound")]
    if claim is not None:
        if claim.get("epsilon") is not None:
            rows.append(Row("certified \u03b5", f"\u2264 {claim['epsilon']:.4g}", "", "DP-SGD accounting", "certified"))
        if claim.get("mu") is not None:
            rows.append(Row("certified \u03bc", f"\u2264 {claim['mu']:.4g}", "", "Gaussian DP of the schedule at q = 1",
                            "certified"))
        rows.append(Row("correct guesses an honest run exceeds w.p. < 1 - confidence", str(claim["correct_upper"]), "",
                        method, "certified upper tail"))
    rows.append(Row("number of guesses", str(b.get("guesses")), str(b.get("selection", "")), "", ""))
    notes = ("epsilon_lower is read off the strongest rejected curve of the hypothesis family "
             f"({b.get('family')}); see --help.",)
    return Summary(verdict=tuple(verdict), rows=tuple(rows), notes=notes, title="One-run audit")


def _bound(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.onerun import DpsgdHypothesis, one_run_bound

    sched = (args.sample_rate, args.steps)
    if (sched[0] is None) != (sched[1] is None):
        raise ValueError("give --sample-rate and --steps together")
    if args.noise_multiplier is not None and sched[0] is None:
        raise ValueError("--noise-multiplier needs --sample-rate and --steps")
    hyp = None if sched[0] is None else DpsgdHypothesis(args.sample_rate, args.steps, args.noise_multiplier)
    adjacency = None if args.adjacency is None else args.adjacency.replace("-", "_")
    b = one_run_bound(args.canaries, args.guesses, args.correct, options=args.options, method=args.method,
                      delta=args.delta, confidence=args.confidence, dpsgd=hyp, adjacency=adjacency,
                      thresholds_tried=args.thresholds_tried)
    return b.to_dict()


def _run(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.experiments.audit import import_model_factory
    from rerokit.experiments.onerun import config_from_args, run_one_run_audit

    from rerokit._validate import check_loop_count

    if args.model is not None and args.model_factory is not None:
        raise ValueError("give --model or --model-factory, not both")
    check_loop_count("steps", args.steps)
    from rerokit._files import check_data_args

    check_data_args(args.dataset, args.data_path)
    if args.epsilon is None and args.noise_multiplier is None:
        args.epsilon = 4.0
    train = dict(dataset=args.dataset, data_path=args.data_path, steps=args.steps, sample_rate=args.sample_rate,
                 clip=args.clip, lr=args.lr, hidden=tuple(args.hidden))
    if args.n_known is not None:
        train["n_known"] = args.n_known
    if args.model_factory:
        train["model_fn"] = import_model_factory(args.model_factory)
    else:
        train["model"] = args.model or "mlp"
    audit = dict(game=args.game, options=args.options, canaries=args.canaries, threat=args.threat, canary=args.canary,
                 actual_noise_multiplier=args.actual_noise_multiplier,
                 guess_counts=None if args.guess_counts is None else tuple(args.guess_counts),
                 selection=args.selection, method=args.method, confidence=args.confidence)
    cfg = config_from_args(epsilon=args.epsilon, noise_multiplier=args.noise_multiplier, delta=args.delta,
                           train=train, audit=audit)
    res = run_one_run_audit(cfg, seed=args.seed, out=args.out, resume=args.resume, progress=not args.no_progress,
                            device=args.device)
    if args.out:
        res = {**res, "out": args.out}
    return res


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "one-run-bound", _bound, description=BOUND_DESCRIPTION, fields=BOUND_FIELDS,
                    help="epsilon/mu lower bounds from one run's canary guesses (counts from any framework)",
                    summary=_summary)
    p.add_argument("--canaries", type=int, required=True, help="M >= 1 canary slots")
    p.add_argument("--guesses", type=int, required=True, help="G in [0, M] guesses made")
    p.add_argument("--correct", type=int, required=True, help="C in [0, G] correct guesses")
    p.add_argument("--options", type=int, default=2, help="K >= 2 candidates per slot (default 2: membership)")
    p.add_argument("--method", default="fdp", help="fdp (default; Mahloujifar et al. 2025) or steinke (K = 2)")
    add_delta_arg(p, "of epsilon_lower")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence in (0, 1) (default 0.95)")
    add_noise_multiplier_arg(p, "the run's claimed noise multiplier sigma > 0 (tests its certified curve)")
    add_sample_rate_arg(p, "the run's Poisson rate q in (0, 1] (with --steps: DP-SGD hypothesis family)")
    add_steps_arg(p, "the run's number of steps T >= 1")
    p.add_argument("--adjacency", default=None,
                   help="add-remove (default for K = 2) or replace-one (default for K > 2; K = 2 with two distinct "
                   "candidates, e.g. antipodal canaries)")
    p.add_argument("--thresholds-tried", type=int, default=1,
                   help="how many guess counts were tried before this one (Bonferroni; default 1: pre-registered)")
    add_json_flag(p)

    p = add_command(sub, "one-run", _run, description=RUN_DESCRIPTION, fields=RUN_FIELDS,
                    help="audit one DP-SGD training run with canaries (white-box or black-box)", summary=_summary)
    add_data_args(p, "digits (default), mnist or cifar10 (these need --data-path)")
    p.add_argument("--game", default="membership", help="membership (default) or reconstruction")
    p.add_argument("--options", type=int, default=2, help="K candidates per slot (reconstruction; default 2)")
    p.add_argument("--canaries", type=int, default=1000, help="M canary slots (default 1000)")
    p.add_argument("--threat", default="white-box", help="white-box (default) or black-box")
    p.add_argument("--canary", default="gradient",
                   help="white-box canaries: gradient (Dirac, default) or input (data records with wrong labels, scored "
                   "by the log-likelihood statistic of Hayes et al. 2023 App. G); black-box: always input")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--epsilon", type=float, default=None,
                   help="target epsilon > 0 (default 4): sigma calibrated for (epsilon, delta)")
    add_noise_multiplier_arg(g, "sigma > 0 given directly instead of --epsilon", default=None)
    add_delta_arg(p, "of the calibration and of epsilon_lower")
    add_steps_arg(p, "DP-SGD steps T >= 1 (default 100)", default=100)
    add_sample_rate_arg(p, "Poisson rate q in (0, 1] (default 1)", default=1.0)
    add_clip_arg(p, "clipping norm C > 0 (default 0.1)", default=0.1)
    p.add_argument("--lr", type=float, default=10.0, help="learning rate (default 10)")
    p.add_argument("--model", default=None, help="mlp (default) or cnn")
    p.add_argument("--model-factory", default=None, metavar="MODULE:FUNCTION",
                   help="your own torch.nn.Module: function(sample_shape, num_classes) (rerokit imports and runs it)")
    p.add_argument("--hidden", type=int, nargs="+", default=[100],
                   help="MLP hidden widths (default 100: 7,510 parameters on digits, room for the gradient canaries)")
    p.add_argument("--n-known", type=int, default=None, help="known training records (default 999; black-box: "
                   "at most the dataset size minus --canaries)")
    p.add_argument("--actual-noise-multiplier", type=float, default=None,
                   help="train with this sigma while the claim keeps the calibrated one (a deliberate bug)")
    p.add_argument("--guess-counts", type=int, nargs="+", default=None,
                   help="guess counts to try (default 0.5%%, 1%%, 2%%, 5%%, 10%%, 20%%, 50%%, 100%% of M)")
    p.add_argument("--selection", default="bonferroni", help="bonferroni (default) or split")
    p.add_argument("--method", default="fdp", help="fdp (default) or steinke (membership only)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence in (0, 1) (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 of everything random (default 0)")
    add_resume_args(p, out="result file (JSON: a header when the run starts, the result when it ends)",
                    resume="return the finished result in --out (same settings) without training")
    add_device_arg(p, "the training run")
    add_json_flag(p)
