"""``rerokit report``: every risk of a DP-SGD run in one report (see DESCRIPTION)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from rerokit.cli._common import add_clip_arg, add_command, add_json_flag, add_sampling_args, add_schedule_args
from rerokit.cli._common import sampling_from_args

DESCRIPTION = """
Every risk of a DP-SGD run in one report: the level of its epsilon among published practice
(Ponomareva et al. 2023, "How to DP-fy ML"), one line per threat model in odds against a blind
guess ("at most 37 in 100 attempts, against 10 by chance"), every number with its method and
whether it is a certified bound or an estimate, a glossary of the symbols, and with --what-if
(default with --html) the noise multiplier or steps that would bring the reconstruction bound
(prior of 10) to 0.15, 0.2 or 0.3. The numbers are those of 'rerokit bound dpsgd / tradeoff / uninformed / mse-rdp' and
'rerokit calibrate dpsgd' for the same settings.

The run: --noise-multiplier, --sample-rate and --steps; or --opacus-history FILE, a JSON list of
[noise_multiplier, sample_rate, steps] as Opacus' accountant.history (or its state_dict,
{"history": [...]}); or --event FILE, a dp-accounting event as JSON, for example

  {"SelfComposedDpEvent": {"count": 1000, "event": {"PoissonSampledDpEvent":
    {"sampling_probability": 0.01, "event": {"GaussianDpEvent": {"noise_multiplier": 1.0}}}}}}

(ComposedDpEvent {"events": [...]} for schedules; only these classes and NoOpDpEvent are read);
or --audit FILE alone, which takes the audited settings and the (epsilon, delta) and sampler its
file declares. --sampler shuffle: fixed-size shuffled batches (Opacus' poisson_sampling=False),
certified without amplification (the Poisson number is shown beside it as an assumption);
--examples-per-user K: protect a user's K examples together. The report starts with the privacy
facts: unit of privacy, neighbouring relation, sampler, what is released, accountant, delta.

Threat models: an informed adversary with priors of 2, 10 and 100 equally likely candidates and
"any image within 32/256 per pixel" of --data-shape (Hayes et al. 2023, App. I); membership
inference (TPR at FPR 0.1/1/10%, advantage); an uninformed server inverting gradients (Riess et al.
2024) for --data-shape, assuming every record has L2 norm >= --clip unless --min-norm says
otherwise; Guo et al.'s MSE bound with --diameter; and an audit's measured success with what it
proves (--audit: the JSON of 'rerokit audit ... --json' or its --out file).

--html PATH writes a self-contained card (inline styles and figures, no scripts, opens offline,
prints to PDF); --png DIR writes each figure as PNG with a CSV of its numbers beside it;
--model-card FILE writes a "Privacy" section with YAML metadata into a model card (through
huggingface_hub's ModelCard when installed).
"""

FIELDS = [
    ("schema_version", "version of this JSON's layout (the JSON Schema: rerokit/report/report.schema.json)"),
    ("title", "the report's title"),
    ("label", "the --label (or null)"),
    ("settings", "the run: noise_multiplier, sample_rate, steps (or schedule), total_steps, source, sampler (and "
                 "whether declared, detected or assumed), examples_per_user, neighbouring_relation"),
    ("privacy_facts", "what every certified number is about (the header of the report)"),
    ("privacy_facts.unit_of_privacy", "one example, or one user's examples"),
    ("privacy_facts.examples_per_user", "examples protected together"),
    ("privacy_facts.neighbouring_relation", "the neighbouring relation the guarantees are for"),
    ("privacy_facts.sampler", "poisson, shuffle or full_batch"),
    ("privacy_facts.sampler_source", "declared, detected or assumed"),
    ("privacy_facts.sampler_text", "the sampler in words, with where it came from"),
    ("privacy_facts.released", "what the attacker sees: every intermediate model and noisy gradient"),
    ("privacy_facts.accountant", "how the numbers were computed"),
    ("privacy_facts.delta", "delta of epsilon"),
    ("poisson_assumption", "non-Poisson samplers: the Poisson accountant's numbers (not certified for this run)"),
    ("poisson_assumption.gamma", "gamma at the reference prior under Poisson sampling"),
    ("poisson_assumption.epsilon", "epsilon at delta under Poisson sampling"),
    ("poisson_assumption.delta", "its delta"),
    ("poisson_assumption.kind", "assumption"),
    ("poisson_assumption.note", "why it is not certified for this run"),
    ("declared_guarantee", "--audit: the (epsilon, delta) the audited run was calibrated for, from its file"),
    ("declared_guarantee.epsilon", "the declared epsilon"),
    ("declared_guarantee.delta", "the declared delta"),
    ("declared_guarantee.source", "the file it came from"),
    ("informed_mse", "certified: any attacker's success at MSE <= --mse-threshold for a target drawn from a prior of "
                     "pixels uniform on [0, --data-range] (Hayes et al. 2023 Thm 2)"),
    ("informed_mse.kind", "certified"),
    ("informed_mse.prior", "the prior"),
    ("informed_mse.dim", "data dimension N"),
    ("informed_mse.mse_threshold", "eta"),
    ("informed_mse.kappa", "upper bound on the best guess's success from the prior (Anderson + Chernoff)"),
    ("informed_mse.log10_kappa", "log10 of kappa"),
    ("informed_mse.gamma", "upper bound on any attacker's success"),
    ("informed_mse.gamma_interval", "certified bracket of gamma"),
    ("informed_mse.method", "how gamma was computed"),
    ("informed_mse.population", "whom the bound is about: a target drawn from the prior"),
    ("informed_mse.reference", "the theorem"),
    ("delta", "the --delta of epsilon"),
    ("epsilon", "certified epsilon at delta (add-or-remove adjacency; the PLD of 'bound dpsgd')"),
    ("level", "name (strong / reasonable / weak) and tier of epsilon among those of Ponomareva et al. 2023, 'How to "
              "DP-fy ML', with the basis of the comparison"),
    ("gdp", "mu: Gaussian-DP parameter (exact for full batch: kind mu_gdp) or the mu-equivalent at kappa = 1/10"),
    ("data", "the data description: shape, dim, dataset_size, clip, diameter, mse_threshold, data_range"),
    ("informed", "per prior (prior_2, prior_10, prior_100, pixel_tolerance): gamma (certified upper bound), "
                 "gamma_interval (certified bracket), kappa, log10_kappa, advantage, mu_equivalent, method"),
    ("membership", "membership-inference risks of the same curve: advantage, tpr_at_fpr (list of {fpr, tpr, "
                   "interval}), Bayes accuracy, brackets"),
    ("uninformed", "Riess et al. 2024, kind attack law (the exact law of the optimal unbiased analytic attack, not a "
                   "bound on every attacker): gamma (one release), gamma_over_steps, expected_mse, ncc_bound, min_norm "
                   "and its source, no_prior_attacks (constant guess, shrinkage of X_hat: exact laws); or skipped with "
                   "the reason"),
    ("guo_mse", "Guo et al. 2022 Thm 1, unbiased attacker: mse_lower_bound from epsilon_rdp2, the replace-one (2, eps)-RDP "
                "(neighbouring_relation, rdp_method); or skipped with the reason"),
    ("audit", "the audit: success, interval, successes, trials, kappa, gamma at kappa, consistent, lower_bounds "
              "(mu_gdp_lower, epsilon_lower), certified_mu, certified_epsilon; null without --audit"),
    ("what_would_change", "targets: noise_multiplier (same q, T) and steps (same sigma, q) for gamma <= each "
                          "target at a prior of 10, with epsilon at that noise multiplier"),
    ("options", "prior sizes, pixel tolerance and what-if margins used"),
    ("notes", "warnings (e.g. delta not below 1/N, a section left out)"),
    ("verdict", "one line per threat model in odds against the blind guess: threat_model and text"),
    ("key_numbers", "every number of the card and the tables by a dotless key (the data-key of the HTML card)"),
    ("written", "files written by --html / --png / --model-card"),
]


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import printable
    from rerokit.report.build import build_report

    sources = [n for n, v in (("settings", any(x is not None for x in (args.noise_multiplier, args.sample_rate,
                                                                        args.steps))),
                              ("--opacus-history", args.opacus_history is not None),
                              ("--event", args.event is not None)) if v]
    if len(sources) > 1:
        raise ValueError(f"give the run once: settings, --opacus-history or --event (got {' and '.join(sources)})")
    if not sources and args.audit is None:
        raise ValueError("give the run: --noise-multiplier, --sample-rate and --steps; or --opacus-history FILE; "
                         "or --event FILE; or --audit FILE (its settings)")
    mechanism = None
    source = None
    if args.opacus_history is not None:
        from rerokit.report.inputs import load_history

        mechanism = load_history(args.opacus_history)
        source = f"opacus history {os.path.basename(args.opacus_history)}"
    elif args.event is not None:
        from rerokit.report.inputs import load_event

        mechanism = load_event(args.event)
        source = f"dp-accounting event {os.path.basename(args.event)}"
    elif sources:
        missing = [o for o, v in (("--noise-multiplier", args.noise_multiplier), ("--sample-rate", args.sample_rate),
                                  ("--steps", args.steps)) if v is None]
        if missing:
            raise ValueError(f"settings need --noise-multiplier, --sample-rate and --steps (missing {', '.join(missing)})")
    # output paths are checked before any work (one line naming the option and the path); none may be
    # one of the input files (it would be overwritten)
    from rerokit._files import check_not_an_input, check_output_dir, check_output_file

    inputs = {"--audit": args.audit, "--opacus-history": args.opacus_history, "--event": args.event}
    if args.html is not None:
        check_output_file("html", args.html)
        check_not_an_input("--html", args.html, inputs)
    if args.model_card is not None:
        check_output_file("model-card", args.model_card)
        check_not_an_input("--model-card", args.model_card, inputs)
    if args.png is not None:
        from rerokit.report.figures import FIGURE_NAMES

        check_output_dir("png", args.png, [f"{n}.{e}" for n in FIGURE_NAMES for e in ("png", "csv")])
        for f in [f"{n}.{e}" for n in FIGURE_NAMES for e in ("png", "csv")]:
            check_not_an_input("--png", os.path.join(args.png, f), inputs)
    _check_accounting_memory(args, mechanism)
    from rerokit.bounds.schedule import Sampling
    from rerokit.report.settings import DataDescription, ReportSettings

    sampling = sampling_from_args(args)
    rep = build_report(
        mechanism, noise_multiplier=args.noise_multiplier, sample_rate=args.sample_rate, steps=args.steps,
        sampler=Sampling(sampling["sampler"], sampling["examples_per_user"]), delta=args.delta, audit=args.audit,
        data=DataDescription(data_shape=args.data_shape, dataset_size=args.dataset_size, clip=args.clip,
                             min_norm=args.min_norm, diameter=args.diameter, mse_threshold=args.mse_threshold,
                             data_range=args.data_range),
        settings=ReportSettings(label=None if args.label is None else printable(args.label), source=source),
        what_if=_what_if_wanted(args),
    )
    out = rep.to_dict()
    written: dict[str, Any] = {}
    if args.html is not None:
        written["html"] = rep.write_html(args.html)
    if args.png is not None:
        written["png"] = rep.write_png(args.png)
    if args.model_card is not None:
        from rerokit.report.model_card import write_model_card

        written["model_card"] = write_model_card(out, args.model_card)
    if written:
        out["written"] = written
    return out


def _what_if_wanted(args: argparse.Namespace) -> bool:
    """'What would change it' costs six calibrations: computed for the card, or when asked; a
    settings-only report in the terminal stays under a second (benchmarks/report_speed.py)."""
    if args.no_what_if:
        return False
    return bool(args.what_if) or args.html is not None


def _check_accounting_memory(args: argparse.Namespace, mechanism: Any) -> None:
    """The PLD accounting of the run (or of the audit's settings) must fit in memory: checked before it starts."""
    from rerokit._resources import check_dpsgd_accounting

    if mechanism is not None:
        from rerokit.bounds.schedule import Schedule

        option = "--opacus-history" if args.opacus_history is not None else "--event"
        check_dpsgd_accounting([tuple(s) for s in Schedule.coerce(mechanism)], option)
    elif None not in (args.noise_multiplier, args.sample_rate, args.steps):
        from rerokit._validate import check_int, check_positive, check_probability

        check_dpsgd_accounting([(check_positive("noise_multiplier", args.noise_multiplier),
                                 check_probability("sample_rate", args.sample_rate),
                                 check_int("steps", args.steps, minimum=1))])


def summary(result: dict[str, Any]):
    """The report's verdict, table, "what would change it" and notes (files written last)."""
    import dataclasses

    from rerokit.report.build import report_summary

    s = report_summary(result)
    w = result.get("written") or {}
    notes = list(s.notes)
    if "html" in w:
        notes.append(f"HTML card written to {w['html']}")
    if "model_card" in w:
        notes.append(f"Privacy section and metadata written to the model card {w['model_card']}")
    if "png" in w:
        notes.append(f"{len(w['png'])} figure files (PNG + CSV) written to {os.path.dirname(w['png'][0]) or '.'}")
    return dataclasses.replace(s, notes=tuple(notes))


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "report", handle, description=DESCRIPTION, fields=FIELDS, summary=summary,
                    help="one report of every risk of a DP-SGD run: verdict, table, HTML card (--html), "
                    "figures (--png)")
    run = p.add_argument_group("the run (settings, --opacus-history, --event, or --audit alone)")
    add_schedule_args(run, required=False)
    run.add_argument("--opacus-history", default=None, metavar="FILE",
                     help="JSON list of [noise_multiplier, sample_rate, steps] (Opacus accountant.history), "
                     "or {\"history\": [...]}")
    run.add_argument("--event", default=None, metavar="FILE", help="dp-accounting event as JSON (see above)")
    run.add_argument("--delta", type=float, default=None,
                     help="delta in (0, 1) of the reported epsilon (default: the audit file's declared delta, else 1e-5)")
    add_sampling_args(run)
    data = p.add_argument_group("the data (optional)")
    data.add_argument("--data-shape", default=None, help="record shape, e.g. 1x28x28, 3x32x32, 1x8x8 "
                      "(default: the audited dataset's)")
    data.add_argument("--dataset-size", type=int, default=None, help="number N of training records")
    add_clip_arg(data, "clipping norm C > 0 (default: the audit's)")
    data.add_argument("--min-norm", type=float, default=None,
                      help="smallest non-zero L2 norm r of a record (default: C, i.e. assume every record has "
                      "norm >= C, Riess et al.'s data-independent bound)")
    data.add_argument("--mse-threshold", type=float, default=0.01,
                      help="MSE threshold eta of the uninformed adversary (default 0.01 = PSNR 20 dB on [0, 1])")
    data.add_argument("--data-range", type=float, default=1.0, help="data range R for the PSNR reading (default 1)")
    data.add_argument("--diameter", type=float, default=None,
                      help="per-coordinate diameter of the data (e.g. 1 for [0, 1]) for Guo et al.'s MSE bound")
    p.add_argument("--audit", default=None, metavar="FILE",
                   help="audit result: the JSON of 'rerokit audit ... --json' or its --out JSON lines")
    p.add_argument("--label", default=None, help="a title for the report (e.g. the model's name)")
    p.add_argument("--html", default=None, metavar="PATH", help="write the self-contained HTML card here")
    p.add_argument("--png", default=None, metavar="DIR", help="write each figure as PNG + CSV into this folder")
    p.add_argument("--model-card", default=None, metavar="FILE",
                   help="write a 'Privacy' section (facts, verdict, numbers) and its YAML metadata into this model "
                   "card, e.g. a Hugging Face README.md (created, or its Privacy section replaced)")
    wi = p.add_mutually_exclusive_group()
    wi.add_argument("--what-if", action="store_true", default=None,
                    help="add 'what would change it': the noise multiplier or steps for gamma <= 0.15 / 0.2 / 0.3 at a "
                    "prior of 10 (six calibrations, a few seconds; on by default with --html)")
    wi.add_argument("--no-what-if", action="store_true", help="leave 'what would change it' out, also of the card")
    add_json_flag(p)
