"""``rerokit experiment ...``: reproduce a paper figure (PNG + CSV, resumable JSONL).

Commands registered here: ``uninformed-fig2`` (paper 004, Fig. 2). Other experiments may add
their own ``_register_*`` function and call it from :func:`register`. Heavy imports live in the
handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    _register_uninformed_fig2(sub)


def _register_uninformed_fig2(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "uninformed-fig2",
        help="004 Fig. 2: MSE / PSNR / NCC of the analytic attack against sigma in three regimes",
        description="Reproduce Fig. 2 of paper 004 on 100 U(0,1) points of dimension 4 (M = 100) and on "
        "the digits; writes uninformed_fig2.png, uninformed_fig2.csv, uninformed_fig2_summary.csv and "
        "a resumable uninformed_fig2.jsonl into --out-dir.",
    )
    p.add_argument("--out-dir", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=0,
                   help="seed >= 0 (data and noise; recorded in the JSONL header and the output)")
    p.add_argument("--sigmas", type=float, nargs="+", default=None,
                   help="noise multipliers > 0 (default 0.01 0.02 0.05 0.1 0.2 0.5 1)")
    p.add_argument("--points", type=int, default=100, help="synthetic points >= 2 (default 100)")
    p.add_argument("--dim", type=int, default=4, help="synthetic dimension >= 2 (default 4)")
    p.add_argument("--rows", type=int, default=100, help="rows M of the attacker's layer in regimes 1-2 (default 100)")
    p.add_argument("--digits-targets", type=int, default=100, help="digits records attacked (default 100)")
    p.add_argument("--datasets", nargs="+", default=["synthetic", "digits"], help="synthetic and/or digits")
    p.add_argument("--backend", default="vmap", help="vmap (default, torch.func) or opacus")
    p.add_argument("--resume", action="store_true",
                   help="continue uninformed_fig2.jsonl in --out-dir (same settings); one line per finished cell "
                   "(dataset, regime, sigma; all points attacked at once), so an interruption loses at most that cell")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_json_flag(p)
    p.set_defaults(func=_uninformed_fig2)


def _uninformed_fig2(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.experiments.uninformed_fig2 import DEFAULT_SIGMAS, run_uninformed_fig2

    res = run_uninformed_fig2(
        args.out_dir, sigmas=tuple(args.sigmas) if args.sigmas else DEFAULT_SIGMAS, seed=args.seed,
        points=args.points, dim=args.dim, rows=args.rows, digits_targets=args.digits_targets,
        datasets=tuple(args.datasets), backend=args.backend, resume=args.resume, progress=not args.no_progress,
    )
    return {"settings": res["settings"], **res["paths"], "cells": len(res["summary"])}
