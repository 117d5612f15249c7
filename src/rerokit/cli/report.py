"""``rerokit report``: every risk of a DP-SGD run in one report - verdict, table, HTML card, figures.

The run is given as settings (``--noise-multiplier --sample-rate --steps``), as an Opacus
accountant history saved as JSON (``--opacus-history FILE``: a list of [sigma, q, steps], or
the accountant's state_dict ``{"history": [...]}``), as a dp-accounting event saved as JSON
(``--event FILE``, e.g. ``{"SelfComposedDpEvent": {"count": 1000, "event":
{"PoissonSampledDpEvent": {"sampling_probability": 0.01, "event": {"GaussianDpEvent":
{"noise_multiplier": 1.0}}}}}}``; ``ComposedDpEvent: {"events": [...]}`` for schedules), or
taken from an audit (``--audit FILE`` alone: the JSON ``rerokit audit ... --json`` prints or the
JSON lines of its ``--out``).

Printed: one sentence per threat model (informed adversary with priors of 2 / 10 / 100
candidates and "any image within 32/256 per pixel" of ``--data-shape``; membership inference;
the uninformed gradient-inversion adversary of paper 004 for ``--data-shape`` and ``--clip``,
assuming every record has L2 norm >= C unless ``--min-norm`` says otherwise; Guo et al.'s MSE
bound with ``--diameter``; the audit), then every number with its method and whether it is a
certified bound or an estimate, then the noise multiplier / steps that would bring gamma (prior
of 10) to 0.15 / 0.2 / 0.3. ``--html PATH`` writes a self-contained card (inline CSS and SVG,
no scripts, opens offline, prints to PDF); ``--png DIR`` the figures as PNG with a CSV of their
numbers beside each. Numbers are the ones ``rerokit bound dpsgd / tradeoff / uninformed /
mse-rdp`` and ``rerokit calibrate dpsgd`` print for the same settings.

Only the standard library at module level; matplotlib only with --html/--png; torch never.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from rerokit.cli._common import add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="one report of every risk of a DP-SGD run: verdict, table, HTML card (--html), figures (--png)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run = p.add_argument_group("the run (settings, --opacus-history, --event, or --audit alone)")
    run.add_argument("--noise-multiplier", type=float, default=None, help="noise multiplier sigma > 0")
    run.add_argument("--sample-rate", type=float, default=None, help="Poisson sampling rate q in (0, 1]")
    run.add_argument("--steps", type=int, default=None, help="number of steps T >= 1")
    run.add_argument("--opacus-history", default=None, metavar="FILE",
                     help="JSON list of [noise_multiplier, sample_rate, steps] (Opacus accountant.history), "
                     "or {\"history\": [...]}")
    run.add_argument("--event", default=None, metavar="FILE", help="dp-accounting event as JSON (see above)")
    run.add_argument("--delta", type=float, default=1e-5, help="delta of epsilon, in (0, 1) (default 1e-5)")
    data = p.add_argument_group("the data (optional)")
    data.add_argument("--data-shape", default=None, help="record shape, e.g. 1x28x28, 3x32x32, 1x8x8 "
                      "(default: the audited dataset's)")
    data.add_argument("--dataset-size", type=int, default=None, help="number N of training records")
    data.add_argument("--clip", type=float, default=None, help="clipping norm C > 0 (default: the audit's)")
    data.add_argument("--min-norm", type=float, default=None,
                      help="smallest non-zero L2 norm r of a record (default: C, i.e. assume every record has "
                      "norm >= C, 004's data-independent bound)")
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
    p.add_argument("--no-what-if", action="store_true", help="skip 'what would change it' (six calibrations)")
    add_json_flag(p)
    p.set_defaults(func=handle, summary=summary)


def handle(args: argparse.Namespace) -> dict[str, Any]:
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
    if args.html is not None and os.path.isdir(args.html):
        raise ValueError(f"html must be a file path, got the directory {args.html}")
    if args.png is not None and os.path.exists(args.png) and not os.path.isdir(args.png):
        raise ValueError(f"png must be a folder, got the file {args.png}")
    rep = build_report(
        mechanism, noise_multiplier=args.noise_multiplier, sample_rate=args.sample_rate, steps=args.steps,
        data_shape=args.data_shape, dataset_size=args.dataset_size, clip=args.clip, min_norm=args.min_norm,
        diameter=args.diameter, mse_threshold=args.mse_threshold, data_range=args.data_range, delta=args.delta,
        audit=args.audit, label=args.label, source=source, what_if=not args.no_what_if,
    )
    out = rep.to_dict()
    written: dict[str, Any] = {}
    if args.html is not None:
        written["html"] = rep.write_html(args.html)
    if args.png is not None:
        written["png"] = rep.write_png(args.png)
    if written:
        out["written"] = written
    return out


def summary(result: dict[str, Any]):
    """The report's verdict, table, "what would change it" and notes (files written last)."""
    import dataclasses

    from rerokit.report.build import report_summary

    s = report_summary(result)
    w = result.get("written") or {}
    notes = list(s.notes)
    if "html" in w:
        notes.append(f"HTML card written to {w['html']}")
    if "png" in w:
        notes.append(f"{len(w['png'])} figure files (PNG + CSV) written to {os.path.dirname(w['png'][0]) or '.'}")
    return dataclasses.replace(s, notes=tuple(notes))
