"""``rerokit experiment ...``: reproduce a paper figure (PNG + CSV, resumable JSONL).

Commands registered here: ``uninformed-fig2`` (Riess et al. 2024, Fig. 2); the other experiments have
their own modules. Heavy imports live in the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_command, add_executor_args, add_json_flag, add_out_dir_arg, add_resume_args
from rerokit.cli._common import executor_from_args


DESCRIPTION = """
Reproduce Fig. 2 of Riess et al. 2024 on 100 U(0,1) points of dimension 4 (M = 100) and on the digits;
writes uninformed_fig2.png, uninformed_fig2.csv (one row per record and cell),
uninformed_fig2_summary.csv (one row per cell) and a resumable uninformed_fig2.jsonl into --out-dir.
"""

FIELDS = [
    ("settings", "the inputs as used (seed included)"),
    ("png", "the figure written"),
    ("csv", "the per-record CSV"),
    ("summary_csv", "the per-cell CSV"),
    ("jsonl", "the resumable record file"),
    ("cells", "cells computed (dataset x regime x sigma)"),
]


def _uninformed_fig2(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit._resources import analytic_attack_bytes, check_memory
    from rerokit._validate import check_choice, check_distinct, check_int
    from rerokit.experiments.uninformed_fig2 import DEFAULT_SIGMAS, run_uninformed_fig2

    check_output_dir("out_dir", args.out_dir, files=("uninformed_fig2.jsonl", "uninformed_fig2.png",
                                                     "uninformed_fig2.csv", "uninformed_fig2_summary.csv"))
    check_distinct("sigmas", args.sigmas or ())
    check_distinct("datasets", args.datasets)
    backend = check_choice("backend", args.backend, ("opacus", "vmap"))
    rows = check_int("rows", args.rows, minimum=1)
    for name in args.datasets:  # every cell attacks all records of a dataset at once (vmap)
        if name == "synthetic":
            k, n = check_int("points", args.points, minimum=2), check_int("dim", args.dim, minimum=2)
            option = "--points" if k >= n else "--dim"
        elif name == "digits":
            k, n, option = check_int("digits_targets", args.digits_targets, minimum=1), 64, "--digits-targets"
        else:
            continue  # refused with its own message below
        need = analytic_attack_bytes(rows, n, k, backend, chunk=4096)
        if need > analytic_attack_bytes(1, n, k, backend, chunk=4096) * 64 and rows > 1:
            option = "--rows"
        check_memory(option, need, f"the analytic attack on {k} {name} records of dimension {n} with {rows} rows "
                     f"({backend} backend)")

    from rerokit.executors import RunOptions

    with executor_from_args(args) as ex:
        res = run_uninformed_fig2(
            args.out_dir, sigmas=tuple(args.sigmas) if args.sigmas else DEFAULT_SIGMAS, seed=args.seed,
            points=args.points, dim=args.dim, rows=args.rows, digits_targets=args.digits_targets,
            datasets=tuple(args.datasets), backend=args.backend,
            options=RunOptions(resume=args.resume, progress=not args.no_progress, executor=ex),
        )
    return {"settings": res["settings"], **res["paths"], "cells": len(res["summary"])}


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "uninformed-fig2", _uninformed_fig2, description=DESCRIPTION, fields=FIELDS,
                    help="Riess et al. 2024 Fig. 2: MSE / PSNR / NCC of the analytic attack against sigma in three regimes")
    add_out_dir_arg(p)
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
    add_resume_args(p, "continue uninformed_fig2.jsonl in --out-dir (same settings); one line per finished cell "
                    "(dataset, regime, sigma; all points attacked at once), so an interruption loses at most that cell")
    add_executor_args(p, what="cells")
    add_json_flag(p)
