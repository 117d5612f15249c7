"""Fisher information leakage (FIL) accounting (Guo et al. 2022, Secs. 5-6; Hannun et al. 2021).

The Fisher information matrix of the release h about a training point's features x (d
coordinates; the label is public) is I_h(x) = -E[grad_x^2 log p(h | x)]. rerokit reports the
diagonal FIL dFIL = eta_bar^2 = Tr(I_h(x)) / d (Guo et al. Sec. 7.1) and the Cramer-Rao bound
for unbiased attacks MSE >= 1/dFIL (Thm 2; :func:`rerokit.bounds.mse.cramer_rao_mse_lower_bound`).

Output perturbation (Sec. 7.1). h = theta*(D) + N(0, s^2 I): I_h(x) = J^T J / s^2 with
J = d theta* / d x, obtained by implicit differentiation of the optimality condition
grad_theta C(theta*, x) = 0:  J = -H^{-1} d/dx grad_theta l(theta*; x, y),  H = grad^2 C(theta*).

DP-SGD (Sec. 6, Alg. 1). Per step the released noisy sum of clipped gradients
sum_B g~(z) + N(0, sigma^2 C^2 I) has FIM I_t(x) = J_t^T J_t / (sigma C)^2 with
J_t = d g~_t(x) / d x and g~ = g / (GELU(||g||/C - 1) + 1) (smooth clipping, ||g~|| <= 1.1153 C);
it is 0 when z is not in the batch. Composition (Thm 3): I_h ⪯ E[sum_t I_t]; subsampling
(Thm 4): factor kappa = 1 (Eq. 2, always valid) or q / (q + (1 - q) e^{-eps}) (Eq. 3, valid
when the step is eps-DP; rerokit takes eps at a caller-chosen delta from the exact Gaussian
mechanism, so this variant holds except with probability delta per step, as in the paper).
Tr(J_t^T J_t) = sum_i ||J_t e_i||^2 (Eq. 5) is computed with Jacobian-vector products
(torch.func.jvp, vmapped over samples and coordinates); sampling k of the d coordinates
uniformly without replacement and scaling by d/k gives an unbiased estimate.

Devices: every function takes ``device`` (``"cpu"``, ``"cuda"``, ``"auto"``; the tensors of the
computation live there). Random numbers (batches, noise, sampled coordinates) are drawn on the
CPU from the seeded generators and moved, so a seed gives the same draws on every device.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, jacfwd, jacrev, jvp, vmap

from rerokit._validate import check_choice, check_instance, check_int, check_positive, check_probability
from rerokit.bounds.mse import GELU_CLIP_FACTOR, cramer_rao_mse_lower_bound, fil_subsampling_factor, gaussian_dp_epsilon
from rerokit.training.settings import DPSGDSettings

__all__ = [
    "glm_sample_loss",
    "output_perturbation_jacobians",
    "output_perturbation_dfil",
    "output_perturbation_trace_inverse_bound",
    "gelu_clip",
    "clipped_grad_fn",
    "clipped_grad_jacobian_trace",
    "clipped_grad_jacobian_trace_exact",
    "FILAccountant",
    "DPSGDFILResult",
    "FILOptions",
    "dpsgd_fil",
]


# ---------------------------------------------------------------------------------------------
# Output perturbation of a GLM (implicit differentiation)
# ---------------------------------------------------------------------------------------------


def glm_sample_loss(link: str) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
    """The per-sample GLM loss l(theta; x, y) = b(theta x') - <y, theta x'> as a function.

    theta is (K, d'), x' = [1, x] (intercept) or x, y a scalar (identity/logistic) or one-hot
    (softmax); b = t^2/2, log(1+e^t), logsumexp.

    Args:
      link: "identity", "logistic" or "softmax".

    Returns:
      ``loss(theta, xfull, y) -> 0-d tensor``, with ``xfull`` the design row x' (intercept included)
      and ``y`` a 1-element tensor (identity/logistic) or a one-hot vector (softmax).

    Raises:
      ValueError: if ``link`` is unknown.
      TypeError: if ``link`` is not a string.
    """
    check_choice("link", link, ("identity", "logistic", "softmax"))

    def loss(theta: torch.Tensor, xfull: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        eta = theta @ xfull  # (K,)
        if link == "identity":
            return 0.5 * (eta[0] - y[0]) ** 2
        if link == "logistic":
            return F.softplus(eta[0]) - y[0] * eta[0]
        return torch.logsumexp(eta, 0) - torch.dot(y, eta)

    return loss


def _glm_tensors(model, X: np.ndarray, y: np.ndarray,
                 device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    from rerokit.training.glm import design_matrix, glm_targets

    A = torch.as_tensor(design_matrix(X, model.intercept), dtype=torch.float64, device=device)
    Y = torch.as_tensor(glm_targets(model.link, np.asarray(y).reshape(-1), model.theta.shape[0], model.classes),
                        dtype=torch.float64, device=device)
    theta = torch.as_tensor(model.theta, dtype=torch.float64, device=device)
    pen = torch.as_tensor(model.l2, dtype=torch.float64, device=device)
    return A, Y, theta, pen


def output_perturbation_jacobians(model, X: np.ndarray, y: np.ndarray, *, chunk: int = 256, device: str = "cpu"):
    """Yield ``(index_slice, J)`` with J[t] = d theta*/d x_t of shape (chunk, K d', d).

    ``model`` is a :class:`rerokit.training.glm.GLMModel` fitted to optimality on (X, y) (the
    optimality condition is what is differentiated: J = -H^{-1} d/dx grad_theta l(theta*; x, y)).
    d counts the features only (the intercept coordinate is a constant, the label is public).
    float64 throughout, on ``device`` (J too).

    Args:
      model: the fitted :class:`~rerokit.training.glm.GLMModel`.
      X: training features, shape (n, d) (or (n, ...), flattened by the design matrix).
      y: training labels, shape (n,).
      chunk: samples per yielded block (default 256; the last block may be smaller).
      device: where the Jacobians are computed (default the CPU).

    Yields:
      ``(slice(a, b), J)`` with J a float64 tensor of shape (b - a, K d', d).

    Raises:
      ValueError: if the Hessian of the training objective at theta* is singular (raised on the
        first iteration).
    """
    from rerokit.training.devices import resolve_device

    A, Y, theta, pen = _glm_tensors(model, X, y, resolve_device(device))
    n, dp = A.shape
    K = theta.shape[0]
    off = int(model.intercept)
    loss = glm_sample_loss(model.link)

    def total(th_flat: torch.Tensor) -> torch.Tensor:
        th = th_flat.reshape(K, dp)
        return vmap(loss, in_dims=(None, 0, 0))(th, A, Y).sum() + 0.5 * torch.sum(pen * th**2)

    th_flat = theta.reshape(-1)
    H = torch.func.hessian(total)(th_flat)
    if not bool(torch.isfinite(H).all()):
        raise ValueError("the Hessian of the training objective at theta* is not finite (a huge lam or feature "
                         f"values overflow float64; lam = {float(model.lam):g}): use a smaller lam or rescale the data")
    Hc, info = torch.linalg.cholesky_ex(H)
    if int(info) != 0:
        raise ValueError(
            "the Hessian of the training objective is singular at theta*: the optimum is not unique and "
            "d theta*/dx is undefined; use an L2 penalty (lam > 0; on the command line --model ridge, as "
            "--model linear is unpenalised) or remove constant features"
        )

    def grad_theta(th_flat: torch.Tensor, x: torch.Tensor, yy: torch.Tensor) -> torch.Tensor:
        xfull = torch.cat([torch.ones(off, dtype=x.dtype, device=x.device), x])
        return grad(lambda t: loss(t.reshape(K, dp), xfull, yy))(th_flat)

    mixed = vmap(jacfwd(grad_theta, argnums=1), in_dims=(None, 0, 0))
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        Mx = mixed(th_flat, A[a:b, off:], Y[a:b])  # (m, K d', d)
        m, P, dd = Mx.shape
        rhs = Mx.permute(1, 0, 2).reshape(P, m * dd)
        J = -torch.cholesky_solve(rhs, Hc).reshape(P, m, dd).permute(1, 0, 2)
        yield slice(a, b), J


def output_perturbation_dfil(model, X: np.ndarray, y: np.ndarray, noise_std: float, *, chunk: int = 256,
                             device: str = "cpu") -> np.ndarray:
    """Per-sample dFIL = Tr(J^T J) / (noise_std^2 d) of output perturbation theta* + N(0, s^2 I).

    Guo et al. 2022 Sec. 7.1 (their code: ``J.pow(2).sum(1).mean(1) / sigma^2``); the Cramer-Rao
    MSE bound of each sample is 1/dFIL.

    Args:
      model: a :class:`~rerokit.training.glm.GLMModel` fitted to optimality on (X, y).
      X: training features, shape (n, d).
      y: training labels, shape (n,).
      noise_std: standard deviation s of the output noise, > 0.
      chunk: samples per Jacobian block (default 256).
      device: where the Jacobians are computed (default the CPU).

    Returns:
      Float array of shape (n,): the dFIL of each training sample.

    Raises:
      ValueError: if ``noise_std`` is not a finite number > 0, or the Hessian is singular.
    """
    return per_sample_fil(model, X, y, noise_std, chunk, device,
                       lambda J, s, d: (J**2).sum(dim=(1, 2)).cpu().numpy() / (s * s * d))


def per_sample_fil(model, X, y, noise_std, chunk, device, stat) -> np.ndarray:
    """(n,) array of ``stat(J, s, d)`` over the blocks of :func:`output_perturbation_jacobians`
    (s = ``noise_std``, checked first; d = the number of features)."""
    s = check_positive("noise_std", noise_std)
    d = model.num_features
    out = np.empty(np.asarray(X).shape[0])
    for sl, J in output_perturbation_jacobians(model, X, y, chunk=chunk, device=device):
        out[sl] = stat(J, s, d)
    return out


def output_perturbation_trace_inverse_bound(model, X: np.ndarray, y: np.ndarray, noise_std: float, *, chunk: int = 256,
                                            device: str = "cpu") -> np.ndarray:
    """Per-sample Tr(I_h(x)^{-1}) / d with I_h = J^T J / noise_std^2 (Guo et al. Thm 2, first step).

    The tighter Cramer-Rao bound for unbiased attacks, MSE >= Tr(I^{-1})/d >= d/Tr(I) = 1/dFIL
    (the second inequality is Cauchy-Schwarz). +inf where I is singular (some direction of x
    leaves theta* unchanged: no unbiased estimator has finite variance).

    Args:
      model, X, y, noise_std, chunk, device: as in :func:`output_perturbation_dfil`.

    Returns:
      Float array of shape (n,): the MSE lower bound of each training sample (inf where I is
      singular up to a relative 10 d eps of its largest eigenvalue).

    Raises:
      ValueError: as in :func:`output_perturbation_dfil`.
    """

    def trace_inverse(J: torch.Tensor, s: float, d: int) -> np.ndarray:
        ev = torch.linalg.eigvalsh(J.transpose(1, 2) @ J)  # (m, d), ascending
        tiny = ev[:, -1:] * (d * torch.finfo(ev.dtype).eps * 10)
        tr = torch.where((ev > tiny).all(1), (1.0 / ev.clamp_min(1e-300)).sum(1), torch.full_like(ev[:, 0], math.inf))
        return tr.cpu().numpy() * s * s / d

    return per_sample_fil(model, X, y, noise_std, chunk, device, trace_inverse)


# ---------------------------------------------------------------------------------------------
# DP-SGD (Alg. 1)
# ---------------------------------------------------------------------------------------------


def gelu_clip(g: torch.Tensor, clip: float) -> torch.Tensor:
    """g / (GELU(||g||/C - 1) + 1) along the last axis (Alg. 1 line 9; exact erf GELU).

    A smooth stand-in for g / max(1, ||g||/C); ||result|| <= 1.1153 C. The norm uses
    sqrt(||g||^2 + 1e-30) so that its derivative exists at g = 0.

    Args:
      g: gradient(s), shape (..., P).
      clip: clipping norm C > 0 (not validated here).

    Returns:
      The smoothly clipped gradient(s), same shape as ``g``.
    """
    norm = torch.sqrt((g * g).sum(-1, keepdim=True) + 1e-30)
    return g / (F.gelu(norm / clip - 1.0) + 1.0)


def clipped_grad_fn(module: nn.Module, clip: float, loss: str = "cross_entropy") -> Callable:
    """f(params, x, y) -> g~(x) flat (P,): the GELU-clipped per-sample gradient of one sample.

    x has no batch dimension, y is its label, params a ``{name: tensor}`` dict of ``module``.

    Args:
      module: the torch module (called with ``torch.func.functional_call``).
      clip: clipping norm C > 0.
      loss: the training loss; only "cross_entropy" (default).

    Returns:
      The function ``f(params, x, y)``, differentiable in x (for the Jacobian traces).

    Raises:
      ValueError: if ``clip`` is not a finite number > 0 or ``loss`` is unknown.
      TypeError: if ``clip`` is not a number or ``loss`` not a string.
    """
    check_positive("clip", clip)
    check_choice("loss", loss, ("cross_entropy",))

    def f(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        def lo(p):
            out = functional_call(module, p, (x.unsqueeze(0),))
            return F.cross_entropy(out, y.unsqueeze(0))

        g = grad(lo)(params)
        flat = torch.cat([v.reshape(-1) for v in g.values()])
        return gelu_clip(flat, clip)

    return f


def clipped_grad_jacobian_trace(
    fn: Callable,
    params: dict[str, torch.Tensor],
    X: torch.Tensor,
    Y: torch.Tensor,
    *,
    coords: int | None = None,
    generator: torch.Generator | None = None,
    return_outputs: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Tr(J^T J) for each sample, J = d fn(params, x, y)/dx (Guo et al. Eq. 5) by JVPs.

    ``coords=None`` (or >= d) uses all d coordinates (exact); otherwise ``coords`` coordinates
    per sample drawn uniformly without replacement, scaled by d/coords (unbiased).

    Args:
      fn: ``fn(params, x, y) -> (P,)``, e.g. from :func:`clipped_grad_fn`.
      params: the ``{name: tensor}`` parameters passed to ``fn``.
      X: inputs, shape (B, ...).
      Y: labels, shape (B,).
      coords: coordinates sampled per sample, an integer >= 1; None (default) for all of them.
      generator: torch generator for the coordinate sampling (default: torch's global one).
      return_outputs: also return the primal outputs fn(params, x_b, y_b) (default False).

    Returns:
      Tensor of shape (B,); with ``return_outputs`` also fn(params, x_b, y_b) (B, P), the primal
      outputs the JVPs compute anyway (DP-SGD reuses them as the clipped gradients).

    Raises:
      ValueError: if ``coords`` < 1 (TypeError if it is not an integer).
    """
    B = X.shape[0]
    shape = X.shape[1:]
    d = int(np.prod(shape))
    if coords is None or coords >= d:
        idx = torch.arange(d).expand(B, d)
    else:
        k = check_int("coords", coords, minimum=1)
        idx = torch.argsort(torch.rand(B, d, generator=generator), dim=1)[:, :k]  # drawn on the CPU
    k = idx.shape[1]
    tangents = torch.zeros(B, k, d, dtype=X.dtype)
    tangents.scatter_(2, idx.unsqueeze(2), 1.0)
    tangents = tangents.reshape(B, k, *shape).to(X.device)

    def one(x, y, t):
        return jvp(lambda xx: fn(params, xx, y), (x,), (t,))

    prim, per = vmap(vmap(one, in_dims=(None, None, 0)), in_dims=(0, 0, 0))(X, Y, tangents)  # (B, k, P)
    tr = (per**2).sum(-1).sum(-1) * (d / k)
    return (tr, prim[:, 0]) if return_outputs else tr


def clipped_grad_jacobian_trace_exact(fn: Callable, params: dict[str, torch.Tensor], X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Tr(J^T J) per sample from the full Jacobian (torch.func.jacrev): the reference for Eq. 5.

    Args:
      fn: ``fn(params, x, y) -> (P,)``, e.g. from :func:`clipped_grad_fn`.
      params: the ``{name: tensor}`` parameters passed to ``fn``.
      X: inputs, shape (B, ...).
      Y: labels, shape (B,).

    Returns:
      Tensor of shape (B,).
    """
    J = vmap(jacrev(lambda x, y: fn(params, x, y)), in_dims=(0, 0))(X, Y)  # (B, P, *shape)
    return (J.reshape(J.shape[0], -1) ** 2).sum(-1)


class FILAccountant:
    """Per-sample running sum of Tr(I_t(x)) over steps (Thm 3), times the subsampling factor.

    ``add(indices, traces, noise_std, kappa)`` adds kappa * traces / noise_std^2 to the samples
    in ``indices`` (traces = Tr(J_t^T J_t) of the clipped-gradient Jacobian). ``dfil`` =
    accumulated trace / d; ``mse_lower_bound`` = 1 / dfil (Thm 2, unbiased attacks).

    Args:
      n: number of training samples, an integer >= 1.
      dim: d, the number of feature coordinates, an integer >= 1.

    Raises:
      ValueError: if ``n`` or ``dim`` < 1 (TypeError if not an integer).
    """

    def __init__(self, n: int, dim: int):
        self.n = check_int("n", n, minimum=1)
        self.dim = check_int("dim", dim, minimum=1)
        self.trace = np.zeros(self.n)
        self.steps = 0

    def add(self, indices: np.ndarray | torch.Tensor, traces: np.ndarray | torch.Tensor, noise_std: float, kappa: float = 1.0) -> None:
        """Add one step's FIM traces: trace[i] += kappa * traces / noise_std^2 for i in ``indices``.

        Args:
          indices: indices of the samples in the step's batch, shape (m,).
          traces: Tr(J_t^T J_t) of each of them, finite and >= 0, shape (m,) (array or tensor).
          noise_std: standard deviation of the noise on the clipped sum (sigma C), > 0.
          kappa: subsampling factor in (0, 1] (default 1, the convexity bound).

        Raises:
          ValueError: if ``noise_std``/``kappa`` is out of range, the lengths differ, or a trace is
            negative or not finite.
        """
        s = check_positive("noise_std", noise_std)
        kap = check_probability("kappa", kappa)
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        tr = np.asarray(traces.detach().cpu().numpy() if isinstance(traces, torch.Tensor) else traces, dtype=float).reshape(-1)
        if idx.size != tr.size:
            raise ValueError(f"indices and traces must have equal length, got {idx.size} and {tr.size}")
        if not np.all(np.isfinite(tr)) or np.any(tr < 0):
            raise ValueError("traces must be finite and >= 0")
        np.add.at(self.trace, idx, kap * tr / (s * s))
        self.steps += 1

    @property
    def dfil(self) -> np.ndarray:
        """Per-sample dFIL = accumulated trace / d, shape (n,)."""
        return self.trace / self.dim

    def mse_lower_bound(self) -> np.ndarray:
        """Per-sample Cramer-Rao MSE lower bound 1 / dFIL (inf for never-sampled samples), shape (n,)."""
        return np.asarray(cramer_rao_mse_lower_bound(self.dfil))


@dataclass
class DPSGDFILResult:
    """Per-sample dFIL and Cramer-Rao MSE bound after DP-SGD with FIL accounting (Alg. 1).

    Attributes:
      dfil: per-sample dFIL, shape (n,).
      mse_lower_bound: per-sample 1 / dFIL, shape (n,).
      kappa: the subsampling factor used.
      epsilon_step: eps of one step for ``subsampling="amplified"``, else None.
      settings: the run's settings (noise_multiplier, sample_rate, steps, clip, lr, seed, coords,
        subsampling, n, dim; repeats when > 1).
      final_params: the trained parameters (of the last run).
    """

    dfil: np.ndarray
    mse_lower_bound: np.ndarray
    kappa: float
    epsilon_step: float | None
    settings: dict[str, Any]
    final_params: dict[str, torch.Tensor] = field(repr=False, default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary: dFIL max/median, MSE bound min/median/max (finite), never-sampled count, kappa, eps."""
        b = self.mse_lower_bound
        fin = np.isfinite(b)
        return {
            "dfil_max": float(self.dfil.max()),
            "dfil_median": float(np.median(self.dfil)),
            "mse_lower_bound_min": float(b.min()),
            "mse_lower_bound_median": float(np.median(b)),
            "mse_lower_bound_max": float(b[fin].max()) if fin.any() else math.inf,
            "samples_never_sampled": int((self.dfil == 0).sum()),
            "kappa": self.kappa,
            "epsilon_step": self.epsilon_step,
        }


@dataclass(frozen=True)
class FILOptions:
    """How :func:`dpsgd_fil` accounts Fisher information (Guo et al. 2022, Alg. 1).

    Attributes:
      coords: coordinates sampled per sample and step for the trace (Eq. 5), an integer >= 1;
        None (default) for all (exact).
      subsampling: ``"convexity"`` (default, kappa = 1, Thm 4 Eq. 2, always valid) or
        ``"amplified"`` (Eq. 3, with the exact per-step eps at ``delta``).
      delta: delta in (0, 1) of the per-step eps for ``"amplified"``; None (default): 1/(n T).
      repeats: training runs averaged (Monte-Carlo draws of E[sum_t I_t]), an integer >= 1 (default 1).
    """

    coords: int | None = None
    subsampling: str = "convexity"
    delta: float | None = None
    repeats: int = 1

    def __post_init__(self) -> None:
        if self.coords is not None:
            object.__setattr__(self, "coords", check_int("coords", self.coords, minimum=1))
        check_choice("subsampling", self.subsampling, ("convexity", "amplified"))
        if self.delta is not None:
            object.__setattr__(self, "delta", check_probability("delta", self.delta, high_open=True))
        object.__setattr__(self, "repeats", check_int("repeats", self.repeats, minimum=1))


def dpsgd_fil(
    module: nn.Module, X: torch.Tensor, Y: torch.Tensor, settings: DPSGDSettings,
    *,
    seed: int = 0,
    fil: FILOptions = FILOptions(),
    chunk: int = 512,
    progress: bool = False,
    device: str = "cpu",
) -> DPSGDFILResult:
    """Train ``module`` with DP-SGD and account FIL per sample as in Guo et al. 2022, Alg. 1.

    Poisson sampling at ``sample_rate``, GELU clipping at ``clip``, noise
    N(0, (noise_multiplier clip)^2 I) on the sum, step lr * sum / (q n) (``settings``; no momentum).

    ``fil`` (:class:`FILOptions`): ``subsampling="convexity"``: kappa = 1 (Thm 4 Eq. 2, always valid). ``"amplified"``:
    kappa = q/(q + (1-q) e^{-eps}) (Eq. 3) with eps the exact (eps, delta)-DP of one step:
    Gaussian mechanism with replace-one sensitivity 2 * 1.1153 C of the clipped sum (as in Alg. 1
    line 4) and std sigma C; ``delta`` defaults to 1/(n steps) (total failure probability
    <= 1/n, Sec. 6.1). ``coords``: coordinates sampled per sample and step for the trace (Eq. 5);
    None = all (exact). One training run is one Monte-Carlo draw of E[sum_t I_t] (Thm 3, Eq. 4);
    ``repeats`` > 1 averages the accumulated traces of runs with seeds seed, seed+1, ... (the
    paper averages 10 runs). The initial parameters w0 (the module's) are kept fixed across
    repeats: the bound is then conditional on w0, which is data-independent (a stronger
    adversary that knows w0; by convexity of Fisher information it also bounds the
    unconditional FIM averaged over w0). The module's own parameters are not modified.
    ``device``: where the model, data and Jacobians live (batches, noise and coordinates are
    drawn on the CPU: the same draws on every device); ``final_params`` stay there.

    Scaling: the noise on the clipped sum has std sigma C, so each step adds
    kappa Tr(J_t^T J_t) / (sigma C)^2 (as the authors' code, which divides by sigma * C; the
    paper's Alg. 1 line 10 writes kappa / sigma^2, i.e. C = 1).

    Args:
      module: the torch module to train (its parameters are copied, not modified).
      X: training inputs, shape (n, ...).
      Y: integer labels, shape (n,).
      settings: the :class:`rerokit.training.settings.DPSGDSettings`: noise_multiplier sigma > 0,
        sample_rate q in (0, 1], steps T >= 1, clip C > 0 (not None), lr > 0, momentum 0.
      seed: seed of the batches and noise (an integer >= 0; seed + 1 seeds the coordinate sampling).
      fil: the :class:`FILOptions` (coords, subsampling, delta, repeats).
      chunk: samples per block of per-sample gradients (default 512).
      progress: show a tqdm progress bar on stderr (default False).
      device: ``"cpu"`` (default), ``"cuda"`` or ``"auto"``.

    Returns:
      A :class:`DPSGDFILResult` (per-sample dFIL and MSE bound, kappa, epsilon_step, settings,
      final parameters).

    Raises:
      ValueError: if a setting is out of range (noise_multiplier 0, clip None, momentum > 0), or
        ``X`` and ``Y`` differ in length.
      TypeError: if ``settings`` is not a DPSGDSettings or ``fil`` not a FILOptions.
    """
    check_instance("settings", settings, DPSGDSettings)
    check_instance("fil", fil, FILOptions)
    repeats = fil.repeats
    if repeats > 1:
        one = dataclasses.replace(fil, repeats=1)
        runs = [dpsgd_fil(module, X, Y, settings, seed=seed + r, fil=one, chunk=chunk, progress=progress, device=device)
                for r in range(repeats)]
        dfil = np.mean([r.dfil for r in runs], axis=0)
        settings = dict(runs[0].settings, repeats=repeats)
        return DPSGDFILResult(dfil, np.asarray(cramer_rao_mse_lower_bound(dfil)), runs[0].kappa, runs[0].epsilon_step,
                              settings, runs[-1].final_params)
    sigma = check_positive("noise_multiplier", settings.noise_multiplier)  # > 0 here: the FIL divides by it
    if settings.clip is None:
        raise ValueError("clip must be a finite number > 0 (GELU clipping at C), got None")
    if settings.momentum != 0.0:
        raise ValueError(f"momentum must be 0 for FIL accounting (Alg. 1 has none), got {settings.momentum!r}")
    C, q, T, lr = settings.clip, settings.sample_rate, settings.steps, settings.lr
    coords, subsampling, delta = fil.coords, fil.subsampling, fil.delta
    seed = check_int("seed", seed, minimum=0)
    n = X.shape[0]
    if Y.shape[0] != n:
        raise ValueError(f"Y has {Y.shape[0]} entries but X has {n}")
    d = int(np.prod(X.shape[1:]))
    eps_step: float | None = None
    if subsampling == "amplified":
        dl = 1.0 / (n * T) if delta is None else delta
        eps_step = gaussian_dp_epsilon(2 * GELU_CLIP_FACTOR * C, sigma * C, dl)
        kappa = fil_subsampling_factor(q, eps_step)
    else:
        kappa = 1.0
    from rerokit.training.devices import resolve_device

    dev = resolve_device(device)
    X, Y = X.to(dev), Y.to(dev)
    gen = torch.Generator().manual_seed(seed)  # batches and noise
    gen_coords = torch.Generator().manual_seed(seed + 1)  # trace coordinates (Eq. 5)
    params = {k: v.detach().clone().to(dev) for k, v in module.named_parameters()}
    fn = clipped_grad_fn(module, C)
    acc = FILAccountant(n, d)
    it = range(T)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc="DP-SGD + FIL", file=__import__("sys").stderr)
    for _ in it:
        mask = torch.rand(n, generator=gen) < q
        idx = torch.nonzero(mask).reshape(-1)
        total = {k: torch.zeros_like(v) for k, v in params.items()}
        if idx.numel() > 0:
            traces = []
            gsum = None
            for a in range(0, idx.numel(), chunk):
                b = idx[a:a + chunk].to(dev)
                tr, G = clipped_grad_jacobian_trace(fn, params, X[b], Y[b], coords=coords, generator=gen_coords, return_outputs=True)
                traces.append(tr)
                G = G.sum(0)
                gsum = G if gsum is None else gsum + G
            acc.add(idx.numpy(), torch.cat(traces), sigma * C, kappa)
            off = 0
            for k, v in params.items():
                total[k] = gsum[off:off + v.numel()].reshape(v.shape)
                off += v.numel()
        with torch.no_grad():
            for k, v in params.items():
                noise = torch.randn(v.shape, generator=gen, dtype=v.dtype).to(dev) * (sigma * C)
                params[k] = v - lr * (total[k] + noise) / (q * n)
    settings = {
        "noise_multiplier": sigma, "sample_rate": q, "steps": T, "clip": C, "lr": lr, "seed": seed,
        "coords": coords, "subsampling": subsampling, "n": n, "dim": d,
    }
    return DPSGDFILResult(acc.dfil, acc.mse_lower_bound(), kappa, eps_step, settings, params)
