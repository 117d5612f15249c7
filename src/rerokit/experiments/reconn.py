"""The RecoNN experiment end to end (Balle et al. 2022, Sec. IV-V): :func:`run_reconn`.

Dataset split, shadow models and released models (trained in blocks of ``chunk_size`` models on
any executor: :mod:`rerokit.executors`), the reconstructor, the evaluation against the
nearest-neighbour oracle and the KL metric, and the resumable per-target log. The attack's
pieces (split, shadow targets, model training, reconstructor, metrics) are in
:mod:`rerokit.attacks.reconn`.

Blocks: shadow (and released) model k is trained with the initialisation and noise it has in
the whole run (they depend on (seed, k) only), block b holding models [b B, (b + 1) B) with B =
``chunk_size`` (default: the MLP engine's chunk for the shared D-, recorded in the settings), each
block with a fixed thread count: the local executor and Ray workers give the same models bit for
bit. The reconstructor, the classifier of the KL metric and the evaluation run in this process.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from rerokit._validate import check_choice, check_instance, check_int, check_nonnegative, check_positive, check_probability
from rerokit.attacks import reconn as R
from rerokit.attacks.nn_oracle import nn_oracle
from rerokit.bounds.gaussian import noise_multiplier_full_batch
from rerokit.training.models import ACTIVATIONS
from rerokit.training.settings import DPSGDSettings, EngineOptions, MLPSpec

__all__ = ["ReconnConfig", "ReconnResult", "run_reconn", "train_models_in_blocks"]


def _log(msg: str, progress: bool) -> None:
    if progress:
        print(f"[reconn] {msg}", file=sys.stderr, flush=True)



@dataclass
class ReconnResult:
    """Outcome of :func:`run_reconn` on held-out released models.

    ``mse``: mean over evaluation targets of the reconstruction MSE; ``nn_oracle_mse``: mean of
    the nearest-neighbour oracle MSE (Sec. V-B(d)); ``success``: ``mse < nn_oracle_mse``
    (Table II's criterion); ``success_rate``: fraction of targets with MSE below their own oracle
    MSE; ``kl`` / ``nn_oracle_kl``: mean KL metric of the reconstructions / of the oracle's
    guesses. Per-target arrays in ``per_target``; ``reconstructions`` (m, d) and ``targets``.
    """

    mse: float
    nn_oracle_mse: float
    success: bool
    success_rate: float
    kl: float
    nn_oracle_kl: float
    per_target: dict[str, np.ndarray]
    targets: np.ndarray
    reconstructions: np.ndarray
    shape: tuple[int, ...]
    settings: dict[str, Any]
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no per-target arrays)."""
        from rerokit.attacks.result import AttackResult

        m = AttackResult.from_values(self.per_target["mse"], seed=self.settings.get("seed"), metric="mse", support=(0.0, math.inf))
        s = AttackResult.from_successes(self.per_target["success"], seed=self.settings.get("seed"))
        return {
            "mse": self.mse,
            "mse_ci": [m.interval[0], m.interval[1]],
            "nn_oracle_mse": self.nn_oracle_mse,
            "success": bool(self.success),
            "success_rate": self.success_rate,
            "success_rate_ci": [s.interval[0], s.interval[1]],
            "kl": self.kl,
            "nn_oracle_kl": self.nn_oracle_kl,
            "targets": int(self.targets.shape[0]),
            **self.extras,
            "settings": dict(self.settings),
        }


@dataclass(frozen=True)
class ReconnConfig:
    """Settings of a RecoNN attack (Balle et al. 2022, Sec. IV-V; defaults of Table V).

    Attributes:
        shadow_models: k, the number of shadow models (>= 2).
        fixed_size, targets: |D_-| and the number of evaluation targets
            (:func:`rerokit.attacks.reconn.split_dataset`).
        epochs: full-batch GD steps of every model.
        init: ``"known"`` or ``"random"`` initialisation (:func:`rerokit.attacks.reconn.train_models`).
        epsilon: DP-GD at (epsilon, delta)-DP over the ``epochs`` steps; None: no DP.
        delta: delta in (0, 1) of DP-GD.
        clip: the clipping norm C > 0 of DP-GD.
        hidden, activation, lr, momentum: the models (as in :func:`rerokit.attacks.reconn.gd_many`).
        reconstructor_hidden, reconstructor_epochs, reconstructor_lr, reconstructor_batch_size,
            optimizer: ``hidden``, ``epochs``, ``lr``, ``batch_size`` and ``optimizer`` of
            :func:`rerokit.attacks.reconn.train_reconstructor`.
        compile: ``torch.compile`` the training step.

    Values are checked by :func:`run_reconn` (each error names its field).
    """

    shadow_models: int = 2000
    fixed_size: int = 500
    targets: int = 100
    epochs: int = 100
    init: str = "known"
    epsilon: float | None = None
    delta: float = 1e-5
    clip: float = 1.0
    hidden: Sequence[int] = (10,)
    activation: str = "elu"
    lr: float = 0.2
    momentum: float = 0.9
    reconstructor_hidden: Sequence[int] = (512, 512)
    reconstructor_epochs: int = 60
    reconstructor_lr: float = 1e-3
    reconstructor_batch_size: int = 128
    optimizer: str = "adam"
    compile: bool = False


def run_reconn(
    dataset="digits",
    config: ReconnConfig | None = None,
    *,
    seed: int = 0,
    data_path: str | None = None,
    options: "RunOptions | None" = None,
) -> ReconnResult:
    """The RecoNN attack (Balle et al. 2022, Sec. IV) and its evaluation (Sec. V-B).

    Splits ``dataset`` (a name for :func:`rerokit.data.load_dataset` or a ``Dataset``) into D_-
    (``fixed_size``), ``targets`` held-out evaluation targets and a shadow pool; trains
    ``shadow_models`` shadow models and one released model per evaluation target with the same
    algorithm (``epochs`` full-batch GD steps, ``lr``, ``momentum``; ``init`` known or random;
    with ``epsilon``: DP-GD with ``clip`` and the noise multiplier for (epsilon, delta)-DP over
    ``epochs`` full-batch steps, fresh noise per model); trains the reconstructor on the shadow
    models and evaluates it on the released models against the nearest-neighbour oracle over
    D_- u D_bar (all shadow targets used, shifted ones included) and with the KL metric.
    ``log_path``: one JSON line per evaluation target (:class:`TrialLog`, header = the settings
    incl. ``seed``), opened (and checked against ``resume``/the settings) before any training but
    written only once the reconstructor is evaluated: the unit of resumption is the whole attack
    (the reconstructor needs every shadow model). The run is deterministic given ``seed``, so a
    resumed run recomputes everything and appends only the targets missing from the file.

    Args:
        dataset: a name for :func:`rerokit.data.load_dataset` or a :class:`rerokit.data.Dataset`.
        config: the attack's settings (:class:`ReconnConfig`; default ``ReconnConfig()``).
        seed: the run's seed (>= 0).
        data_path: the local file or folder of ``dataset`` (MNIST, CIFAR-10), or None.
        options: how the run is executed and recorded (:class:`rerokit.executors.RunOptions`):
            ``out`` the JSON-lines file of the per-target records (or None), ``resume``/``overwrite``,
            ``chunk_size`` models per block (default :func:`default_models_block`; recorded in the
            settings with ``device``), ``progress``, ``executor`` (where the blocks of shadow and
            released models train; the same models bit for bit) and ``device``.

    The fields of ``config``, as used below:
        shadow_models: k, the number of shadow models (>= 2).
        fixed_size, targets: |D_-| and the number of evaluation targets
            (:func:`rerokit.attacks.reconn.split_dataset`).
        epochs: full-batch steps of every model (>= 1).
        seed: the run's seed (>= 0): split, shadow targets, initialisation (``init_seed``), noise.
        init: ``"known"`` or ``"random"`` initialisation (:func:`rerokit.attacks.reconn.train_models`).
        epsilon: DP-GD at (epsilon, delta)-DP over the ``epochs`` steps; None: no DP.
        delta: delta in (0, 1) of DP-GD.
        clip: the clipping norm C > 0 of DP-GD.
        hidden, activation, lr, momentum: the models (as in :func:`rerokit.attacks.reconn.gd_many`).
        reconstructor_hidden, reconstructor_epochs, reconstructor_lr, reconstructor_batch_size,
            optimizer: ``hidden``, ``epochs``, ``lr``, ``batch_size`` and ``optimizer`` of
            :func:`rerokit.attacks.reconn.train_reconstructor`.
        chunk_size: models per block (default :func:`default_models_block`; recorded in the
            settings with ``device``).
        compile: ``torch.compile`` the training step.

    Returns:
        The :class:`ReconnResult`.

    Raises:
        ValueError: if a setting is out of range, or ``log_path`` cannot be opened or resumed
            (before any training).
    """
    from rerokit.data import load_dataset
    from rerokit.executors import RunOptions, get_executor
    from rerokit.training.devices import resolve_device

    c = check_instance("config", config, ReconnConfig, ReconnConfig)
    o = check_instance("options", options, RunOptions, RunOptions)
    shadow_models, fixed_size, targets, epochs, init = c.shadow_models, c.fixed_size, c.targets, c.epochs, c.init
    epsilon, delta, clip, hidden, activation, lr, momentum = (c.epsilon, c.delta, c.clip, c.hidden, c.activation,
                                                              c.lr, c.momentum)
    reconstructor_hidden, reconstructor_epochs = c.reconstructor_hidden, c.reconstructor_epochs
    reconstructor_lr, reconstructor_batch_size, optimizer, compile = (c.reconstructor_lr, c.reconstructor_batch_size,
                                                                      c.optimizer, c.compile)
    log_path, resume, overwrite, progress = o.out, o.resume, o.overwrite, o.progress
    executor, device, chunk_size = o.executor, o.device, o.chunk_size
    seed = check_int("seed", seed, minimum=0)
    shadow_models = check_int("shadow_models", shadow_models, minimum=2)
    epochs = check_int("epochs", epochs, minimum=1)
    check_choice("init", init, ("known", "random"))
    check_choice("activation", activation, tuple(ACTIVATIONS))
    check_choice("optimizer", optimizer, ("adam", "rmsprop"))
    lr = check_positive("lr", lr)
    momentum = check_nonnegative("momentum", momentum)
    if not momentum < 1.0:
        raise ValueError(f"momentum must be a number in [0, 1), got {momentum!r}")
    hidden = tuple(check_int(f"hidden[{i}]", h, minimum=1) for i, h in enumerate(hidden))
    reconstructor_hidden = tuple(check_int(f"reconstructor_hidden[{i}]", h, minimum=1)
                                 for i, h in enumerate(reconstructor_hidden))
    reconstructor_epochs = check_int("reconstructor_epochs", reconstructor_epochs, minimum=1)
    reconstructor_lr = check_positive("reconstructor_lr", reconstructor_lr)
    reconstructor_batch_size = check_int("reconstructor_batch_size", reconstructor_batch_size, minimum=1)
    if chunk_size is not None:
        chunk_size = check_int("chunk_size", chunk_size, minimum=1)
    ex = get_executor(executor, workers=o.workers, address=o.address)
    dev = resolve_device(device)
    device = dev.type if dev.index is None else str(dev)
    sigma = 0.0
    if epsilon is not None:
        eps = check_positive("epsilon", epsilon)
        delta = check_probability("delta", delta, high_open=True)
        clip = check_positive("clip", clip)
        sigma = noise_multiplier_full_batch(eps, delta, epochs)
    ds = load_dataset(dataset, path=data_path) if isinstance(dataset, str) else dataset
    split = R.split_dataset(ds, fixed_size, targets, seed)
    if chunk_size is None:
        chunk_size = default_models_block(split.X_fixed.shape[0], hidden, split.num_classes)
    settings = dict(
        dataset=ds.name, shadow_models=shadow_models, fixed_size=int(split.X_fixed.shape[0]),
        targets=int(split.X_eval.shape[0]), epochs=epochs, seed=seed, init=init, epsilon=epsilon,
        delta=delta if epsilon is not None else None, clip=clip if epsilon is not None else None,
        noise_multiplier=sigma, hidden=list(hidden), activation=activation, lr=lr, momentum=momentum,
        reconstructor_hidden=list(reconstructor_hidden), reconstructor_epochs=reconstructor_epochs,
        reconstructor_lr=reconstructor_lr, reconstructor_batch_size=reconstructor_batch_size,
        optimizer=optimizer, init_seed=seed, chunk_size=chunk_size, device=device,
    )
    log = None
    if log_path is not None:
        from rerokit.experiments.records import Bool, Int, Num, TrialLog

        # opened before any training: an existing file without ``resume``, one written with other
        # settings, or one with records that are not targets of this run, is refused at once
        # (ValueError), not after minutes of work; the log holds its lock until the run ends
        schema = {"label": Int(minimum=0), "mse": Num(minimum=0), "nn_oracle_mse": Num(minimum=0),
                  "success": Bool, "kl": Num(), "nn_oracle_kl": Num()}
        log = TrialLog(log_path, settings, resume=resume, trials=settings["targets"], schema=schema,
                       overwrite=overwrite)
    try:
        Xs, ys, n_shift = R.shadow_targets(split.X_pool, split.y_pool, shadow_models, split.shape, seed)
        kw = dict(model=MLPSpec(hidden, activation, split.num_classes),
                  settings=DPSGDSettings(noise_multiplier=sigma, clip=clip if epsilon is not None else None, steps=epochs,
                                         lr=lr, momentum=momentum),
                  init=init, init_seed=seed, compile=compile, block_size=chunk_size, executor=ex, device=device)
        _log(f"training {shadow_models} shadow models (|D-|={split.X_fixed.shape[0]}, {epochs} epochs, init={init}, "
             f"sigma={sigma:.4g})", progress)
        # shadow and released models: different seeds for random init / DP noise (the adversary
        # does not know the released model's randomness)
        ss = np.random.SeedSequence([seed, 4]).generate_state(2, np.uint64) >> np.uint64(1)
        th_shadow = train_models_in_blocks(R.ReconData(split.X_fixed, split.y_fixed, Xs, ys), seed=int(ss[0]),
                                           progress=progress, desc="shadow models", **kw)
        _log(f"training {split.X_eval.shape[0]} released models", progress)
        th_rel = train_models_in_blocks(R.ReconData(split.X_fixed, split.y_fixed, split.X_eval, split.y_eval),
                                        seed=int(ss[1]), **kw)
        _log("training the reconstructor", progress)
        phi = R.train_reconstructor(th_shadow, torch.as_tensor(Xs), hidden=reconstructor_hidden,
                                  epochs=reconstructor_epochs, batch_size=reconstructor_batch_size,
                                  lr=reconstructor_lr, optimizer=optimizer, seed=seed, progress=progress)
        with torch.no_grad():
            rec = phi(th_rel).numpy().astype(np.float64)
            rec_train = phi(th_shadow[: min(1000, shadow_models)]).numpy()
        Z = split.X_eval.astype(np.float64)
        mse = ((rec - Z) ** 2).mean(1)
        train_mse = float(((rec_train - Xs[: rec_train.shape[0]]) ** 2).mean())
        pool = np.concatenate([split.X_fixed, split.X_pool, Xs[shadow_models - n_shift :]])
        orc = nn_oracle(Z, pool)
        clf_X = np.concatenate([split.X_fixed, split.X_pool])
        clf_y = np.concatenate([split.y_fixed, split.y_pool])
        clf = R.train_kl_classifier(clf_X, clf_y, split.num_classes, seed=seed)
        with torch.no_grad():
            clf_acc = float((clf(torch.as_tensor(split.X_eval)).argmax(-1).numpy() == split.y_eval).mean())
        kl = R.kl_metric(clf, Z, rec)
        kl_orc = R.kl_metric(clf, Z, pool[orc.index])
        succ = mse < orc.mse
        per = dict(mse=mse, nn_oracle_mse=orc.mse, success=succ, kl=kl, nn_oracle_kl=kl_orc, nn_index=orc.index)
        if log is not None:
            for i in range(Z.shape[0]):
                if i in log.done:
                    continue
                log.append(i, {"label": int(split.y_eval[i]), "mse": float(mse[i]), "nn_oracle_mse": float(orc.mse[i]),
                               "success": bool(succ[i]), "kl": float(kl[i]), "nn_oracle_kl": float(kl_orc[i])})
        extras = dict(noise_multiplier=sigma, shadow_shifted=n_shift, shadow_train_mse=train_mse,
                      classifier_accuracy=clf_acc, released_model_accuracy=_accuracy(th_rel, split, hidden, activation))
        res = ReconnResult(
            mse=float(mse.mean()), nn_oracle_mse=orc.mean, success=bool(mse.mean() < orc.mean),
            success_rate=float(succ.mean()), kl=float(kl.mean()), nn_oracle_kl=float(kl_orc.mean()), per_target=per,
            targets=split.X_eval, reconstructions=rec.astype(np.float32), shape=split.shape, settings=settings,
            extras=extras,
        )
        _log(f"mse={res.mse:.5f} nn_oracle_mse={res.nn_oracle_mse:.5f} success={res.success}", progress)
        return res
    finally:
        if log is not None:
            log.close()
        if ex is not executor:
            ex.close()


@dataclass(frozen=True)
class _ModelsJob:
    """The inputs of every block of one :func:`train_models_in_blocks` call (sent once to each worker)."""

    data: R.ReconData
    kw: dict[str, Any]
    compile: bool
    device: str


def _models_block(job: _ModelsJob, block) -> Any:
    """Models block.lo..block.hi-1 of the run (one item: the block's (hi - lo, P) parameters)."""
    options = EngineOptions(chunk_size=block.hi - block.lo, compile=job.compile, device=job.device)
    theta = R.train_models(job.data, models=(block.lo, block.hi), options=options, **job.kw)
    yield block.index, theta


def default_models_block(fixed_size: int, hidden: Sequence[int], num_classes: int) -> int:
    """The default block of models (``chunk_size``): the MLP engine's chunk for a shared D- of
    ``fixed_size`` points (:func:`rerokit.training.engine.shared_chunk_size`).

    Args:
        fixed_size: |D-|.
        hidden: hidden widths of the released MLP.
        num_classes: its outputs.

    Returns:
        Models per block (>= 1), e.g. 418 for |D-| = 500 and hidden (10,).
    """
    from rerokit.training.engine import shared_chunk_size

    return shared_chunk_size(int(fixed_size) + 1, max([*hidden, int(num_classes)]))


def train_models_in_blocks(data: R.ReconData, *, block_size: int, executor: Any = "local", device: str = "cpu",
                           compile: bool = False, progress: bool = False, desc: str = "models",
                           **kw: Any) -> torch.Tensor:
    """:func:`rerokit.attacks.reconn.train_models` for all targets of ``data``, in blocks of
    ``block_size`` models on ``executor`` (equal to one call with ``chunk_size=block_size``).

    Args:
        data: the :class:`rerokit.attacks.reconn.ReconData` (D- and one target per model, K rows).
        block_size: models per block (each block one engine chunk).
        executor: ``"local"``, ``"ray"`` or a :class:`rerokit.executors.Executor`.
        device: where the models train.
        compile: ``torch.compile`` the training step.
        progress: a progress bar on stderr counting finished models (``desc``).
        **kw: the other keyword arguments of ``train_models`` (model, settings, init, init_seed, seed).

    Returns:
        (K, P) parameters on the CPU.
    """
    from rerokit.executors import ProgressBar, get_executor, plan_blocks, run_blocks

    K = data.models
    B = check_int("chunk_size", block_size, minimum=1)
    if "models" in kw or "options" in kw:
        raise TypeError("train_models_in_blocks chooses the models of each block and their options itself")
    arrays = R.ReconData(*(np.asarray(a) for a in (data.X_fixed, data.y_fixed, data.X_targets, data.y_targets)))
    job = _ModelsJob(arrays, dict(kw), bool(compile), str(device))
    blocks = plan_blocks(K, B)
    out: dict[int, torch.Tensor] = {}
    ex = get_executor(executor)
    try:
        bar = ProgressBar(desc=desc, unit="model", total=K, weight=lambda theta: int(theta.shape[0]), leave=False)
        run_blocks(ex, _models_block, job, blocks, out.__setitem__, progress=bar if progress else None,
                   gpu=job.device.startswith("cuda"))
    finally:
        if ex is not executor:
            ex.close()
    return torch.cat([out[b.index] for b in blocks])



def _accuracy(thetas: torch.Tensor, split: R.ReconSplit, hidden, activation) -> float:
    """Mean test accuracy of the released models on the shadow pool (points none of them saw)."""
    fm = R.functional_mlp(split.X_fixed.shape[1], hidden, split.num_classes, activation)
    X = torch.as_tensor(split.X_pool[:1000])
    y = torch.as_tensor(split.y_pool[:1000])
    with torch.no_grad():
        acc = [float((fm.logits(t, X).argmax(-1) == y).float().mean()) for t in thetas[:50]]
    return float(np.mean(acc))

