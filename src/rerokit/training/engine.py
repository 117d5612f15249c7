"""DP-SGD / DP-GD training engine: one run (``train_dpsgd``) or K runs vectorised (``train_dpsgd_many``).

One step t of DP-SGD (Abadi et al. 2016; Hayes et al. 2023 Sec. 2, App. A), q = sample_rate,
sigma = noise_multiplier, C = clip, n = len(X)::

    B_t     ~ Poisson(q): each i in [n] independently with probability q   (q = 1: B_t = [n])
    s_t     = sum_{i in B_t} clip_C(grad_theta l(theta_t, z_i))              (clip=None: no clipping)
    noisy_t = s_t + N(0, sigma^2 C^2 I_P)                                    (the privatized sum)
    v_t     = momentum * v_{t-1} + noisy_t / (q n)                           (v_0 = 0)
    theta_{t+1} = theta_t - lr * v_t

The divisor is the *expected* batch size ``q * n`` (a float; Opacus' DPOptimizer divides by its
``expected_batch_size``, the same number whenever ``q n`` is an integer), so the update does not
leak |B_t|. ``noise_multiplier=0`` with ``clip=None`` is plain (S)GD. With momentum the update is
torch's SGD convention, as in Opacus (DPOptimizer wraps torch.optim.SGD).

Randomness and seeds. A run with seed s draws from two ``torch.Generator``s seeded from
``numpy.random.SeedSequence(s)``: one for the Poisson masks (``rand((b, n), float64) < q``) and
one for the noise (``randn((b, P))`` in the training dtype), each drawn in blocks of
``NOISE_BLOCK`` steps (b = NOISE_BLOCK, fewer in the last block). Nothing is drawn for the masks
when q = 1 nor for the noise when sigma = 0. ``train_dpsgd_many`` draws trial k's masks and noise
from generators seeded with ``seeds[k]`` exactly the same way, so trial k of a vectorised run
equals ``train_dpsgd(..., seed=seeds[k])`` on trial k's data (same random numbers; floating-point
results agree to rounding, ~1e-6, because batched kernels sum in a different order). With
``seed=s`` instead of ``seeds``, ``seeds = trial_seeds(s, K)``, and seed k depends only on (s, k).

Transcripts (``record=True``): see :mod:`rerokit.training.transcript`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn
from torch.func import vmap

from rerokit._validate import check_choice, check_int, check_nonnegative, check_positive, check_probability
from rerokit.training.grads import CLIP_EPS, _check_batch, _check_labels, _psg, clip_rows
from rerokit.training.models import ACTIVATIONS, FunctionalModel
from rerokit.training.transcript import Transcript

__all__ = ["Result", "train_dpsgd", "train_dpsgd_many", "trial_seeds", "NOISE_BLOCK", "linear_plan_supported"]

NOISE_BLOCK = 32
"""Steps per block of pre-drawn masks/noise (bounds memory to K_chunk * NOISE_BLOCK * P floats)."""

_RECORD = (False, True, "full", "gbar_only")


@dataclass
class Result:
    """Output of a training run.

    ``theta``: final parameters theta_T, (P,) or (K, P). ``transcript``: a :class:`Transcript`
    (batched for ``train_dpsgd_many``) when ``record`` was set, else None. ``seed``: the seed (int)
    or per-trial seeds (list). ``settings``: the hyper-parameters, echoed.
    """

    theta: torch.Tensor
    transcript: Transcript | None
    seed: Any
    settings: dict = field(default_factory=dict)


def trial_seeds(seed: int, K: int) -> list[int]:
    """Per-trial seeds ``[s_0..s_{K-1}]`` (63-bit) derived from ``seed``; s_k depends only on (seed, k)."""
    seed = check_int("seed", seed, minimum=0)
    K = check_int("K", K, minimum=1)
    st = np.random.SeedSequence(seed).generate_state(K, np.uint64) >> np.uint64(1)
    return [int(s) for s in st]


class _RunRandom:
    """The random streams of one run (masks, noise), drawn block by block."""

    def __init__(self, seed: int):
        s_mask, s_noise = (int(v) for v in (np.random.SeedSequence(seed).generate_state(2, np.uint64) >> np.uint64(1)))
        self.g_mask = torch.Generator().manual_seed(s_mask)
        self.g_noise = torch.Generator().manual_seed(s_noise)

    def masks(self, b: int, n: int, q: float) -> torch.Tensor:
        if q >= 1.0:
            return torch.ones((b, n), dtype=torch.bool)
        return torch.rand((b, n), generator=self.g_mask, dtype=torch.float64) < q

    def noise(self, b: int, P: int, sigma: float, dtype: torch.dtype) -> torch.Tensor:
        if sigma == 0.0:
            return torch.zeros((b, P), dtype=dtype)
        return torch.randn((b, P), generator=self.g_noise, dtype=dtype)


def _validate_settings(noise_multiplier, clip, steps, lr, sample_rate, momentum, record) -> dict:
    sigma = check_nonnegative("noise_multiplier", noise_multiplier)
    if clip is not None:
        clip = check_positive("clip", clip)
    elif sigma > 0:
        raise ValueError("clip must be a finite number > 0 when noise_multiplier > 0 (noise std is noise_multiplier * clip); got None")
    steps = check_int("steps", steps, minimum=1)
    lr = check_positive("lr", lr)
    q = check_probability("sample_rate", sample_rate)
    momentum = check_nonnegative("momentum", momentum)
    if momentum >= 1:
        raise ValueError(f"momentum must be a number in [0, 1), got {momentum!r}")
    if record not in _RECORD or isinstance(record, (int,)) and not isinstance(record, bool):
        raise ValueError(f"record must be one of False, True, 'full', 'gbar_only'; got {record!r}")
    return dict(noise_multiplier=sigma, clip=clip, steps=steps, lr=lr, sample_rate=q, momentum=momentum)


def _check_finite(theta: torch.Tensor, lr: float, first: int) -> None:
    """Never return silent NaNs: diverged runs (non-finite parameters) raise, naming lr."""
    bad = ~torch.isfinite(theta).all(dim=-1)
    if bool(bad.any()):
        ids = (bad.nonzero().reshape(-1) + first).tolist()[:10]
        raise ValueError(f"lr={lr!r} made training diverge (non-finite parameters in trial(s) {ids}); use a smaller lr")


def _record_mode(record) -> str | None:
    if record is False:
        return None
    return "gbar_only" if record == "gbar_only" else "full"


def train_dpsgd(
    fm: FunctionalModel,
    theta0: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    noise_multiplier: float,
    clip: float | None,
    steps: int,
    lr: float,
    sample_rate: float = 1.0,
    seed: int,
    target_index: int | None = None,
    record: bool | str = False,
    momentum: float = 0.0,
    method: str = "auto",
) -> Result:
    """One run of DP-SGD (DP-GD for ``sample_rate=1``) from ``theta0`` (P,) on ``X`` (n, ...), ``y`` (n,).

    See the module docstring for the step. ``record``: False; True/"full" (thetas, noisy_sums,
    gbar, batch_masks); "gbar_only" (no noisy_sums). ``target_index``: index of z* in ``X`` (the
    point the informed adversary does not know; None = all known, gbar is then pure noise).
    ``method``: "vmap" (reference: per step, the (n, P) per-sample clipped gradients of all n
    points by ``per_sample_clipped_grads``), "linear" (exact ghost-clipping path for Sequential
    MLPs, see ``_LinearPlan``), "auto" (linear when supported).
    """
    cfg = _validate_settings(noise_multiplier, clip, steps, lr, sample_rate, momentum, record)
    if not isinstance(fm, FunctionalModel):
        raise TypeError(f"fm must be a FunctionalModel, got {type(fm).__name__}")
    check_choice("method", method, ("auto", "vmap", "linear"))
    seed = check_int("seed", seed, minimum=0)
    _check_batch(fm, theta0, X, y)
    _check_labels(fm, theta0, X[:1], y)
    n, P = int(X.shape[0]), fm.num_params
    if n < 1:
        raise ValueError("X must hold at least one training point (n >= 1), got n = 0")
    if target_index is not None:
        target_index = check_int("target_index", target_index, minimum=0, maximum=n - 1)
    dtype = theta0.dtype
    dev = theta0.device
    X, y = X.to(device=dev, dtype=dtype), y.to(device=dev, dtype=torch.long)
    sigma, C, T, q, mom = cfg["noise_multiplier"], cfg["clip"], cfg["steps"], cfg["sample_rate"], cfg["momentum"]
    ebs = q * n
    scale = sigma * (C if C is not None else 0.0)
    mode = _record_mode(record)
    rng = _RunRandom(seed)
    plan = _select_plan(fm, method, X.dim() + 1)
    if plan is not None:
        inputs = plan.inputs(X[None])
        tgt1 = None if target_index is None else torch.tensor([target_index], device=dev)

    theta = theta0.detach().clone()
    v = torch.zeros_like(theta)
    if mode:
        thetas = torch.empty((T, P), dtype=dtype, device=dev)
        gbars = torch.empty((T, P), dtype=dtype, device=dev)
        masks_all = torch.empty((T, n), dtype=torch.bool, device=dev)
        sums = torch.empty((T, P), dtype=dtype, device=dev) if mode == "full" else None
    for t0 in range(0, T, NOISE_BLOCK):
        b = min(NOISE_BLOCK, T - t0)
        mblk = rng.masks(b, n, q).to(dev)
        zblk = rng.noise(b, P, sigma, dtype).to(dev)
        for j in range(b):
            t = t0 + j
            w = mblk[j].to(dtype)
            known = w.clone()
            if target_index is not None:
                known[target_index] = 0.0
            if plan is None:
                G = clip_rows(_psg(fm, theta, X, y), C).detach()  # per_sample_clipped_grads, checks done
                s_batch, s_known = w @ G, known @ G
            else:
                with torch.no_grad():
                    s_b, s_t = plan.clipped_sums(theta[None], X[None], y[None], C, w[None], tgt1, inputs=inputs)
                s_batch = s_b[0]
                s_known = s_batch if s_t is None else s_batch - s_t[0]
            noisy = s_batch + scale * zblk[j]
            if mode:
                thetas[t] = theta
                gbars[t] = noisy - s_known
                masks_all[t] = mblk[j]
                if sums is not None:
                    sums[t] = noisy
            upd = noisy / ebs
            if mom > 0:
                v = mom * v + upd
                upd = v
            theta = theta - lr * upd
    _check_finite(theta[None], lr, 0)
    settings = dict(cfg, expected_batch_size=ebs, n=n, P=P, record=mode or False,
                    method="linear" if plan is not None else "vmap")
    tr = None
    if mode:
        tr = Transcript(thetas=thetas, gbar=gbars, batch_masks=masks_all, final_theta=theta.clone(), noisy_sums=sums,
                        target_index=target_index, settings=settings, seed=seed, batched=False)
    return Result(theta=theta, transcript=tr, seed=seed, settings=settings)


# ---------------------------------------------------------------------------------------------
# Vectorised trials


class _LinearPlan:
    """Fast exact per-sample clipped sums for ``nn.Sequential`` MLPs ([Flatten], Linear, activation, ...).

    For a linear layer z = a W^T + b the per-sample gradient is ``delta_i a_i^T`` (and ``delta_i``
    for the bias), with ``delta_i = dl_i/dz_i``, so ``||g_i||^2 = sum_layers ||delta_i||^2 (||a_i||^2 + 1)``
    and ``sum_i v_i clip_C(g_i)`` is ``(v c delta)^T a`` per layer ("ghost clipping", Goodfellow 2015;
    Li et al. 2022): no (n, P) per-sample gradient tensor is formed. The backward pass is written
    out (cross-entropy: dl/dlogits = softmax - onehot; activations by closed-form derivatives, GELU
    and others by autograd), batched over K trials with bmm. Checked against the generic vmap
    path in tests.
    """

    def __init__(self, fm: FunctionalModel):
        mod = fm.module
        if not isinstance(mod, nn.Sequential):
            raise ValueError("module is not an nn.Sequential")
        self.layers: list[tuple[str, Any]] = []
        pos = {n: i for i, n in enumerate(fm.names)}
        for i, (name, child) in enumerate(mod.named_children()):
            if isinstance(child, nn.Flatten):
                if i != 0 or child.start_dim != 1 or child.end_dim != -1:
                    raise ValueError("unsupported Flatten")
                self.layers.append(("flatten", None))
            elif isinstance(child, nn.Linear):
                wn, bn = f"{name}.weight", f"{name}.bias"
                self.layers.append(("linear", (pos[wn], pos[bn] if child.bias is not None else None)))
            elif isinstance(child, tuple(ACTIVATIONS.values())):
                self.layers.append(("act", child))
            else:
                raise ValueError(f"unsupported layer {type(child).__name__}")
        if len(pos) != 2 * sum(1 for k, o in self.layers if k == "linear" and o[1] is not None) + sum(
            1 for k, o in self.layers if k == "linear" and o[1] is None
        ):
            raise ValueError("module has parameters outside its Linear layers")
        self.has_flatten = bool(self.layers) and self.layers[0][0] == "flatten"
        self.fm = fm

    def inputs(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(k, n, d) input vectors and their squared norms (k, n), reusable across steps."""
        k, n = X.shape[:2]
        h = X.reshape(k, n, -1) if self.has_flatten else X
        if h.dim() != 3:
            raise ValueError("linear plan needs per-sample vector inputs")
        return h, (h * h).sum(-1)

    @staticmethod
    def _act_backward(act: nn.Module, z: torch.Tensor, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """u * act'(z) (h = act(z))."""
        if isinstance(act, nn.ELU) and not act.inplace:
            if act.alpha == 1.0:  # z > 0: h + 1 = z + 1 > 1 -> 1; z <= 0: h + 1 = e^z <= 1
                return u * (h + 1.0).clamp_(max=1.0)
            return u * torch.where(z > 0, torch.ones_like(z), h + act.alpha)
        if isinstance(act, nn.ReLU):
            return u * (z > 0).to(u.dtype)
        if isinstance(act, nn.Tanh):
            return u * (1 - h * h)
        if isinstance(act, nn.Sigmoid):
            return u * (h * (1 - h))
        with torch.enable_grad():
            zz = z.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(act(zz), zz, grad_outputs=u)
        return g

    def clipped_sums(self, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, C: float | None,
                     w: torch.Tensor, target: torch.Tensor | None = None, inputs=None):
        """theta (k, P), X (k, n, ...), y (k, n), w (k, n) batch weights; target (k,) or None.

        Returns ``(s, s_target)``: ``s[k] = sum_i w[k, i] clip_C(g_{k,i})`` (k, P) and
        ``s_target[k] = w[k, t_k] clip_C(g_{k, t_k})`` (or None). ``inputs``: ``self.inputs(X)``.
        """
        fm = self.fm
        k, n = y.shape
        params = fm.unflatten(theta)
        plist = [params[nm] for nm in fm.names]
        h, a0_sq = self.inputs(X) if inputs is None else inputs
        tape = []
        for kind, obj in self.layers:
            if kind == "flatten":
                continue
            if kind == "linear":
                wi, bi = obj
                W = plist[wi]
                z = torch.bmm(h, W.transpose(1, 2)) if bi is None else torch.baddbmm(plist[bi].unsqueeze(1), h, W.transpose(1, 2))
                tape.append(("linear", h, W, obj))
                h = z
            else:
                out = obj(h)
                tape.append(("act", h, out, obj))
                h = out
        # d l_i / d logits = softmax - onehot (cross-entropy of each sample)
        e = (h - h.amax(-1, keepdim=True)).exp()
        u = e / e.sum(-1, keepdim=True)
        u.scatter_add_(-1, y.unsqueeze(-1), torch.full((k, n, 1), -1.0, dtype=u.dtype, device=u.device))
        first_lin = next(i for i, t in enumerate(tape) if t[0] == "linear")
        grads = []  # (a, delta, (wi, bi)) per linear layer
        for i in range(len(tape) - 1, first_lin - 1, -1):
            kind, a, W_or_out, obj = tape[i]
            if kind == "linear":
                grads.append((a, u, obj, i == 0))  # i == 0: its input is X itself (cached norms)
                if i > first_lin:
                    u = torch.bmm(u, W_or_out)
            else:
                u = self._act_backward(obj, a, W_or_out, u)
        sq = torch.zeros((k, n), dtype=theta.dtype, device=theta.device)
        for a, d, (wi, bi), first in grads:
            a2 = (a0_sq if first else (a * a).sum(-1)) + (1.0 if bi is not None else 0.0)
            sq = sq + (d * d).sum(-1) * a2
        if C is None:
            c = torch.ones_like(sq)
        else:
            c = (C / (sq.sqrt() + CLIP_EPS)).clamp(max=1.0)
        vc = w * c
        s = torch.empty((k, fm.num_params), dtype=theta.dtype, device=theta.device)
        st = None if target is None else torch.empty((k, fm.num_params), dtype=theta.dtype, device=theta.device)
        ar = torch.arange(k, device=theta.device)
        for a, d, (wi, bi), _ in grads:
            dv = d * vc.unsqueeze(-1)
            o0, o1 = fm.offsets[wi], fm.offsets[wi + 1]
            s[:, o0:o1] = torch.bmm(dv.transpose(1, 2), a).reshape(k, -1)
            if bi is not None:
                s[:, fm.offsets[bi]:fm.offsets[bi + 1]] = dv.sum(1)
            if st is not None:
                dt, at = dv[ar, target], a[ar, target]  # (k, o), (k, i)
                st[:, o0:o1] = (dt.unsqueeze(-1) * at.unsqueeze(1)).reshape(k, -1)
                if bi is not None:
                    st[:, fm.offsets[bi]:fm.offsets[bi + 1]] = dt
        return s, st


def _select_plan(fm: FunctionalModel, method: str, batched_x_dim: int) -> "_LinearPlan | None":
    """The fast MLP plan for method auto/linear (None for vmap or when unsupported under auto)."""
    if method == "vmap":
        return None
    try:
        plan = _LinearPlan(fm)
        if not any(kind == "linear" for kind, _ in plan.layers):
            raise ValueError("no Linear layer")
        if (not plan.has_flatten) and batched_x_dim != 3:
            raise ValueError("inputs are not vectors and the model has no leading Flatten")
    except (ValueError, KeyError) as e:
        if method == "linear":
            raise ValueError(f"method='linear' needs an nn.Sequential MLP of Flatten/Linear/activation layers: {e}") from None
        return None
    return plan


def linear_plan_supported(fm: FunctionalModel) -> bool:
    """True if ``train_dpsgd_many(method='auto')`` uses the fast MLP path for this model."""
    try:
        p = _LinearPlan(fm)
    except (ValueError, KeyError):
        return False
    return any(kind == "linear" for kind, _ in p.layers)


def _vmap_clipped_sums(fm, C):
    """Same contract as ``_LinearPlan.clipped_sums``, from (k, n, P) per-sample gradients (vmap of vmap(grad))."""

    def one(theta, X, y):
        return clip_rows(_psg(fm, theta, X, y), C)

    batched = vmap(one, in_dims=(0, 0, 0))

    def run(theta, X, y, C_, w, target=None, inputs=None):
        G = batched(theta, X, y)  # (k, n, P)
        s = torch.einsum("kn,knp->kp", w, G)
        if target is None:
            return s, None
        ar = torch.arange(G.shape[0], device=G.device)
        return s, G[ar, target] * w[ar, target].unsqueeze(-1)

    return run


def _as_target_array(target_index, K: int, n: int) -> torch.Tensor | None:
    if target_index is None:
        return None
    if isinstance(target_index, (int, np.integer)) and not isinstance(target_index, bool):
        t = check_int("target_index", target_index, minimum=0, maximum=n - 1)
        return torch.full((K,), t, dtype=torch.long)
    arr = torch.as_tensor(np.asarray(target_index))
    if arr.shape != (K,) or arr.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise ValueError(f"target_index must be None, an int, or K={K} integers; got shape {tuple(arr.shape)} dtype {arr.dtype}")
    arr = arr.long()
    if bool(((arr < 0) | (arr >= n)).any()):
        raise ValueError(f"target_index entries must be integers in [0, {n - 1}]")
    return arr


def train_dpsgd_many(
    fm: FunctionalModel,
    theta0: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    noise_multiplier: float,
    clip: float | None,
    steps: int,
    lr: float,
    sample_rate: float = 1.0,
    seeds: Sequence[int] | None = None,
    seed: int | None = None,
    target_index: int | Sequence[int] | torch.Tensor | None = None,
    record: bool | str = False,
    momentum: float = 0.0,
    chunk_size: int | None = None,
    method: str = "auto",
    progress: bool = False,
    shared: tuple[torch.Tensor, torch.Tensor] | None = None,
    num_threads: int | None = None,
) -> Result:
    """K independent DP-SGD runs, vectorised over trials (no Python loop over trials in the math).

    Shapes: ``theta0`` (P,) shared or (K, P); ``X`` (K, n, ...); ``y`` (K, n) integer labels.
    ``shared=(Xs (m, ...), ys (m,))``: points common to every trial (e.g. a fixed D-), prepended
    to each trial's own ``X[k]`` (K, r, ...) without materialising K copies: trial k's dataset is
    ``cat([Xs, X[k]])`` (n = m + r, and ``target_index`` indexes that concatenation, so the
    per-trial target at ``X[k, 0]`` has index m). ``X`` may also be an ``expand``ed view; only
    one chunk of trials is materialised at a time. Tensors live on ``theta0``'s device; masks and
    noise are drawn on the CPU (device-independent streams) and moved. ``num_threads``: torch
    intra-op threads for this call only (restored after); on a loaded shared machine 1 thread was
    4x faster than 2 (benchmarks/trials_vmap.py), on an idle one more threads help.
    Exactly one of ``seeds`` (K ints) or ``seed`` (then ``seeds = trial_seeds(seed, K)``).
    ``target_index``: None, one int for all trials, or K ints. ``record``: as in
    :func:`train_dpsgd` (tensors get a leading K). ``chunk_size``: trials processed together
    (default: bounded memory, see below). ``method``: "vmap" (``vmap`` over trials of
    ``vmap(grad)`` over samples: forms (chunk, n, P) per-sample gradients), "linear" (exact fast
    path for Sequential MLPs, see ``_LinearPlan``), or "auto" (linear when supported).
    Trial k equals ``train_dpsgd(fm, theta0[k], X[k], y[k], ..., seed=seeds[k])`` up to rounding.
    Returns a :class:`Result` with ``theta`` (K, P) and a batched transcript.
    """
    if num_threads is not None:
        num_threads = check_int("num_threads", num_threads, minimum=1)
        before = torch.get_num_threads()
        torch.set_num_threads(num_threads)
        try:
            return train_dpsgd_many(
                fm, theta0, X, y, noise_multiplier=noise_multiplier, clip=clip, steps=steps, lr=lr,
                sample_rate=sample_rate, seeds=seeds, seed=seed, target_index=target_index, record=record,
                momentum=momentum, chunk_size=chunk_size, method=method, progress=progress, shared=shared,
            )
        finally:
            torch.set_num_threads(before)
    cfg = _validate_settings(noise_multiplier, clip, steps, lr, sample_rate, momentum, record)
    if not isinstance(fm, FunctionalModel):
        raise TypeError(f"fm must be a FunctionalModel, got {type(fm).__name__}")
    check_choice("method", method, ("auto", "vmap", "linear"))
    if not isinstance(X, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError("X and y must be torch tensors")
    if y.dim() != 2 or X.dim() < 2 or tuple(X.shape[:2]) != tuple(y.shape):
        raise ValueError(f"X must have shape (K, n, ...) and y (K, n); got X {tuple(X.shape)}, y {tuple(y.shape)}")
    if y.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    K, n = int(y.shape[0]), int(y.shape[1])
    if shared is not None:
        if not (isinstance(shared, (tuple, list)) and len(shared) == 2 and all(isinstance(t, torch.Tensor) for t in shared)):
            raise TypeError("shared must be a pair (Xs, ys) of tensors")
        Xs, ys = shared
        if ys.dim() != 1 or Xs.shape[0] != ys.shape[0] or tuple(Xs.shape[1:]) != tuple(X.shape[2:]):
            raise ValueError(f"shared must be (Xs (m, {tuple(X.shape[2:])}), ys (m,)); got Xs {tuple(Xs.shape)}, ys {tuple(ys.shape)}")
        if ys.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
            raise TypeError(f"shared labels ys must be integers, got dtype {ys.dtype}")
        n = n + int(ys.shape[0])
    if n < 1:
        raise ValueError("X must hold at least one training point per trial (n >= 1), got n = 0")
    P = fm.num_params
    if not isinstance(theta0, torch.Tensor) or theta0.shape not in ((P,), (K, P)):
        raise ValueError(f"theta0 must have shape (P,)=({P},) or (K, P)=({K}, {P}); got {getattr(theta0, 'shape', type(theta0))}")
    if (seeds is None) == (seed is None):
        raise ValueError("give exactly one of seeds (K ints) or seed (one int)")
    if seeds is None:
        seeds = trial_seeds(seed, K)
    else:
        seeds = [check_int(f"seeds[{i}]", s, minimum=0) for i, s in enumerate(seeds)]
        if len(seeds) != K:
            raise ValueError(f"seeds must have K={K} entries, got {len(seeds)}")
    tgt = _as_target_array(target_index, K, n)
    th_check = theta0 if theta0.dim() == 1 else theta0[0]
    _check_labels(fm, th_check, X[0, :1], y)
    if shared is not None:
        _check_labels(fm, th_check, X[0, :1], shared[1], name="shared labels ys")
    if theta0.dim() == 1:
        theta0 = theta0.unsqueeze(0).expand(K, P)
    dtype, dev = theta0.dtype, theta0.device
    X = X.to(device=dev, dtype=dtype)
    y = y.to(device=dev, dtype=torch.long)
    if shared is not None:
        Xs, ys = shared[0].to(device=dev, dtype=dtype), shared[1].to(device=dev, dtype=torch.long)

    plan = _select_plan(fm, method, X.dim())
    if plan is not None:
        sums_fn = plan.clipped_sums
        # small chunks keep the (chunk, n, width) activations in cache; 64 was fastest on 2 cores
        default_chunk = max(1, min(K, 64, 2**24 // max(1, n * X[0, 0].numel())))
    else:
        sums_fn = _vmap_clipped_sums(fm, cfg["clip"])
        default_chunk = max(1, min(K, 2**24 // max(1, n * P)))
    if chunk_size is None:
        chunk_size = default_chunk
    chunk_size = check_int("chunk_size", chunk_size, minimum=1)

    sigma, C, T, q, lr, mom = (cfg[k] for k in ("noise_multiplier", "clip", "steps", "sample_rate", "lr", "momentum"))
    ebs = q * n
    scale = sigma * (C if C is not None else 0.0)
    mode = _record_mode(record)
    if mode:
        thetas = torch.empty((K, T, P), dtype=dtype, device=dev)
        gbars = torch.empty((K, T, P), dtype=dtype, device=dev)
        masks_all = torch.empty((K, T, n), dtype=torch.bool, device=dev)
        sums_rec = torch.empty((K, T, P), dtype=dtype, device=dev) if mode == "full" else None
    final = torch.empty((K, P), dtype=dtype, device=dev)

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=K * T, desc="dpsgd trials x steps", unit="step", leave=False)
    with torch.no_grad():
        for a in range(0, K, chunk_size):
            b_ = min(K, a + chunk_size)
            k = b_ - a
            rngs = [_RunRandom(s) for s in seeds[a:b_]]
            theta = theta0[a:b_].detach().clone()
            v = torch.zeros_like(theta)
            Xc, yc = X[a:b_], y[a:b_]
            if shared is not None:
                Xc = torch.cat([Xs.unsqueeze(0).expand(k, *Xs.shape), Xc], 1)
                yc = torch.cat([ys.unsqueeze(0).expand(k, -1), yc], 1)
            tgt_c = None if tgt is None else tgt[a:b_].to(dev)
            inputs = None if plan is None else plan.inputs(Xc)
            for t0 in range(0, T, NOISE_BLOCK):
                bl = min(NOISE_BLOCK, T - t0)
                mblk = torch.stack([r.masks(bl, n, q) for r in rngs]).to(dev)  # (k, bl, n)
                zblk = torch.stack([r.noise(bl, P, sigma, dtype) for r in rngs]).to(dev)  # (k, bl, P)
                for j in range(bl):
                    t = t0 + j
                    w = mblk[:, j].to(dtype)
                    s_b, s_t = sums_fn(theta, Xc, yc, C, w, tgt_c if mode else None, inputs=inputs)
                    noisy = s_b + scale * zblk[:, j]
                    if mode:
                        thetas[a:b_, t] = theta
                        # gbar = noisy - sum over known points in B_t = noise + w_target clip_C(g_target)
                        gbars[a:b_, t] = noisy - s_b if s_t is None else noisy - (s_b - s_t)
                        masks_all[a:b_, t] = mblk[:, j]
                        if sums_rec is not None:
                            sums_rec[a:b_, t] = noisy
                    upd = noisy / ebs
                    if mom > 0:
                        v = mom * v + upd
                        upd = v
                    theta = theta - lr * upd
                if bar is not None:
                    bar.update(k * bl)
            _check_finite(theta, lr, a)
            final[a:b_] = theta
    if bar is not None:
        bar.close()
    settings = dict(cfg, expected_batch_size=ebs, n=n, P=P, K=K, record=mode or False,
                    method="linear" if plan is not None else "vmap")
    tr = None
    if mode:
        tr = Transcript(thetas=thetas, gbar=gbars, batch_masks=masks_all, final_theta=final.clone(), noisy_sums=sums_rec,
                        target_index=tgt, settings=settings, seed=list(seeds), batched=True)
    return Result(theta=final, transcript=tr, seed=list(seeds), settings=settings)
