"""Spectral-norm Fisher information leakage (Guo et al. 2022, Sec. 5 and Thm 2).

Guo, Karrer, Chaudhuri, van der Maaten (ICML 2022), "Bounding Training Data Reconstruction in
Private (Deep) Learning", define the Fisher information leakage (FIL) of a release h about a
training sample z as the spectral norm of its Fisher information matrix,
eta^2 = ||I_h(z)||_2 (the largest eigenvalue of the positive semi-definite I_h(z)), and Thm 2
gives, for any unbiased attack,

    E||z_hat(h) - z||^2 / d  >=  Tr(I_h(z)^{-1}) / d  >=  d / Tr(I_h(z))  >=  1 / eta^2.

rerokit's main FIL bound is the trace form d / Tr(I) = 1/dFIL
(:mod:`rerokit.training.fil`); this module adds the spectral form 1/eta^2, which is looser
(never above the trace form) but needs only the largest eigenvalue, i.e. a bound on the
chi-squared divergence between A(D u {z}) and A(D u {z'}) as z' -> z from *any* direction
(Sec. 5, "Relationship to differential privacy").

Output perturbation of a GLM (Sec. 7.1): I_h(x) = J^T J / s^2 with J = d theta*/dx
(:func:`rerokit.training.fil.output_perturbation_jacobians`), so eta^2 = sigma_max(J)^2 / s^2.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from rerokit._validate import check_real_array

__all__ = ["spectral_fil", "spectral_fil_mse_lower_bound", "output_perturbation_spectral_fil"]


def _safe_top_eigenvalue(sym: np.ndarray) -> float:
    """Largest eigenvalue of a symmetric matrix, raised by its eigensolver error bound.

    LAPACK's symmetric eigensolvers are backward stable: every computed eigenvalue is within
    about d * eps * ||A||_2 of the exact one. Adding 10 d eps ||A||_2 keeps eta^2 above the exact
    value, so 1/eta^2 stays a lower bound (the safe side).
    """
    d = sym.shape[0]
    ev = np.linalg.eigvalsh(sym)
    top = float(ev[-1])
    scale = float(np.max(np.abs(ev)))
    return top + 10.0 * d * np.finfo(float).eps * scale


def spectral_fil(fim: np.ndarray) -> float:
    """eta^2 = ||I_h(z)||_2, the Fisher information leakage of Guo et al. 2022, Sec. 5.

    Args:
      fim: the d x d Fisher information matrix I_h(z), finite, symmetric positive semi-definite
        (its symmetric part is used; eigenvalues below -1e-8 ||I|| are rejected).

    Returns:
      eta^2 >= 0, the largest eigenvalue of ``fim`` rounded up by the eigensolver's error bound.

    Raises:
      ValueError: if ``fim`` is not a finite square matrix or is not positive semi-definite.
      TypeError: if ``fim`` is not an array of numbers.
    """
    F = check_real_array("fim", fim)
    if F.ndim != 2 or F.shape[0] != F.shape[1] or F.shape[0] == 0 or not np.all(np.isfinite(F)):
        raise ValueError(f"fim must be a finite non-empty square matrix, got shape {F.shape}")
    S = (F + F.T) / 2
    ev = np.linalg.eigvalsh(S)
    if ev[0] < -1e-8 * max(abs(ev[-1]), abs(ev[0])):
        raise ValueError(f"fim must be positive semi-definite (a Fisher information matrix), got an eigenvalue {ev[0]:.3g}")
    return max(0.0, _safe_top_eigenvalue(S)) if ev[-1] > 0 else 0.0


def spectral_fil_mse_lower_bound(fim: np.ndarray) -> float:
    """Guo et al. 2022, Thm 2 (unbiased attack), spectral form: MSE >= 1 / eta^2, eta^2 = ||I_h(z)||_2.

    Never above the trace form d / Tr(I_h(z)) (:func:`rerokit.bounds.mse.cramer_rao_mse_lower_bound`
    of dFIL = Tr(I)/d), since Tr(I) <= d ||I||_2. +inf when I = 0 (nothing about z is released).

    Args:
      fim: the d x d Fisher information matrix I_h(z) (see :func:`spectral_fil`).

    Returns:
      The lower bound on E||z_hat - z||^2 / d of any unbiased attack, as a float.

    Raises:
      ValueError, TypeError: as :func:`spectral_fil`.
    """
    eta2 = spectral_fil(fim)
    return math.inf if eta2 == 0 else 1.0 / eta2


def output_perturbation_spectral_fil(model, X: np.ndarray, y: np.ndarray, noise_std: float, *, chunk: int = 256,
                                     device: str = "cpu") -> np.ndarray:
    """Per-sample eta^2 = ||J^T J||_2 / noise_std^2 of output perturbation theta* + N(0, s^2 I).

    Guo et al. 2022, Sec. 5 (FIL as the spectral norm) and Sec. 7.1 (I_h(x) = J^T J / s^2 with
    J = d theta*/dx by implicit differentiation); the per-sample MSE bound of unbiased attacks is
    1/eta^2 (Thm 2), never above the dFIL bound 1/dFIL of
    :func:`rerokit.training.fil.output_perturbation_dfil`.

    Args:
      model: a :class:`~rerokit.training.glm.GLMModel` fitted to optimality on (X, y).
      X: training features, shape (n, d).
      y: training labels, shape (n,).
      noise_std: standard deviation s of the output noise, > 0.
      chunk: samples per Jacobian block (default 256).
      device: where the Jacobians are computed (default the CPU).

    Returns:
      Float array of shape (n,): eta^2 of each training sample (rounded up by the eigensolver's
      error bound, so 1/eta^2 stays on the safe side).

    Raises:
      ValueError: if ``noise_std`` is not a finite number > 0, or the Hessian is singular.
    """
    from rerokit.training.fil import per_sample_fil

    def top(J: torch.Tensor, s: float, d: int) -> np.ndarray:
        ev = torch.linalg.eigvalsh(J.transpose(1, 2) @ J)  # (m, d), ascending, float64
        scale = ev.abs().amax(1)
        up = ev[:, -1] + 10.0 * d * torch.finfo(ev.dtype).eps * scale
        return up.clamp_min(0.0).cpu().numpy() / (s * s)

    return per_sample_fil(model, X, y, noise_std, chunk, device, top)
