"""The spectral-norm Fisher information leakage of output perturbation (Guo et al. 2022, Sec. 4).

Guo, Karrer, Chaudhuri & van der Maaten (2022), "Bounding Training Data Reconstruction in Private
(Deep) Learning", define the FIL of a release h about a training point z as the spectral norm of
its Fisher information matrix, eta^2 = ||I_h(z)||_2, and the diagonal FIL dFIL = Tr(I_h(z)) / d.
For an unbiased attack Thm 2 gives MSE >= Tr(I_h(z)^{-1}) / d >= d / Tr(I_h(z)) = 1 / dFIL
>= 1 / eta^2 (the mean of the eigenvalues' reciprocals is at least the reciprocal of their mean,
which is at least the reciprocal of the largest): the spectral variant is the weaker,
worst-direction bound. For output perturbation theta* + N(0, s^2 I), I_h(x) = J^T J / s^2 with J = d theta*/d x
(:func:`rerokit.training.fil.output_perturbation_jacobians`), so eta^2 = sigma_max(J)^2 / s^2.

Their footnote: per-sample FIL depends on the sample, so publishing it can itself leak
information about that sample (:data:`DFIL_WARNING`).
"""

from __future__ import annotations

import numpy as np
import torch

from rerokit._validate import check_positive

__all__ = ["DFIL_WARNING", "output_perturbation_fil_spectral"]

DFIL_WARNING = ("per-sample FIL/dFIL values are data-dependent: publishing them can itself leak information about "
                "the samples; keep them secret (Guo et al. 2022, footnote 2)")


def output_perturbation_fil_spectral(model, X: np.ndarray, y: np.ndarray, noise_std: float, *, chunk: int = 256,
                                     device: str = "cpu") -> np.ndarray:
    """Per-sample FIL eta^2 = ||J^T J||_2 / s^2 = sigma_max(J)^2 / s^2 of output perturbation theta* + N(0, s^2 I).

    Args:
        model: the fitted :class:`rerokit.training.glm.GLMModel` (at its optimum on (X, y)).
        X: training features, shape (n, d).
        y: training labels, shape (n,).
        noise_std: s > 0.
        chunk: samples per block of Jacobians.
        device: where the Jacobians are computed.

    Returns:
        eta^2 per sample, shape (n,) (float64); 1 / eta^2 is the spectral-norm MSE bound of Thm 2.

    Raises:
        ValueError: if ``noise_std`` is not > 0 or the Hessian is singular (as the Jacobians).
    """
    from rerokit.training.fil import output_perturbation_jacobians

    s = check_positive("noise_std", noise_std)
    out = np.empty(len(y))
    for sl, J in output_perturbation_jacobians(model, X, y, chunk=chunk, device=device):
        out[sl] = (torch.linalg.matrix_norm(J, ord=2) ** 2).cpu().numpy() / (s * s)
    return out
