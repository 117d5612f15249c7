"""``rerokit experiment fil-glm``: Guo et al. 2022 Fig. 3 (GLM attack MSE vs dFIL bound on digits 0 vs 1)."""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fil-glm", help="Guo et al. 2022 Fig. 3: GLM attack MSE vs dFIL bound on digits 0 vs 1",
                       description="Writes fil_glm.png, fil_glm.csv and a resumable fil_glm.jsonl into --out-dir.")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--dataset", default="digits")
    p.add_argument("--classes", default="0,1")
    p.add_argument("--lam", type=float, default=1e-2)
    p.add_argument("--noise-std", type=float, default=1e-4)
    p.add_argument("--draws", type=int, default=1000, help="output-perturbation draws (default 1000)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed >= 0 (block b of draws uses seed [seed, b]; recorded in the JSONL header and records)")
    p.add_argument("--resume", action="store_true",
                   help="continue fil_glm.jsonl in --out-dir (same settings); one line per block of 100 draws, so "
                   "an interruption loses at most the block in flight")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_json_flag(p)
    p.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.experiments.fil_glm import run_fil_glm

    try:
        cls = tuple(int(c) for c in args.classes.split(","))
    except ValueError:
        raise ValueError(f"classes must be two comma-separated integer labels, got {args.classes!r}") from None
    return run_fil_glm(args.out_dir, dataset=args.dataset, classes=cls, lam=args.lam, noise_std=args.noise_std,
                       draws=args.draws, seed=args.seed, resume=args.resume, progress=not args.no_progress)
