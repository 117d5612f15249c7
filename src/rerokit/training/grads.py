"""Per-sample gradients and clipping, the building blocks of DP-SGD (Abadi et al. 2016).

For a model ``fm`` (:class:`~rerokit.training.models.FunctionalModel`) with flat parameters
``theta`` (P,), a batch ``X`` (n, ...) with integer labels ``y`` (n,):

- ``per_sample_grads``: ``G[i] = grad_theta l(theta, (x_i, y_i))`` with ``l`` the cross-entropy
  of one sample, shape ``(n, P)``; computed as ``vmap(grad(l))`` (torch.func).
- ``clip_rows``: ``clip_C(g) = g * min(1, C / (||g||_2 + eps))`` row by row, ``eps = 1e-6``:
  exactly Opacus' ``DPOptimizer.clip_and_accumulate`` factor
  ``(max_grad_norm / (per_sample_norms + 1e-6)).clamp(max=1.0)``. The guard keeps a zero
  gradient finite, and the clipped norm is ``C ||g|| / (||g|| + eps) < C``, so the sensitivity
  ``C`` of the clipped sum still holds (the guard errs on the private side).
- ``per_sample_clipped_grads = clip_rows(per_sample_grads(...), C)``.

These are the ``clip_C(grad_theta l(theta_t, z))`` of Hayes et al. (2023) Eq. (1) and Alg. 2.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from rerokit._validate import check_nonnegative, check_positive

__all__ = ["CLIP_EPS", "sample_loss", "per_sample_grads", "clip_rows", "clip_factors", "per_sample_clipped_grads"]

CLIP_EPS = 1e-6
"""Guard in the clip factor ``min(1, C / (||g|| + CLIP_EPS))`` (Opacus' value)."""


def sample_loss(fm, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Cross-entropy ``l(theta, (x, y))`` of ONE sample ``x`` (no batch dim) with label ``y`` (scalar).

    Args:
      fm: the :class:`~rerokit.training.models.FunctionalModel` (``fm.logits(theta, X)``).
      theta: flat parameters, shape (P,).
      x: one input, without the batch dimension.
      y: its integer class label, a 0-d tensor.

    Returns:
      The loss, a 0-d tensor (differentiable in ``theta``; unchecked, safe under ``vmap``/``grad``).
    """
    out = fm.logits(theta, x.unsqueeze(0))
    return F.cross_entropy(out, y.unsqueeze(0))


def check_batch(fm, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> None:
    """A batch for ``fm``: ``theta`` of shape (P,), tensors ``X`` (n, ...) and integer labels ``y`` (n,).

    Raises:
      ValueError: a shape that does not match.
      TypeError: ``X``/``y`` not tensors, or ``y`` not of an integer dtype.
    """
    if not isinstance(theta, torch.Tensor) or theta.dim() != 1 or theta.shape[0] != fm.num_params:
        raise ValueError(f"theta must be a tensor of shape (P,) = ({fm.num_params},), got {getattr(theta, 'shape', type(theta))}")
    if not isinstance(X, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError("X and y must be torch tensors")
    if y.dim() != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X (n, ...) and y (n,) must have the same n, got X {tuple(X.shape)} and y {tuple(y.shape)}")
    if y.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")


def check_labels(fm, theta: torch.Tensor, x1: torch.Tensor, y: torch.Tensor, name: str = "y") -> None:
    """Labels must index the model's outputs: 0 <= y < number of logits (one-sample forward to find it)."""
    if y.numel() == 0:
        return
    with torch.no_grad():
        classes = int(fm.logits(theta.detach(), x1.to(device=theta.device, dtype=theta.dtype)).shape[-1])
    lo, hi = int(y.min()), int(y.max())
    if lo < 0 or hi >= classes:
        raise ValueError(f"{name} must hold class labels in [0, {classes - 1}] (the model has {classes} outputs); got range [{lo}, {hi}]")


def per_sample_grads(fm, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``(n, P)``: row i is ``grad_theta l(theta, (X[i], y[i]))`` (cross-entropy of one sample).

    Computed as ``vmap(grad(l))`` (torch.func). Outside a torch.func transform the labels are also
    checked against the model's number of outputs.

    Args:
      fm: the :class:`~rerokit.training.models.FunctionalModel`.
      theta: flat parameters, shape (P,) with P = ``fm.num_params``.
      X: inputs, shape (n, ...).
      y: integer class labels, shape (n,).

    Returns:
      The per-sample gradients, a tensor of shape (n, P) and ``theta``'s dtype.

    Raises:
      ValueError: if ``theta`` is not of shape (P,), ``X`` and ``y`` disagree on n or ``y`` is not
        1-D, or a label is outside [0, number of outputs).
      TypeError: if ``X``/``y`` are not tensors or ``y`` is not an integer dtype.
    """
    check_batch(fm, theta, X, y)
    if X.shape[0] and not any(_under_transform(t) for t in (theta, X, y)):
        check_labels(fm, theta, X[:1], y)  # data-dependent check: skipped under vmap/grad
    return per_sample_grads_unchecked(fm, theta, X, y)


def _under_transform(t: torch.Tensor) -> bool:
    """True if ``t`` is wrapped by a torch.func transform (vmap/grad), where .item() is not allowed."""
    try:
        from torch._C._functorch import is_functorch_wrapped_tensor
    except ImportError:  # pragma: no cover - older/newer torch without this hook: be conservative
        return True
    return bool(is_functorch_wrapped_tensor(t))


def per_sample_grads_unchecked(fm, theta, X, y):
    """:func:`per_sample_grads` without its checks: safe to call under an outer ``vmap`` (over
    trials or models), where data-dependent checks are not allowed."""
    g = grad(lambda th, x, t: sample_loss(fm, th, x, t))
    return vmap(g, in_dims=(None, 0, 0))(theta, X, y)


def clip_factors(G: torch.Tensor, C: float | None, eps: float = CLIP_EPS) -> torch.Tensor:
    """``(..., n)`` factors ``min(1, C / (||G[i]|| + eps))`` (all ones if ``C`` is None).

    Args:
      G: per-sample gradients, shape (..., n, P).
      C: clipping norm (not validated here), or None for no clipping.
      eps: guard added to the norm (default :data:`CLIP_EPS`, Opacus' 1e-6).

    Returns:
      The factors, a tensor of shape ``G.shape[:-1]`` with values in (0, 1].
    """
    if C is None:
        return torch.ones(G.shape[:-1], dtype=G.dtype, device=G.device)
    norms = torch.linalg.vector_norm(G, dim=-1)
    return (C / (norms + eps)).clamp(max=1.0)


def clip_rows(G: torch.Tensor, C: float | None, eps: float = CLIP_EPS) -> torch.Tensor:
    """Clip each row of ``G`` (..., P) to norm at most ``C``: ``G[i] * min(1, C / (||G[i]|| + eps))``.

    ``C=None`` returns ``G`` unchanged (non-private training). See the module docstring for the guard.

    Args:
      G: per-sample gradients, shape (..., P).
      C: clipping norm C > 0, or None for no clipping.
      eps: guard added to the norm, >= 0 (default :data:`CLIP_EPS`).

    Returns:
      The clipped gradients, same shape and dtype as ``G`` (each row of norm at most C).

    Raises:
      ValueError: if ``C`` is not a finite number > 0 or ``eps`` is negative or not finite.
      TypeError: if ``C``/``eps`` is not a number.
    """
    if C is not None:
        C = check_positive("C", C)
    check_nonnegative("eps", eps)
    return G * clip_factors(G, C, eps).unsqueeze(-1)


def per_sample_clipped_grads(fm, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, C: float | None) -> torch.Tensor:
    """``(n, P)``: ``clip_C(grad_theta l(theta, (X[i], y[i])))`` row by row (``C=None``: unclipped).

    Args:
      fm: the :class:`~rerokit.training.models.FunctionalModel`.
      theta: flat parameters, shape (P,).
      X: inputs, shape (n, ...).
      y: integer class labels, shape (n,).
      C: clipping norm C > 0, or None for no clipping.

    Returns:
      The clipped per-sample gradients, a tensor of shape (n, P).

    Raises:
      ValueError: as :func:`per_sample_grads`, or if ``C`` is not a finite number > 0.
      TypeError: as :func:`per_sample_grads`.
    """
    if C is not None:
        C = check_positive("C", C)
    return clip_rows(per_sample_grads(fm, theta, X, y), C)
