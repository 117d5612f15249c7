"""The optimal analytic gradient-inversion attack on real DP-SGD with batch size 1 (Riess et al. 2024,
Sec. 3.2-4.1, Cor. 1), and the non-private division attack (Riess et al. 2024, Eq. 8).

Attack (Cor. 1): the adversary makes the model a linear layer ``f(X) = W X`` with ``M`` rows and
no bias, with loss ``L = 1_M^T W X``; every row's gradient is then ``X`` and the per-sample
gradient norm is ``sqrt(M) ||X||``. One DP-SGD step with batch size 1 (Opacus
``GradSampleModule`` + ``DPOptimizer``) releases::

    grad~_W = (beta_C(X) * 1_M X^T + N(0, sigma^2 C^2 I)) / expected_batch_size         (Eq. 11)

with Opacus' clipping factor ``beta_C = min(1, C / (||G_X|| + 1e-6))`` (Eq. 10 up to Opacus'
1e-6 guard). The attacker knows the scale (the paper's assumption, end of Sec. 3.3), undoes it and
averages the rows: ``X_hat = (1/M) sum_j expected_batch_size * grad~_{W_j} / beta_C`` (Eq. 16),
so ``X_hat ~ N(X, v I)`` with ``v = (sigma C / beta_C)^2 / M`` (Eq. 17), which is
``sigma^2 ||X||^2`` (Eq. 20) when ``M >= (C/||X||)^2`` and larger otherwise ('overproportional
noise').

Two implementations, equal target by target (tested): :class:`OpacusAnalyticAttack` loops one
Opacus DP-SGD step per target, reusing one module/optimizer (the weights are restored after
each step; the gradient of ``1^T W X`` does not depend on ``W`` anyway);
:func:`vectorized_analytic_attack` computes the per-sample gradients of all targets at once with
``torch.func`` (``vmap(grad(functional_call))``), clips them with Opacus' rule and adds the same
noise (each target draws its noise from its own generator seeded by ``(seed, target index)``, in
both implementations, so results are reproducible and resumable).

Metrics (:func:`reconstruction_metrics`): MSE (Riess et al. 2024 Def. 3), PSNR with the dataset's known data
range ``R`` (``10 log10(R^2 / MSE)``, the quantity bounded by Props. 4-5), sample NCC (Def. 5,
Pearson correlation with population standard deviations) and SSIM from scikit-image
(``skimage.metrics.structural_similarity``) on the image shape with a uniform window of size
``min(7, largest odd number <= min(H, W))`` (7 for 8x8 digits: skimage's default window, which
must not exceed the image side), ``data_range=R``; SSIM is omitted for non-image data.

The attack run end to end over many targets (blocks of targets on any executor, the resumable
per-target log, the comparison with Riess et al.'s laws) is :func:`rerokit.experiments.analytic.run_analytic_attack`.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
import torch

from rerokit._validate import check_int, check_nonnegative, check_positive
from rerokit.bounds import uninformed as U

__all__ = [
    "OPACUS_NORM_EPS",
    "AnalyticAttackOutput",
    "target_generator",
    "attack_model",
    "attack_loss",
    "OpacusAnalyticAttack",
    "vectorized_analytic_attack",
    "division_attack",
    "nonprivate_division_attack",
    "reconstruction_metrics",
]


#: Opacus adds this to the per-sample norm before dividing (DPOptimizer.clip_and_accumulate).
OPACUS_NORM_EPS = 1e-6


@dataclass(frozen=True)
class AnalyticAttackOutput:
    """Result of attacking targets ``X`` (K, N): reconstructions ``X_hat`` (K, N), the clipping
    factor beta_C each DP-SGD step applied, the per-sample gradient norms and the
    per-coordinate variance ``v = (sigma C / beta_C)^2 / M`` of each reconstruction (Eq. 17)."""

    targets: np.ndarray
    reconstructions: np.ndarray
    clip_factors: np.ndarray
    grad_norms: np.ndarray
    variances: np.ndarray
    rows: int
    noise_multiplier: float
    clip: float
    seed: int
    indices: np.ndarray
    backend: str
    settings: dict[str, Any] = field(default_factory=dict)


def target_generator(seed: int, index: int) -> torch.Generator:
    """The torch generator of target ``index`` in a run with ``seed`` (independent streams).

    Args:
        seed: the run's seed (>= 0).
        index: the target's dataset index.

    Returns:
        A ``torch.Generator`` seeded from ``SeedSequence([seed, index])``: the same noise for the
        target in both implementations, any block layout and a resumed run.
    """
    s = int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
    return torch.Generator().manual_seed(s)


def attack_model(dim: int, rows: int, *, seed: int = 0) -> torch.nn.Linear:
    """The adversary's model f(X) = W X, W in R^{M x N}, no bias (Riess et al. 2024, Cor. 1).

    Args:
        dim: N, the input dimension (>= 1).
        rows: M, the number of rows (>= 1; :func:`rerokit.bounds.uninformed.optimal_rows` gives
            the smallest M with sqrt(M) ||X|| >= C, Prop. 1).
        seed: seed of the (irrelevant: the gradient of 1^T W X is X per row) initial weights,
            drawn without touching the global torch RNG.

    Returns:
        A float64 ``torch.nn.Linear(N, M, bias=False)``.
    """
    n = check_int("dim", dim, minimum=1)
    m = check_int("rows", rows, minimum=1)
    from rerokit.training.models import global_rng

    with global_rng(int(seed)):  # seeded init without touching the global RNG, thread-safe
        return torch.nn.Linear(n, m, bias=False, dtype=torch.float64)


def attack_loss(output: torch.Tensor) -> torch.Tensor:
    """L(W, X) = 1_M^T W X summed over the batch (Riess et al. 2024, Cor. 1): every row's gradient is X.

    Args:
        output: W X of a batch, shape (B, M).

    Returns:
        The scalar loss.
    """
    return output.sum()


def _variance(beta: np.ndarray, sigma: float, clip: float, rows: int) -> np.ndarray:
    return (sigma * clip / beta) ** 2 / rows


class OpacusAnalyticAttack:
    """One Opacus DP-SGD step of batch size 1 per target on the adversary's linear layer.

    A single ``GradSampleModule`` and ``DPOptimizer`` (``noise_multiplier``, ``max_grad_norm=clip``,
    ``expected_batch_size=1``, ``loss_reduction="mean"``) are reused across targets: for each
    target the optimizer clips the per-sample gradient, adds N(0, sigma^2 C^2) noise, divides by the
    expected batch size and takes an SGD step; the attack reads the privatized ``p.grad`` and the
    weights are restored to their initial value for the next target.

    Args:
        dim: N, the target dimension.
        rows: M, rows of the adversary's layer (:func:`attack_model`).
        noise_multiplier: sigma >= 0 (noise std sigma C on the clipped gradient).
        clip: clipping norm C > 0.
        seed: the run's seed: the layer's initialisation and, with the target index, each
            target's noise (:func:`target_generator`).
        lr: SGD step size (> 0; the step is undone, so it does not affect the attack).
    """

    def __init__(self, dim: int, rows: int, noise_multiplier: float, clip: float, *, seed: int = 0, lr: float = 0.1):
        from opacus import GradSampleModule
        from opacus.optimizers import DPOptimizer

        self.dim = check_int("dim", dim, minimum=1)
        self.rows = check_int("rows", rows, minimum=1)
        self.noise_multiplier = check_nonnegative("noise_multiplier", noise_multiplier)
        self.clip = check_positive("clip", clip)
        self.seed = check_int("seed", seed, minimum=0)
        self.layer = attack_model(self.dim, self.rows, seed=self.seed)
        self.module = GradSampleModule(self.layer)
        self.expected_batch_size = 1
        self.optimizer = DPOptimizer(
            torch.optim.SGD(self.module.parameters(), lr=check_positive("lr", lr)),
            noise_multiplier=self.noise_multiplier,
            max_grad_norm=self.clip,
            expected_batch_size=self.expected_batch_size,
            loss_reduction="mean",
        )
        self._w0 = self.layer.weight.detach().clone()

    def privatized_step(self, x: np.ndarray | torch.Tensor, generator: torch.Generator) -> tuple[np.ndarray, float, float]:
        """Run one DP-SGD step on the single example ``x`` (Eq. 11); the weights are restored after it.

        Args:
            x: the target, shape (N,).
            generator: the noise generator (:func:`target_generator`).

        Returns:
            ``(grad~_W, beta_C, ||G_X||)``: the released gradient (M, N), the clipping factor
            Opacus applied and the per-sample gradient norm.
        """
        xt = torch.as_tensor(np.asarray(x, dtype=np.float64)).reshape(1, self.dim)
        self.optimizer.generator = generator
        self.optimizer.zero_grad(set_to_none=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # full backward hook: input needs no grad
            attack_loss(self.module(xt)).backward()
        gs = self.layer.weight.grad_sample
        norm = float(gs.reshape(gs.shape[0], -1).norm(2, dim=1)[0])
        beta = min(1.0, self.clip / (norm + OPACUS_NORM_EPS))
        self.optimizer.step()
        noisy = self.layer.weight.grad.detach().numpy().copy()
        with torch.no_grad():
            self.layer.weight.copy_(self._w0)
        self.optimizer.zero_grad(set_to_none=True)
        return noisy, beta, norm

    def reconstruct(self, x: np.ndarray, generator: torch.Generator) -> tuple[np.ndarray, float, float]:
        """X_hat (Eq. 16) from one privatized step on ``x``, undoing the known scale
        beta_C / expected_batch_size.

        Args:
            x, generator: as in :meth:`privatized_step`.

        Returns:
            ``(X_hat, beta_C, ||G_X||)``, X_hat of shape (N,).
        """
        noisy, beta, norm = self.privatized_step(x, generator)
        return U.estimate_from_gradients(noisy * self.expected_batch_size, beta), beta, norm

    def run(self, X: np.ndarray, *, indices: Sequence[int] | None = None, progress: bool = False) -> AnalyticAttackOutput:
        """Attack every row of ``X``, one privatized step each.

        Args:
            X: the targets, shape (K, N) (or (K, ...), flattened).
            indices: the targets' dataset indices (default 0..K-1); target i uses the generator
                ``target_generator(seed, indices[i])``.
            progress: show a progress bar on stderr.

        Returns:
            The :class:`AnalyticAttackOutput` (backend ``"opacus"``).

        Raises:
            ValueError: if ``X`` does not have ``dim`` columns.
        """
        X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        if X.shape[1] != self.dim:
            raise ValueError(f"X must have {self.dim} columns (dim), got {X.shape[1]}")
        idx = np.arange(len(X)) if indices is None else np.asarray(indices)
        rec = np.empty_like(X)
        betas = np.empty(len(X))
        norms = np.empty(len(X))
        for i in _progress(range(len(X)), progress, "analytic attack (opacus)"):
            rec[i], betas[i], norms[i] = self.reconstruct(X[i], target_generator(self.seed, int(idx[i])))
        return AnalyticAttackOutput(X, rec, betas, norms, _variance(betas, self.noise_multiplier, self.clip, self.rows),
                                    self.rows, self.noise_multiplier, self.clip, self.seed, idx, "opacus")


def vectorized_analytic_attack(
    X: np.ndarray,
    rows: int,
    noise_multiplier: float,
    clip: float,
    *,
    seed: int = 0,
    indices: Sequence[int] | None = None,
    chunk: int = 4096,
    progress: bool = False,
) -> AnalyticAttackOutput:
    """The same attack as :class:`OpacusAnalyticAttack` (one batch-size-1 DP-SGD step per target),
    vectorised over targets: per-sample gradients by ``torch.func.vmap(grad(...))``, Opacus'
    clipping rule, N(0, sigma^2 C^2) noise from each target's own generator, Eq. 16 estimator.

    Args:
        X, indices: as in :meth:`OpacusAnalyticAttack.run`.
        rows, noise_multiplier, clip, seed: as for :class:`OpacusAnalyticAttack`.
        chunk: targets per vectorised block (>= 1).
        progress: show a progress bar on stderr (one step per block).

    Returns:
        The :class:`AnalyticAttackOutput` (backend ``"vmap"``), equal target by target to the
        Opacus implementation's.
    """
    from torch.func import functional_call, grad, vmap

    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    k, n = X.shape
    m = check_int("rows", rows, minimum=1)
    s = check_nonnegative("noise_multiplier", noise_multiplier)
    c = check_positive("clip", clip)
    seed = check_int("seed", seed, minimum=0)
    ch = check_int("chunk", chunk, minimum=1)
    idx = np.arange(k) if indices is None else np.asarray(indices)
    model = attack_model(n, m, seed=seed)
    params = {name: p.detach() for name, p in model.named_parameters()}

    def loss(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return attack_loss(functional_call(model, p, (x.unsqueeze(0),)))

    per_sample = vmap(grad(loss), in_dims=(None, 0))
    rec = np.empty_like(X)
    betas = np.empty(k)
    norms = np.empty(k)
    for lo in _progress(range(0, k, ch), progress, "analytic attack (vmap)"):
        hi = min(k, lo + ch)
        g = per_sample(params, torch.as_tensor(X[lo:hi]))["weight"]  # (B, M, N)
        nrm = g.reshape(g.shape[0], -1).norm(2, dim=1)
        beta = (c / (nrm + OPACUS_NORM_EPS)).clamp(max=1.0)
        if s > 0:
            noise = torch.stack([torch.normal(0.0, s * c, size=(m, n), generator=target_generator(seed, int(j)),
                                              dtype=torch.float64) for j in idx[lo:hi]])
        else:
            noise = torch.zeros_like(g)
        noisy = beta[:, None, None] * g + noise  # released gradient, expected_batch_size = 1
        rec[lo:hi] = (noisy / beta[:, None, None]).mean(dim=1).numpy()
        betas[lo:hi] = beta.numpy()
        norms[lo:hi] = nrm.numpy()
    return AnalyticAttackOutput(X, rec, betas, norms, _variance(betas, s, c, m), m, s, c, seed, idx, "vmap")


# --------------------------------------------------------------------------- non-private (Eq. 8)


def division_attack(weight_grad: np.ndarray, bias_grad: np.ndarray, *, tol: float = 1e-12) -> np.ndarray:
    """X = grad_{W_j} / (dL/db_j) for any row j with a non-zero bias gradient (Riess et al. 2024, Eq. 8); the rows
    with |dL/db_j| > tol are averaged weighted by |dL/db_j| (all equal X without noise).

    Args:
        weight_grad: the first layer's weight gradient, shape (M, N).
        bias_grad: its bias gradient, shape (M,).
        tol: rows with |dL/db_j| <= tol are ignored (>= 0).

    Returns:
        The reconstruction, shape (N,).

    Raises:
        ValueError: if the shapes disagree or every bias gradient is within ``tol`` of zero.
    """
    w = np.asarray(weight_grad, dtype=float)
    b = np.asarray(bias_grad, dtype=float).reshape(-1)
    if w.ndim != 2 or w.shape[0] != b.size:
        raise ValueError(f"weight_grad must be (M, N) with M = len(bias_grad), got {w.shape} and {b.shape}")
    keep = np.abs(b) > check_nonnegative("tol", tol)
    if not keep.any():
        raise ValueError("every bias gradient is zero: the division attack needs one row with dL/db_j != 0")
    ratios = w[keep] / b[keep, None]
    wts = np.abs(b[keep])
    return (ratios * wts[:, None]).sum(axis=0) / wts.sum()


def nonprivate_division_attack(
    X: np.ndarray, y: np.ndarray, *, hidden: int = 32, num_classes: int = 10, seed: int = 0
) -> np.ndarray:
    """Without DP: train step of an ordinary network (Linear(N, hidden) -> ReLU -> Linear(hidden,
    classes), cross-entropy) on each example alone; the first layer's gradients reveal the input
    exactly by the division of Eq. 8.

    Args:
        X: the examples, shape (K, N) (or (K, ...), flattened).
        y: their labels, shape (K,).
        hidden: width of the hidden layer (>= 1).
        num_classes: outputs of the network (>= 2).
        seed: seed of the network's initialisation (the global torch RNG is left as it was).

    Returns:
        The reconstructions, shape (K, N).
    """
    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    yy = np.asarray(y, dtype=np.int64).reshape(-1)
    h = check_int("hidden", hidden, minimum=1)
    nc = check_int("num_classes", num_classes, minimum=2)
    from rerokit.training.models import global_rng

    with global_rng(check_int("seed", seed, minimum=0)):  # seeded init, thread-safe
        net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], h), torch.nn.ReLU(), torch.nn.Linear(h, nc)).double()
    out = np.empty_like(X)
    for i in range(len(X)):
        net.zero_grad()
        logits = net(torch.as_tensor(X[i : i + 1]))
        torch.nn.functional.cross_entropy(logits, torch.as_tensor(yy[i : i + 1])).backward()
        first = net[0]
        out[i] = division_attack(first.weight.grad.numpy(), first.bias.grad.numpy())
    return out


# --------------------------------------------------------------------------- metrics


def _ssim_window(h: int, w: int) -> int | None:
    side = min(h, w)
    win = min(7, side if side % 2 == 1 else side - 1)
    return win if win >= 3 else None


def reconstruction_metrics(
    X: np.ndarray, X_hat: np.ndarray, *, data_range: float, image_shape: Sequence[int] | None = None
) -> dict[str, np.ndarray]:
    """Per-target MSE (Def. 3), PSNR = 10 log10(R^2 / MSE) with data range R (Props. 4-5), sample
    NCC (Def. 5; NaN where a target or its reconstruction is constant) and, for images
    ``image_shape = (C, H, W)``, SSIM from scikit-image (uniform window, see module docstring).

    Args:
        X: the targets, shape (K, N) (or (K, ...), flattened).
        X_hat: their reconstructions, the same shape.
        data_range: R > 0, the data's known range (1 for data in [0, 1]).
        image_shape: (C, H, W) of one target for SSIM; None (or not 3 numbers): no SSIM.

    Returns:
        ``{"mse", "psnr", "ncc"[, "ssim"]}``, each an array of shape (K,) (PSNR inf where MSE = 0).
    """
    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    Xh = np.asarray(X_hat, dtype=np.float64).reshape(len(X), -1)
    r = check_positive("data_range", data_range)
    mse = ((X - Xh) ** 2).mean(axis=1)
    with np.errstate(divide="ignore"):
        psnr = 10.0 * np.log10(r * r / mse)
    xc = X - X.mean(axis=1, keepdims=True)
    hc = Xh - Xh.mean(axis=1, keepdims=True)
    den = np.sqrt((xc**2).mean(axis=1) * (hc**2).mean(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        ncc = np.where(den > 0, (xc * hc).mean(axis=1) / np.where(den > 0, den, 1.0), np.nan)
    out = {"mse": mse, "psnr": psnr, "ncc": ncc}
    if image_shape is not None and len(image_shape) == 3:
        from skimage.metrics import structural_similarity

        c, h, w = (int(v) for v in image_shape)
        win = _ssim_window(h, w)
        if win is not None:
            imgs = X.reshape(-1, c, h, w)
            recs = Xh.reshape(-1, c, h, w)
            ss = np.empty(len(X))
            for i in range(len(X)):
                a, b = imgs[i].transpose(1, 2, 0), recs[i].transpose(1, 2, 0)
                ss[i] = structural_similarity(a, b, data_range=r, win_size=win, channel_axis=2)
            out["ssim"] = ss
    return out


def _progress(it: Iterable, enabled: bool, desc: str) -> Iterable:
    if not enabled:
        return it
    from tqdm import tqdm

    return tqdm(it, desc=desc, file=sys.stderr, leave=False)
