"""Reconstructor-network (RecoNN) attack of Balle et al. (2022), "Reconstructing Training Data
with Informed Adversaries", Sec. IV-V.

Threat model (Balle et al. Def. 1): the adversary knows the fixed dataset D_-, the training
algorithm A (here full-batch gradient descent with momentum on the cross-entropy, Table V) and,
by default, the initial parameters theta_0 ("known initialisation"). Writing
A_{D_-}(z) = A(D_- u {z}), the attack (Sec. IV-B) is

1. shadow models: for shadow targets z_bar_1..z_bar_k (side knowledge D_bar, disjoint from D_-)
   train theta_bar_i = A_{D_-}(z_bar_i)                           (:func:`train_models`);
2. train a reconstructor phi : Theta -> Z on S = {(theta_bar_i, z_bar_i)} (:func:`train_reconstructor`):
   an MLP on the flattened parameters, each coordinate standardised with the training-set mean and
   standard deviation (Sec. V-A(c)), sigmoid outputs in [0, 1]^d, loss MAE + MSE;
3. reconstruct z_hat = phi(theta) from a released model theta = A_{D_-}(z) for a held-out z.

Evaluation (Sec. V-B): per target the MSE ``mean_j (z_j - z_hat_j)^2``, compared with the
nearest-neighbour oracle (:mod:`rerokit.attacks.nn_oracle`) over the adversary's pool
D_- u D_bar; the KL metric KL(p(.|z) || p(.|z_hat)) between the class probabilities of a
classifier trained here (the paper uses a LeNet on MNIST; we train a small MLP on the non-target
part of the dataset). The attack succeeds (Table II) when the mean reconstruction MSE is below
the mean oracle MSE; we also report the fraction of targets reconstructed below their own oracle.

Released/shadow model training. Every model, private or not, is trained by the one DP-SGD
trainer :func:`rerokit.training.train_dpsgd_many` with ``sample_rate=1`` on the MLP engine
(:mod:`rerokit.training.mlp`): the fixed set D_- is one block of columns shared by all models
(never copied per model; its first layer for all K models is one matrix product
``(K*h, d+1) @ (d+1, n)``, bias folded in), each model's own target one more column, and the
backward pass is written out (softmax - onehot; closed-form activation derivatives), so no
per-sample gradients are formed. Non-private GD (the default, :func:`gd_many`) is the case
``clip=None``, ``noise_multiplier=0``; checked against a per-model ``torch.func.grad`` loop in
the tests. DP-GD (Sec. VI-D: per-sample clipping to C = 1, Gaussian noise for
(epsilon, 1e-5)-DP, fresh noise for every released and shadow model, unknown to the adversary)
uses the exact full-batch noise multiplier
:func:`rerokit.bounds.gaussian.noise_multiplier_full_batch` (T Gaussian steps = one Gaussian
mechanism with mu = sqrt(T)/sigma; cross-checked against the PLD accountant of
:func:`rerokit.bounds.calibrate.noise_multiplier_for_epsilon`, add/remove adjacency; re-exported
here with :func:`gaussian_delta`).

This module holds the attack's pieces; the experiment end to end (dataset split, shadow and
released models - in blocks, on any executor -, reconstructor, evaluation, the resumable
per-target log) is :func:`rerokit.experiments.reconn.run_reconn`.

Deviations from the paper, scaled for CPU and the 8x8 digits: the released model is the digits
MLP 64-10-10 (ELU) instead of 784-10-10, initialised with PyTorch's default (not Haiku's LeCun
normal); the reconstructor defaults to two hidden layers of 512 (paper: 1,000) trained with Adam
(paper: RMSProp, lr 1e-3, batch 128). digits has only 1,797 images, so when more shadow targets
are requested than the shadow pool holds, the extra targets are pool images shifted by one pixel
(:func:`shadow_targets`); every shadow target used joins the oracle's pool (a stronger oracle).

Measured (``rerokit attack reconn --shadow-models 10000 --fixed-size 500 --epochs 100 --seed 0``,
1 thread, 2 min 19 s in all): mse 0.0090 vs NN oracle 0.0185, 93/100 targets below their own
oracle (Balle et al. Table II, MNIST: 0.0089 vs 0.0232). Random initialisation (K = 2,000):
mse 0.134, no target below its oracle (Table II: 0.0695, failure).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rerokit._validate import check_choice, check_instance, check_int, check_positive
from rerokit.bounds.gaussian import gaussian_delta, noise_multiplier_full_batch  # noqa: F401 - re-exported
from rerokit.training.engine import train_dpsgd_many
from rerokit.training.settings import DPSGDSettings, EngineOptions, MLPSpec

__all__ = [
    "ReconSplit",
    "ReconData",
    "TABLE_V",
    "split_dataset",
    "shadow_targets",
    "gd_many",
    "train_models",
    "Reconstructor",
    "train_reconstructor",
    "train_kl_classifier",
    "kl_metric",
    "save_reconstructions_png",
    "gaussian_delta",
    "noise_multiplier_full_batch",
]

# --------------------------------------------------------------------------------------------
# data: D_-, shadow pool D_bar, evaluation targets


@dataclass(frozen=True)
class ReconSplit:
    """Disjoint parts of a dataset (Balle et al. Sec. V-A(a)): the fixed set D_- (``X_fixed``,
    ``y_fixed``), the shadow pool D_bar (``X_pool``, ``y_pool``) and the held-out evaluation
    targets (``X_eval``, ``y_eval``). Images are flattened to (n, d) float32 in [0, 1];
    ``shape`` is one image's shape (C, H, W)."""

    X_fixed: np.ndarray
    y_fixed: np.ndarray
    X_pool: np.ndarray
    y_pool: np.ndarray
    X_eval: np.ndarray
    y_eval: np.ndarray
    shape: tuple[int, ...]
    num_classes: int


def split_dataset(dataset, fixed_size: int, n_eval: int, seed: int) -> ReconSplit:
    """Random disjoint split of a :class:`rerokit.data.Dataset` into D_- (``fixed_size``
    points), ``n_eval`` evaluation targets and the remaining shadow pool (at least one point).

    Args:
        dataset: the :class:`rerokit.data.Dataset`.
        fixed_size: |D_-| (>= 1, leaving room for a target and a pool point).
        n_eval: the number of evaluation targets (>= 1; named ``targets`` in messages).
        seed: the split's seed (>= 0; the permutation uses ``SeedSequence([seed, 1])``).

    Returns:
        The :class:`ReconSplit`.

    Raises:
        ValueError: if a size or the seed is out of range.
    """
    n = int(dataset.n)
    fixed_size = check_int("fixed_size", fixed_size, minimum=1, maximum=max(1, n - 2))
    n_eval = check_int("targets", n_eval, minimum=1, maximum=max(1, n - fixed_size - 1))
    seed = check_int("seed", seed, minimum=0)
    perm = np.random.default_rng(np.random.SeedSequence([seed, 1])).permutation(n)
    Xf = dataset.flat.astype(np.float32)
    y = np.asarray(dataset.y, dtype=np.int64)
    a, b = perm[:fixed_size], perm[fixed_size : fixed_size + n_eval]
    c = perm[fixed_size + n_eval :]
    return ReconSplit(Xf[a], y[a], Xf[c], y[c], Xf[b], y[b], tuple(dataset.sample_shape), int(dataset.num_classes))


def _shift(img: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """Translate (C, H, W) images by (dy, dx) pixels, filling with zeros (the background)."""
    out = np.zeros_like(img)
    H, W = img.shape[-2:]
    ys, yd = (slice(0, H - dy), slice(dy, H)) if dy >= 0 else (slice(-dy, H), slice(0, H + dy))
    xs, xd = (slice(0, W - dx), slice(dx, W)) if dx >= 0 else (slice(-dx, W), slice(0, W + dx))
    out[..., yd, xd] = img[..., ys, xs]
    return out


_SHIFTS = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0)]


def shadow_targets(X_pool: np.ndarray, y_pool: np.ndarray, k: int, shape: Sequence[int], seed: int):
    """``k`` shadow targets from the pool D_bar: the pool points in random order, then (if
    ``k`` exceeds the pool) pool points translated by one pixel in one of 8 directions, each
    (point, shift) pair used at most once.

    Balle et al. (Sec. VI-B, Fig. 6) find the shadow targets need not come from the target
    distribution; shifted digits are a cheap way to get more than the 1,797 images digits has.

    Args:
        X_pool: the pool D_bar, shape (m, d) (flattened images).
        y_pool: its labels, shape (m,).
        k: the number of shadow targets (named ``shadow_models`` in messages).
        shape: one image's shape (C, H, W); shifts only for images wider and taller than 1.
        seed: the draw's seed (>= 0; ``SeedSequence([seed, 2])``).

    Returns:
        ``(X (k, d) float32, y (k,) int64, n_shifted)``.

    Raises:
        ValueError: if ``k`` exceeds the pool and its shifts.
    """
    k = check_int("shadow_models", k, minimum=1)
    m = int(X_pool.shape[0])
    shape = tuple(int(s) for s in shape)
    cap = m * (1 + (len(_SHIFTS) if len(shape) == 3 and shape[-1] > 1 and shape[-2] > 1 else 0))
    if k > cap:
        raise ValueError(f"shadow_models must be <= {cap} (shadow pool of {m} points and its 1-pixel shifts), got {k}")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 2]))
    order = rng.permutation(m)
    take = min(k, m)
    X = [X_pool[order[:take]]]
    y = [y_pool[order[:take]]]
    n_shift = k - take
    if n_shift > 0:
        pairs = rng.choice(m * len(_SHIFTS), size=n_shift, replace=False)
        pi, si = pairs // len(_SHIFTS), pairs % len(_SHIFTS)
        imgs = X_pool[pi].reshape((n_shift,) + shape)
        out = np.empty_like(imgs)
        for s, (dy, dx) in enumerate(_SHIFTS):
            sel = si == s
            if sel.any():
                out[sel] = _shift(imgs[sel], dy, dx)
        X.append(out.reshape(n_shift, -1))
        y.append(y_pool[pi])
    return np.concatenate(X).astype(np.float32), np.concatenate(y).astype(np.int64), int(n_shift)


# --------------------------------------------------------------------------------------------
# released / shadow model training


TABLE_V = DPSGDSettings(noise_multiplier=0.0, clip=None, steps=100, lr=0.2, momentum=0.9)
"""Balle et al. 2022, Table V: full-batch GD (no noise, no clipping), 100 epochs, lr 0.2, momentum 0.9."""


@dataclass(frozen=True, eq=False)
class ReconData:
    """The data of K models ``theta_k = A(D_- u {z_k})``: the fixed set D_- shared by all of them
    and one target per model (Balle et al. 2022, Sec. IV-B). Arrays or tensors; images are
    flattened to (., d).

    Attributes:
        X_fixed: D_-, shape (n, ...) (n >= 0).
        y_fixed: its integer labels, shape (n,).
        X_targets: the per-model targets z_k, shape (K, ...) with the same d as ``X_fixed``.
        y_targets: their integer labels, shape (K,).
    """

    X_fixed: "np.ndarray | torch.Tensor"
    y_fixed: "np.ndarray | torch.Tensor"
    X_targets: "np.ndarray | torch.Tensor"
    y_targets: "np.ndarray | torch.Tensor"

    def __post_init__(self) -> None:
        shapes = [tuple(getattr(a, "shape", np.shape(a))) for a in (self.X_fixed, self.y_fixed, self.X_targets,
                                                                     self.y_targets)]
        (xf, yf, xt, yt) = shapes
        d = lambda sh: int(np.prod(sh[1:])) if len(sh) >= 1 else -1  # noqa: E731
        if (len(xf) < 2 or len(xt) < 2 or len(yf) != 1 or len(yt) != 1 or yf[0] != xf[0] or yt[0] != xt[0]
                or d(xf) != d(xt)):
            raise ValueError(f"X_fixed (n, d), y_fixed (n,), X_targets (K, d), y_targets (K,) must agree; got "
                             f"{xf}, {yf}, {xt}, {yt}")

    @property
    def models(self) -> int:
        """K, the number of models (targets)."""
        return len(self.y_targets)

    @property
    def dim(self) -> int:
        """d, the flattened dimension of one point."""
        sh = tuple(getattr(self.X_targets, "shape", np.shape(self.X_targets)))
        return int(np.prod(sh[1:]))

    def block(self, lo: int, hi: int) -> "ReconData":
        """The same D_- with targets lo..hi-1 only."""
        return ReconData(self.X_fixed, self.y_fixed, self.X_targets[lo:hi], self.y_targets[lo:hi])


def _check_full_batch(settings: DPSGDSettings, *, private: bool) -> DPSGDSettings:
    check_instance("settings", settings, DPSGDSettings)
    if settings.sample_rate != 1.0:
        raise ValueError(f"sample_rate must be 1 (full-batch training of every model), got {settings.sample_rate!r}")
    if not private and settings.private:
        raise ValueError("gd_many trains without privacy: settings must have noise_multiplier 0 and clip None "
                         "(DP-GD: train_models)")
    return settings


def _check_model(model: MLPSpec) -> MLPSpec:
    check_instance("model", model, MLPSpec)
    return model


def _linear(options: EngineOptions | None) -> EngineOptions:
    """``options`` with the MLP engine for ``method="auto"``."""
    if options is None:
        return EngineOptions(method="linear")
    check_instance("options", options, EngineOptions)
    return options.replace(method="linear") if options.method == "auto" else options


def gd_many(
    theta0: torch.Tensor,
    data: ReconData,
    *,
    model: MLPSpec = MLPSpec(),
    settings: DPSGDSettings = TABLE_V,
    options: EngineOptions | None = None,
) -> torch.Tensor:
    """K released/shadow models theta_k = A(D_- u {z_k}) by full-batch GD with momentum
    (Balle et al. 2022, Sec. V-A(b), Table V: cross-entropy, lr 0.2, momentum 0.9, 100 epochs),
    vectorised over models: the non-private case (``clip=None``, ``noise_multiplier=0``,
    ``sample_rate=1``) of :func:`rerokit.training.train_dpsgd_many` on the MLP engine, D_- one
    block shared by all models. Update (torch SGD convention):
    ``g = (1/(n+1)) sum_{z in D_- u {z_k}} grad l(theta, z)``, ``v <- momentum v + g``,
    ``theta <- theta - lr v``.

    Args:
        theta0: (P,) known initialisation shared by all models, or (K, P) one per model, in the
            flat layout of ``rerokit.training.FunctionalModel(make_mlp(d, hidden, c, activation))``.
        data: the :class:`ReconData`: D_- (``X_fixed`` (n, d), ``y_fixed`` (n,)), shared (never
            copied per model), and the per-model points (``X_targets`` (K, d), ``y_targets`` (K,)).
        model: the :class:`rerokit.training.settings.MLPSpec` (hidden, activation, num_classes).
        settings: the GD schedule (steps, lr, momentum) as a non-private
            :class:`rerokit.training.settings.DPSGDSettings` (noise_multiplier 0, clip None,
            sample_rate 1); default :data:`TABLE_V`.
        options: the :class:`rerokit.training.settings.EngineOptions`: ``chunk_size`` models
            trained together (default: about 2^21 activations at a time), ``compile``
            (``torch.compile`` the step: same result to float round-off), ``progress``,
            ``num_threads``, ``device`` (where the models train; the result is on the CPU). The
            method is the MLP engine (``"auto"`` means ``"linear"`` here).

    Returns:
        (K, P) float32 parameters. Raises ``ValueError`` naming ``lr`` if a model diverges.
    """
    model = _check_model(model)
    settings = _check_full_batch(settings, private=False)
    check_instance("data", data, ReconData)
    X_fixed = torch.as_tensor(data.X_fixed, dtype=torch.float32)
    X_fixed = X_fixed.reshape(X_fixed.shape[0], -1)
    y_fixed = torch.as_tensor(data.y_fixed, dtype=torch.long).reshape(-1)
    X_targets = torch.as_tensor(data.X_targets, dtype=torch.float32)
    X_targets = X_targets.reshape(X_targets.shape[0], -1)
    y_targets = torch.as_tensor(data.y_targets, dtype=torch.long).reshape(-1)
    num_classes = model.num_classes
    for nm, yy in (("y_fixed", y_fixed), ("y_targets", y_targets)):
        if yy.numel() and (int(yy.min()) < 0 or int(yy.max()) >= num_classes):
            raise ValueError(f"{nm} must hold labels in [0, {num_classes - 1}]")
    fm = functional_mlp(X_fixed.shape[1], model.hidden, num_classes, model.activation)
    theta0 = torch.as_tensor(theta0, dtype=torch.float32)
    r = train_dpsgd_many(fm, theta0, X_targets[:, None], y_targets[:, None], settings, seed=0,
                         shared=(X_fixed, y_fixed), options=_linear(options))
    return r.theta.cpu()


def functional_mlp(d: int, hidden: Sequence[int], c: int, activation: str):
    from rerokit.training import FunctionalModel, make_mlp

    return FunctionalModel(make_mlp(d, list(hidden), c, activation=activation))


def train_models(
    data: ReconData,
    *,
    model: MLPSpec = MLPSpec(),
    settings: DPSGDSettings = TABLE_V,
    init: str = "known", init_seed: int = 0,
    seed: int = 0,
    models: tuple[int, int] | None = None,
    options: EngineOptions | None = None,
) -> torch.Tensor:
    """theta_k = A(D_- u {z_k}) for every target z_k of ``data``: (K, P).

    ``init="known"``: every model starts from theta_0 = ``FunctionalModel.init_flat(init_seed)``
    (the adversary knows it, Balle et al. Sec. V-A(b)); ``init="random"``: model k starts from
    ``init_flat(s_k)`` with s_k drawn from ``seed`` (Sec. VI-B(e)). Private ``settings``
    (``noise_multiplier > 0`` or a ``clip``): full-batch DP-GD through
    :func:`rerokit.training.train_dpsgd_many` with per-model noise seeds from ``seed`` (Sec. VI-D);
    otherwise :func:`gd_many`.

    Args:
        data: the :class:`ReconData` (D_- and the per-model targets; numpy arrays or tensors).
        model: the :class:`rerokit.training.settings.MLPSpec`, as in :func:`gd_many`.
        settings: the :class:`rerokit.training.settings.DPSGDSettings` of every model: ``steps``
            full-batch epochs T, ``lr``, ``momentum``, and for DP-GD ``noise_multiplier`` sigma >= 0
            and ``clip`` C (None with sigma = 0: plain GD, :func:`gd_many`); ``sample_rate`` must
            be 1. Default :data:`TABLE_V`.
        init: ``"known"`` or ``"random"``.
        init_seed: the known initialisation's seed.
        seed: the run's seed: random initialisations and DP-GD noise.
        models: ``(lo, hi)``: train only models lo..hi-1 of the K (a block; rows (hi - lo, P)), with
            the initialisations and noise they have in the whole run: model k's randomness depends
            on (seed, k) only. None: all K.
        options: the :class:`rerokit.training.settings.EngineOptions` (chunk_size, compile,
            progress, num_threads, device), as in :func:`gd_many`.

    Returns:
        The (hi - lo, P) float32 parameters, on the CPU.

    Raises:
        ValueError: if a setting is out of range, or a model diverges (naming ``lr``).
    """
    check_choice("init", init, ("known", "random"))
    model = _check_model(model)
    settings = _check_full_batch(settings, private=True)
    check_instance("data", data, ReconData)
    K = data.models
    lo, hi = (0, K) if models is None else (check_int("models[0]", models[0], minimum=0, maximum=K - 1),
                                            check_int("models[1]", models[1], minimum=models[0] + 1, maximum=K))
    fm = functional_mlp(data.dim, model.hidden, model.num_classes, model.activation)
    if init == "known":
        theta0 = fm.init_flat(check_int("init_seed", init_seed, minimum=0))
    else:
        ss = np.random.SeedSequence([check_int("seed", seed, minimum=0), 3]).generate_state(K, np.uint64) >> np.uint64(1)
        theta0 = fm.init_flat_many([int(s) for s in ss[lo:hi]])
    part = data.block(lo, hi)
    if not settings.private:
        return gd_many(theta0, part, model=model, settings=settings, options=options)
    from rerokit.training.engine import trial_seeds

    X_fixed, y_fixed = np.asarray(part.X_fixed), np.asarray(part.y_fixed)
    Xf = torch.as_tensor(np.asarray(X_fixed, dtype=np.float32)).reshape(len(X_fixed), -1)
    Xt = torch.as_tensor(np.asarray(part.X_targets, dtype=np.float32)).reshape(hi - lo, 1, -1)
    r = train_dpsgd_many(
        fm, theta0, Xt, torch.as_tensor(np.asarray(part.y_targets, dtype=np.int64)).reshape(hi - lo, 1), settings,
        seed=trial_seeds(check_int("seed", seed, minimum=0), K)[lo:hi],
        shared=(Xf, torch.as_tensor(np.asarray(y_fixed, dtype=np.int64))),
        options=options,
    )
    return r.theta.cpu()


# --------------------------------------------------------------------------------------------
# reconstructor network


class Reconstructor(nn.Module):
    """phi: standardise(theta) -> MLP (ReLU) -> sigmoid, mapping flat parameters (P,) to a
    reconstruction in [0, 1]^d (Balle et al. Sec. V-A(c), Table V). ``mean``/``std`` are the
    per-coordinate statistics of the training shadow models (std floored at 1e-8).

    Args:
        mean: per-coordinate mean of the shadow models' parameters, shape (P,).
        std: their per-coordinate standard deviation, shape (P,).
        out_dim: d, the reconstruction's dimension.
        hidden: widths of the hidden ReLU layers.
    """

    def __init__(self, mean: torch.Tensor, std: torch.Tensor, out_dim: int, hidden: Sequence[int] = (512, 512)):
        super().__init__()
        self.register_buffer("mean", mean.detach().clone().float())
        self.register_buffer("std", std.detach().clone().float().clamp_min(1e-8))
        layers: list[nn.Module] = []
        d = int(mean.numel())
        for h in hidden:
            layers += [nn.Linear(d, int(h)), nn.ReLU()]
            d = int(h)
        layers.append(nn.Linear(d, int(out_dim)))
        self.net = nn.Sequential(*layers)

    def forward(self, theta: torch.Tensor) -> torch.Tensor:
        """phi(theta) = sigmoid(MLP((theta - mean) / std)).

        Args:
            theta: flat model parameters, shape (B, P).

        Returns:
            Reconstructions in [0, 1]^d, shape (B, d).
        """
        return torch.sigmoid(self.net((theta - self.mean) / self.std))


def reconstruction_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """MAE + MSE (Balle et al. Table V, MNIST): mean |pred - target| + mean (pred - target)^2.

    Args:
        pred: reconstructions, shape (B, d).
        target: the targets, the same shape.

    Returns:
        The scalar loss.
    """
    diff = pred - target
    return diff.abs().mean() + (diff * diff).mean()


def train_reconstructor(
    thetas: torch.Tensor,
    targets: torch.Tensor,
    *,
    hidden: Sequence[int] = (512, 512),
    epochs: int = 60,
    batch_size: int = 128,
    lr: float = 1e-3,
    optimizer: str = "adam",
    weight_decay: float = 0.0,
    seed: int = 0,
    progress: bool = False,
) -> Reconstructor:
    """phi = R(S) on S = {(theta_bar_i, z_bar_i)}: ``thetas`` (k, P), ``targets`` (k, d) in [0, 1].

    Mini-batch training (shuffled each epoch with a generator seeded by ``seed``) of
    :class:`Reconstructor` on :func:`reconstruction_loss`, optimiser ``adam`` or ``rmsprop``
    (the paper's choice, lr 1e-3, batch 128, 100 epochs).

    Args:
        thetas: the shadow models' flat parameters, shape (k, P), k >= 2.
        targets: their shadow targets, shape (k, d) (or (k, ...)), in [0, 1].
        hidden: the reconstructor's hidden widths (:class:`Reconstructor`).
        epochs: passes over S (>= 1).
        batch_size: mini-batch size (>= 1).
        lr: the optimiser's step size (> 0).
        optimizer: ``"adam"`` or ``"rmsprop"``.
        weight_decay: the optimiser's L2 weight decay.
        seed: seed of the initialisation and the shuffling (the global torch RNG is left as it was).
        progress: a progress bar (one step per epoch) on stderr.

    Returns:
        The trained :class:`Reconstructor`, in eval mode.

    Raises:
        ValueError: if a setting is out of range (named as the ``reconstructor_*`` options).
    """
    thetas = torch.as_tensor(thetas, dtype=torch.float32)
    targets = torch.as_tensor(targets, dtype=torch.float32).reshape(thetas.shape[0], -1)
    k = check_int("shadow_models", thetas.shape[0], minimum=2)
    epochs = check_int("reconstructor_epochs", epochs, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    lr = check_positive("reconstructor_lr", lr)
    check_choice("optimizer", optimizer, ("adam", "rmsprop"))
    hidden = [check_int(f"reconstructor_hidden[{i}]", h, minimum=1) for i, h in enumerate(hidden)]
    gen = torch.Generator().manual_seed(check_int("seed", seed, minimum=0))
    from rerokit.training.models import global_rng

    with global_rng(int(torch.randint(0, 2**62, (1,), generator=gen))):  # thread-safe seeded init
        model = Reconstructor(thetas.mean(0), thetas.std(0), targets.shape[1], hidden)
    opt_cls = torch.optim.Adam if optimizer == "adam" else torch.optim.RMSprop
    opt = opt_cls(model.parameters(), lr=lr, weight_decay=weight_decay)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=epochs, desc="train reconstructor", unit="epoch", leave=False, file=sys.stderr)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(k, generator=gen)
        tot = 0.0
        for a in range(0, k, batch_size):
            idx = perm[a : a + batch_size]
            loss = reconstruction_loss(model(thetas[idx]), targets[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * idx.numel()
        if bar is not None:
            bar.set_postfix(loss=f"{tot / k:.4f}")
            bar.update(1)
    if bar is not None:
        bar.close()
    model.eval()
    return model


# --------------------------------------------------------------------------------------------
# KL metric (Balle et al. Sec. V-B(c))


def train_kl_classifier(X: np.ndarray, y: np.ndarray, num_classes: int, *, seed: int = 0, steps: int = 300,
                        hidden: int = 64) -> nn.Module:
    """The classifier behind the KL metric: an MLP d-``hidden``-classes (ELU) trained with Adam
    (lr 1e-2, full batch, ``steps`` steps) on (X, y). Balle et al. use a 99.4% LeNet on MNIST.

    Args:
        X: training points, shape (n, d) (or (n, ...)).
        y: their labels, shape (n,).
        num_classes: the classifier's outputs.
        seed: seed of the initialisation (the global torch RNG is left as it was).
        steps: Adam steps (>= 1).
        hidden: the hidden layer's width.

    Returns:
        The trained classifier, in eval mode.
    """
    from rerokit.training.models import global_rng, make_mlp

    X = torch.as_tensor(np.asarray(X, dtype=np.float32)).reshape(len(X), -1)
    y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    with global_rng(check_int("seed", seed, minimum=0)):  # thread-safe seeded init
        clf = make_mlp(X.shape[1], [hidden], num_classes)
    opt = torch.optim.Adam(clf.parameters(), lr=1e-2, weight_decay=1e-4)
    for _ in range(check_int("steps", steps, minimum=1)):
        loss = F.cross_entropy(clf(X), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    clf.eval()
    return clf


def kl_metric(clf: nn.Module, x: np.ndarray | torch.Tensor, x_hat: np.ndarray | torch.Tensor) -> np.ndarray:
    """Per point KL(p(.|x) || p(.|x_hat)) = sum_c p_c(x) (log p_c(x) - log p_c(x_hat)) (nats) of
    the classifier's predicted class probabilities (Balle et al. Sec. V-B(c)).

    Args:
        clf: the classifier (:func:`train_kl_classifier`).
        x: the targets, shape (n, d) (or (n, ...)).
        x_hat: their reconstructions, the same shape.

    Returns:
        Float64 array of shape (n,), each >= 0.
    """
    x = torch.as_tensor(np.asarray(x, dtype=np.float32)).reshape(len(x), -1)
    x_hat = torch.as_tensor(np.asarray(x_hat, dtype=np.float32)).reshape(len(x_hat), -1)
    with torch.no_grad():
        lp = F.log_softmax(clf(x), -1)
        lq = F.log_softmax(clf(x_hat), -1)
        kl = (lp.exp() * (lp - lq)).sum(-1).clamp_min(0.0)
    return kl.numpy().astype(np.float64)


def save_reconstructions_png(targets: np.ndarray, reconstructions: np.ndarray, shape: Sequence[int], path,
                             *, n: int = 10, title: str | None = None) -> str:
    """PNG with ``n`` targets (top row) above their reconstructions (bottom row), each titled with
    its MSE.

    Args:
        targets: the targets, shape (K, d).
        reconstructions: their reconstructions, shape (K, d).
        shape: one image's shape (C, H, W).
        path: the PNG file.
        n: how many pairs (>= 1; at most K).
        title: the figure's title, or None.

    Returns:
        ``path`` as a string.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = min(check_int("n", n, minimum=1), len(targets))
    shape = tuple(shape)
    fig, axes = plt.subplots(2, n, figsize=(1.0 * n + 0.4, 2.6), squeeze=False)
    for j in range(n):
        for r, arr in enumerate((targets, reconstructions)):
            img = np.asarray(arr[j]).reshape(shape)
            img = img[0] if img.shape[0] == 1 else np.transpose(img, (1, 2, 0))
            ax = axes[r, j]
            ax.imshow(np.clip(img, 0, 1), cmap="gray" if img.ndim == 2 else None, vmin=0, vmax=1, aspect="equal")
            ax.set_xticks([])
            ax.set_yticks([])
        axes[0, j].set_title(f"{float(((targets[j] - reconstructions[j]) ** 2).mean()):.3f}", fontsize=7)
    axes[0, 0].set_ylabel("target")
    axes[1, 0].set_ylabel("RecoNN")
    if title:
        fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)
