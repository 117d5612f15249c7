"""DP-GD as a mitigation of the RecoNN attack: Balle et al. (2022), Sec. VI-D, Fig. 9.

For each epsilon the released and shadow models are trained with full-batch DP-GD (per-sample
clipping to C = 1, Gaussian noise making the ``epochs`` steps (epsilon, delta = 1e-5)-DP, fresh
noise for every model, unknown to the adversary), the reconstructor is trained on the noisy
shadow models, and the mean reconstruction MSE on held-out released models is compared with the
nearest-neighbour oracle; the released models' test accuracy is the utility axis of Fig. 9. The
non-private run (epsilon = inf) is the reference point. Everything else follows
:func:`rerokit.experiments.reconn.run_reconn` (digits, MLP 64-10-10, known initialisation); the
shadow and released models of every epsilon train in blocks on the ``executor`` (``"local"`` or
``"ray"``, the same models bit for bit) on ``device``.

Outputs in ``out_dir``: ``reconn_dpgd.csv`` (one row per epsilon), ``reconn_dpgd.png`` (MSE vs
epsilon, log x-axis, with the NN oracle and the non-private MSE as lines; test accuracy on a
second axis) and ``reconn_dpgd.jsonl`` (one record per finished epsilon; ``resume=True`` skips
the finished ones).

Measured (seed 0, digits, K = 2,000 shadow models, |D-| = 500, 100 epochs, 100 targets,
reconstructor 512-512 x 40 epochs, 1 torch thread, ~5 min): no DP mse 0.0153 < NN oracle 0.0187
(81% of targets); DP-GD eps = 1, 10, 100, 1e3, 1e4 -> mse 0.124, 0.126, 0.117, 0.073, 0.025
(none below the oracle) at released-model test accuracy 0.53, 0.91, 0.92, 0.92, 0.92 (0.955
without DP): as in Fig. 9, even very large epsilon defeats this attack.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Sequence

from rerokit._validate import check_int, check_positive, check_probability
from rerokit.experiments._outputs import output_dir, pyplot, write_csv

__all__ = ["run_dpgd_sweep", "CSV_FIELDS", "DEFAULT_EPSILONS"]

DEFAULT_EPSILONS = (1.0, 10.0, 100.0, 1000.0, 10000.0)

CSV_FIELDS = ("epsilon", "delta", "clip", "noise_multiplier", "mse", "mse_ci_low", "mse_ci_high", "nn_oracle_mse",
              "success", "success_rate", "kl", "nn_oracle_kl", "released_model_accuracy", "shadow_models",
              "fixed_size", "epochs", "targets", "seed")


def run_dpgd_sweep(
    out_dir: str | Path, epsilons: Sequence[float] = DEFAULT_EPSILONS,
    *,
    include_nonprivate: bool = True, dataset="digits",
    config: "ReconnConfig | None" = None,
    seed: int = 0,
    options: "RunOptions | None" = None,
) -> list[dict[str, Any]]:
    """Fig. 9 of Balle et al. (2022): RecoNN MSE vs epsilon of full-batch DP-GD. Every epsilon uses
    the same ``seed``: the same split, shadow targets and initialisation (common random numbers
    across epsilon).

    Args:
        out_dir: the output folder (created): ``reconn_dpgd.csv``, ``.png`` and ``.jsonl``.
        epsilons: the epsilons of DP-GD, each > 0.
        include_nonprivate: also run without DP (the first row, epsilon = inf); without it
            ``epsilons`` must not be empty.
        dataset, seed: as in :func:`rerokit.experiments.reconn.run_reconn`.
        config: the attack's settings (:class:`rerokit.experiments.reconn.ReconnConfig`; its
            ``epsilon`` is replaced by each of ``epsilons``, its ``delta`` and ``clip`` are DP-GD's).
        options: :class:`rerokit.executors.RunOptions`: ``resume`` skips the epsilons already in
            ``reconn_dpgd.jsonl`` (same settings); ``progress``, ``executor`` (one serves every
            epsilon) and ``device`` as in ``run_reconn`` (``out`` is not used: the files go to
            ``out_dir``).

    Returns:
        The CSV rows (:data:`CSV_FIELDS`; the non-private row first, epsilon = inf).

    Raises:
        ValueError: if a setting is out of range, ``out_dir`` cannot be written or the log cannot
            be resumed.
    """
    import dataclasses

    from rerokit.executors import RunOptions, get_executor
    from rerokit.experiments.records import Bool, DictOf, Int, Nullable, Num, TrialLog
    from rerokit.experiments.reconn import ReconnConfig, run_reconn
    from rerokit.training.devices import resolve_device

    base = ReconnConfig() if config is None else config
    opts = RunOptions() if options is None else options
    shadow_models, fixed_size, epochs, targets = base.shadow_models, base.fixed_size, base.epochs, base.targets
    delta, clip = base.delta, base.clip
    resume, progress, executor, device = opts.resume, opts.progress, opts.executor, opts.device

    eps_list = [check_positive(f"epsilons[{i}]", e) for i, e in enumerate(epsilons)]
    if not eps_list and not include_nonprivate:
        raise ValueError("epsilons must be non-empty (or include_nonprivate=True)")
    delta = check_probability("delta", delta, high_open=True)
    clip = check_positive("clip", clip)
    seed = check_int("seed", seed, minimum=0)
    resolve_device(device)
    ex = get_executor(executor, workers=opts.workers, address=opts.address)
    out = output_dir(out_dir)
    # the attack's further settings (those not in the columns above) that differ from the defaults
    listed = {"shadow_models", "fixed_size", "epochs", "targets", "delta", "clip", "epsilon"}
    reconn_kwargs = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)
                     if f.name not in listed and getattr(base, f.name) != f.default}
    if isinstance(dataset, str):
        from rerokit.data import load_dataset

        dataset = load_dataset(dataset)
    settings = dict(figure="balle2022_fig9", dataset=dataset.name, epsilons=eps_list,
                    include_nonprivate=bool(include_nonprivate), shadow_models=shadow_models, fixed_size=fixed_size,
                    epochs=epochs, targets=targets, delta=delta, clip=clip, seed=seed,
                    reconn_kwargs={k: (list(v) if isinstance(v, tuple) else v) for k, v in reconn_kwargs.items()})
    cells: list[float | None] = ([None] if include_nonprivate else []) + eps_list
    num = Nullable(Num())  # inf is written as null
    row_schema = DictOf(fields={**{k: num for k in CSV_FIELDS}, "success": Bool,
                                **{k: Int(minimum=0) for k in ("shadow_models", "fixed_size", "epochs", "targets",
                                                               "seed")}})
    log = TrialLog(out / "reconn_dpgd.jsonl", settings, resume=resume, trials=len(cells), schema={"row": row_schema})
    try:
        rows: list[dict[str, Any]] = []
        for i, eps in enumerate(cells):
            if i in log.done:
                rows.append(log.trials[i]["row"])
                continue
            if progress:
                print(f"[reconn_dpgd] epsilon = {'inf' if eps is None else eps} ({i + 1}/{len(cells)})", file=sys.stderr,
                      flush=True)
            res = run_reconn(dataset, dataclasses.replace(base, epsilon=eps), seed=seed,
                             options=RunOptions(progress=progress, executor=ex, device=device))
            d = res.to_dict()
            row = dict(epsilon=math.inf if eps is None else eps, delta=delta if eps is not None else None,
                       clip=clip if eps is not None else None, noise_multiplier=d["noise_multiplier"], mse=d["mse"],
                       mse_ci_low=d["mse_ci"][0], mse_ci_high=d["mse_ci"][1], nn_oracle_mse=d["nn_oracle_mse"],
                       success=d["success"], success_rate=d["success_rate"], kl=d["kl"], nn_oracle_kl=d["nn_oracle_kl"],
                       released_model_accuracy=d["released_model_accuracy"], shadow_models=shadow_models,
                       fixed_size=fixed_size, epochs=epochs, targets=targets, seed=seed)
            log.append(i, {"row": {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in row.items()}})
            rows.append(row)
    finally:
        log.close()
        if ex is not executor:
            ex.close()
    rows = [{**r, "epsilon": math.inf if r["epsilon"] is None else r["epsilon"]} for r in rows]
    write_csv(out / "reconn_dpgd.csv", rows, CSV_FIELDS)
    _plot(rows, out / "reconn_dpgd.png")
    return rows


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    plt = pyplot()

    priv = sorted((r for r in rows if math.isfinite(r["epsilon"])), key=lambda r: r["epsilon"])
    nonpriv = [r for r in rows if not math.isfinite(r["epsilon"])]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    if priv:
        e = [r["epsilon"] for r in priv]
        m = [r["mse"] for r in priv]
        err = [[r["mse"] - r["mse_ci_low"] for r in priv], [r["mse_ci_high"] - r["mse"] for r in priv]]
        ax.errorbar(e, m, yerr=err, marker="o", color="C0", label="RecoNN MSE (DP-GD)")
        ax.set_xscale("log")
    orc = rows[0]["nn_oracle_mse"]
    ax.axhline(orc, color="C2", ls="--", label=f"NN oracle ({orc:.4f})")
    if nonpriv:
        ax.axhline(nonpriv[0]["mse"], color="C3", ls=":", label=f"no DP ({nonpriv[0]['mse']:.4f})")
    ax.set_xlabel("epsilon (delta = %g)" % (priv[0]["delta"] if priv else 1e-5))
    ax.set_ylabel("mean reconstruction MSE")
    if priv:
        ax2 = ax.twinx()
        ax2.plot([r["epsilon"] for r in priv], [r["released_model_accuracy"] for r in priv], marker="s", color="C1",
                 alpha=0.7, label="released model test accuracy")
        ax2.set_ylabel("test accuracy")
        ax2.set_ylim(0, 1)
        ax2.legend(loc="lower right", fontsize=7)
    ax.legend(loc="upper right", fontsize=7)
    ax.set_title("RecoNN vs DP-GD (Balle et al. 2022, Fig. 9)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
