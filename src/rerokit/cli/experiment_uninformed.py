"""``rerokit experiment resolution-sweep``: the uninformed analytic attack's law on scikit-image
photographs at several resolutions (PNG + CSV). Heavy imports live in the handler.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_command, add_json_flag, add_out_dir_arg


def _sweep(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._files import check_output_dir
    from rerokit.experiments.resolution_sweep import KIND, run_resolution_sweep

    check_output_dir("out_dir", args.out_dir, files=("resolution_sweep.csv", "resolution_sweep.png"))
    res = run_resolution_sweep(args.out_dir, images=args.images, resolutions=args.resolutions, sigmas=args.sigmas,
                               samples=args.samples, seed=args.seed)
    keys = ("image", "resolution", "sigma", "mse_mean", "mse_law_mean", "psnr_median", "psnr_law_median",
            "ncc_mean", "ncc_law", "ncc_bound", "nmi_mean")
    return {"png": res["png"], "csv": res["csv"], "seed": args.seed, "kind": KIND,
            "rows": [{k: r[k] for k in keys} for r in res["rows"]]}


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "resolution-sweep", _sweep,
        help="uninformed attack law X + N(0, sigma^2 ||X||^2 I) on camera/astronaut at several resolutions",
        description="Samples the optimal unbiased analytic attack's reconstruction X + N(0, sigma^2 ||X||^2 I) "
        "(no M x N layer is built) for scikit-image's camera and astronaut resized to r x r, and compares the "
        "sampled MSE, PSNR and NCC with their exact laws; NMI is measured only. Attack law, not a certified "
        "bound. Writes resolution_sweep.csv and resolution_sweep.png into --out-dir.",
        fields=[("png", "the figure"), ("csv", "the CSV of all rows"), ("seed", "the --seed"),
                ("kind", "what the numbers are"),
                ("rows", "one row per image, resolution and sigma: sampled means/medians and the law's values")])
    add_out_dir_arg(p)
    p.add_argument("--images", nargs="+", default=["camera", "astronaut"], help="camera and/or astronaut")
    p.add_argument("--resolutions", type=int, nargs="+", default=[8, 16, 32, 64, 128],
                   help="side lengths r in [2, 512] (default 8 16 32 64 128)")
    p.add_argument("--sigmas", type=float, nargs="+", default=[1e-3, 3e-3, 1e-2, 3e-2, 1e-1],
                   help="noise multipliers > 0 (default 0.001 0.003 0.01 0.03 0.1)")
    p.add_argument("--samples", type=int, default=200, help="draws per cell >= 2 (default 200)")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (default 0)")
    add_json_flag(p)
