"""``rerokit attack glm``: the closed-form GLM attack of Balle et al. 2022 (Thm 1).

Fits the model to optimality on the dataset (rerokit's Newton/least-squares trainer, with
intercept; objective (1/n) sum_i l_i + (lam/2) ||theta||^2), optionally releases it with output
perturbation N(0, noise^2 I), and attacks every training point in turn as the informed
adversary (who knows all other points). Reports the per-target reconstruction MSE
||x_hat - x||^2 / d (mean with a 95% interval over targets, median, max) and, for classifiers,
how often the label is recovered. Library imports live inside the handler.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_command, add_data_args, add_glm_args, add_json_flag, glm_problem, parse_classes

DESCRIPTION = """
The closed-form attack of Balle et al. 2022 (Thm 1) on a generalised linear model trained to
optimality. The model (with intercept; objective (1/n) sum_i l_i + (lam/2) ||theta||^2) is fitted
on the records of the dataset with the labels --classes, optionally released with output
perturbation N(0, noise^2 I) (--noise), and every training record is attacked in turn by the
informed adversary, who knows all other records.
"""

FIELDS = [
    ("mse", "mean over targets of the reconstruction MSE ||x_hat - x||^2 / d (averaged over --draws noise "
            "draws per target)"),
    ("ci_low", "lower end of the 95% interval of mse (over targets)"),
    ("ci_high", "upper end of that interval"),
    ("confidence", "level of the interval (0.95)"),
    ("trials", "number of targets the interval is over"),
    ("seed", "the --seed of the noise draws"),
    ("settings", "dataset, model (logistic, multinomial, linear or ridge), classes, lam, noise, draws, n "
                 "(records), dim"),
    ("mse_median", "median of the per-target MSE"),
    ("mse_max", "largest per-target MSE"),
    ("targets", "records attacked (all training records)"),
    ("non_identifiable", "targets never reconstructed (their gradient vanished in every draw); left out of mse"),
    ("exact", "true when every target was recovered to machine precision (no noise)"),
    ("reference", "the paper and result"),
    ("label_accuracy", "how often the label was recovered too (classifiers)"),
]


def _glm(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from rerokit._validate import check_int, check_nonnegative
    from rerokit.attacks.glm import fit_glm, glm_reconstruct_all, output_perturbation
    from rerokit.attacks.result import AttackResult
    from rerokit.data import load_dataset

    noise = check_nonnegative("noise", args.noise)
    lam = check_nonnegative("lam", args.lam)
    draws = check_int("draws", args.draws, minimum=1)
    seed = check_int("seed", args.seed, minimum=0)
    from rerokit._files import check_data_args

    check_data_args(args.dataset, args.data_path)
    ds = load_dataset(args.dataset, args.data_path) if args.data_path else load_dataset(args.dataset)
    X = np.asarray(ds.flat, dtype=float)
    y = np.asarray(ds.y)
    if args.classes is None:
        cls = (0, 1) if args.model == "logistic" else tuple(int(c) for c in np.unique(y))
        if args.model == "logistic":
            parse_classes("0,1", np.unique(y), args.dataset)  # the default classes must occur too
    else:
        cls = parse_classes(args.classes, np.unique(y), args.dataset)
    if len(set(cls)) < 2:
        raise ValueError(f"dataset {args.dataset} must hold at least 2 distinct labels for the {args.model} model, "
                         f"got {len(set(cls))}")
    keep = np.isin(y, cls)
    X, y = X[keep], y[keep]
    n = len(y)
    kind, target, lam = glm_problem(args.model, cls, y, lam)
    model = fit_glm(X, target, kind, n * lam)
    rng = np.random.default_rng(seed)
    per_target = np.zeros(n)
    label_ok = np.zeros(n)
    fails = np.zeros(n, dtype=int)
    runs = draws if noise > 0 else 1
    for _ in range(runs):
        released = output_perturbation(model, noise, rng) if noise > 0 else model
        Xh, yh = glm_reconstruct_all(released, X, target)
        e = np.mean((Xh - X) ** 2, axis=1)
        bad = ~np.isfinite(e)
        fails += bad
        per_target += np.where(bad, 0.0, e)
        if kind == "logistic":
            label_ok += (np.rint(np.nan_to_num(yh, nan=-1.0)) == target) & ~bad
        elif kind == "multinomial":
            label_ok += (np.argmax(np.nan_to_num(yh, nan=-np.inf), axis=1) == np.searchsorted(model.classes, target)) & ~bad
    cnt = runs - fails
    ok = cnt > 0
    mse = per_target[ok] / cnt[ok]
    if not ok.any():
        raise ValueError("no target could be reconstructed: every gradient vanished or was not finite "
                         f"(with --noise {noise:g} the released model may overflow double precision)")
    from rerokit.report.results import GlmAttackOutput, GlmSettings

    settings = GlmSettings(dataset=args.dataset, model=kind, classes=tuple(cls), lam=lam, noise=noise, draws=runs, n=n,
                           dim=X.shape[1])
    res = AttackResult.from_values(mse, seed=seed, metric="mse", settings=settings.to_dict(), support=(0.0, float("inf")))
    return GlmAttackOutput(
        result=res, mse_median=float(np.median(mse)), mse_max=float(mse.max()), targets=n,
        non_identifiable=int((~ok).sum()), exact=bool(noise == 0 and float(mse.max()) < 1e-16),
        reference="Balle et al. 2022, Thm 1",
        label_accuracy=float(label_ok.sum() / max(cnt.sum(), 1)) if kind in ("logistic", "multinomial") else None,
    ).to_dict()


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "glm", _glm, description=DESCRIPTION, fields=FIELDS,
                    help="closed-form reconstruction attack on a GLM trained to optimality (Balle et al. 2022 Thm 1)")
    add_data_args(p)
    add_glm_args(p, classes_default=None,
                 classes="labels of the dataset kept, comma-separated, at least 2 distinct (logistic: default 0,1; "
                 "more than 2 = multinomial; linear/ridge: default all)")
    p.add_argument("--noise", type=float, default=0.0, help="output perturbation noise standard deviation")
    p.add_argument("--draws", type=int, default=100, help="noise draws averaged per target (with --noise)")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 of the noise draws (default 0)")
    add_json_flag(p)
