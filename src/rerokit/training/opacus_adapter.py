"""Train with Opacus' own DP-SGD machinery and record the informed adversary's transcript.

Components (opacus 1.x): ``GradSampleModule`` (per-sample gradients by hooks), ``DPOptimizer``
(clips with factor ``min(1, C / (||g|| + 1e-6))``, sums into ``p.summed_grad``, adds
``N(0, (sigma C)^2)`` noise into ``p.grad = summed_grad + noise`` and divides by
``expected_batch_size``), ``UniformWithReplacementSampler`` (Opacus' Poisson sampler: each point
independently with probability q; q = 1 gives the full batch) and ``RDPAccountant``, attached as
the optimizer's step hook exactly as ``PrivacyEngine`` does.

Recording happens in the optimizer's step hook (after noise and scaling, before the parameter
update), per step t:

- ``thetas[t]``: the parameters the gradients were computed at (not yet updated);
- ``noisy_sums[t] = p.grad * expected_batch_size`` = ``summed_grad + noise`` (up to one float
  rounding of the divide/multiply, ~1e-7 relative);
- ``batch_masks[t]``: the indices the sampler drew;
- ``gbar[t] = noisy_sums[t] - (summed_grad - 1[target in B_t] clip_C(g_target))``, with the
  target's clipped gradient taken from Opacus' own ``grad_sample`` and clip factor.

``expected_batch_size = sample_rate * n`` (a float, like :func:`rerokit.training.train_dpsgd`;
``PrivacyEngine.make_private`` uses ``int(n * sample_rate)``, the same when it is an integer).
The accountant's history ``[(noise_multiplier, sample_rate, steps), ...]`` is returned in
``transcript.settings["accountant_history"]`` (the input of
``rerokit.accounting.events.segments_from_opacus_history``).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rerokit._validate import check_instance, check_int
from rerokit.training.grads import check_labels
from rerokit.training.models import FunctionalModel
from rerokit.training.settings import DPSGDSettings
from rerokit.training.transcript import Transcript

__all__ = ["record_opacus_transcript"]


def _grad_sample(p: torch.Tensor) -> torch.Tensor:
    """The per-sample gradients Opacus' ``GradSampleModule`` stored on parameter ``p`` (its public
    ``p.grad_sample``): one tensor (n, *p.shape), or a list of them when several backward passes
    accumulated before the step (concatenated along the samples)."""
    gs = p.grad_sample
    return torch.cat(gs, dim=0) if isinstance(gs, (list, tuple)) else gs


def record_opacus_transcript(
    module: nn.Module, X: torch.Tensor, y: torch.Tensor, target_index: int | None,
    settings: DPSGDSettings,
    seed: int = 0,
    *,
    theta0: torch.Tensor | None = None,
    secure_mode: bool = False,
) -> Transcript:
    """Train a copy of ``module`` with Opacus DP-SGD on ``X`` (n, ...), ``y`` (n,) and return the transcript.

    The module passed in is not modified. Loss: cross-entropy, per-sample gradients of the summed
    loss. Randomness: the sampler and the noise use ``torch.Generator``s seeded from ``seed``
    (Opacus' streams, so the draws differ from :func:`rerokit.training.train_dpsgd`'s for the same
    seed).

    Args:
      module: the torch module to train (deep-copied).
      X: training inputs, a tensor of shape (n, ...) with n >= 1 (cast to the module's dtype).
      y: integer class labels, a tensor of shape (n,), in [0, number of outputs).
      target_index: index of the target z* in ``X`` (in [0, n)), or None to treat every point as
        known (``gbar`` is then exactly the noise).
      settings: the :class:`rerokit.training.settings.DPSGDSettings` (noise_multiplier sigma >= 0,
        clip C > 0 - never None here -, steps, lr, sample_rate q in (0, 1], momentum in [0, 1)).
      seed: seed of the sampler and noise generators, an integer >= 0 (default 0).
      theta0: starting parameters, a tensor of shape (P,) (default: the module's current ones).
      secure_mode: passed to Opacus' ``DPOptimizer`` (default False).

    Returns:
      A single-run :class:`Transcript` (``record="full"`` layout) whose ``settings`` include
      ``accountant_history`` (also ``transcript.dp_history()``) and ``trainer="opacus"``.

    Raises:
      ValueError: if ``settings.clip`` is None, ``X``/``y`` shapes disagree or n = 0,
        ``target_index`` is out of range, ``theta0`` has the wrong shape, or a label is out of range.
      TypeError: if ``settings`` is not a DPSGDSettings, ``X``/``y`` are not tensors, or ``y`` is not
        an integer dtype.
    """
    from opacus import GradSampleModule
    from opacus.accountants import RDPAccountant
    from opacus.optimizers import DPOptimizer
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler

    check_instance("settings", settings, DPSGDSettings)
    if settings.clip is None:
        raise ValueError("settings.clip must be a finite number > 0 (Opacus clips every per-sample gradient); got None")
    sigma, C, T, lr, q, momentum = (settings.noise_multiplier, settings.clip, settings.steps, settings.lr,
                                    settings.sample_rate, settings.momentum)
    seed = check_int("seed", seed, minimum=0)
    if not isinstance(X, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError("X and y must be torch tensors")
    if y.dim() != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X (n, ...) and y (n,) must have the same n, got X {tuple(X.shape)} and y {tuple(y.shape)}")
    n = int(X.shape[0])
    if target_index is not None:
        target_index = check_int("target_index", target_index, minimum=0, maximum=n - 1)

    m = copy.deepcopy(module)
    fm = FunctionalModel(m)
    P = fm.num_params
    if theta0 is not None:
        if not isinstance(theta0, torch.Tensor) or theta0.shape != (P,):
            raise ValueError(f"theta0 must be a tensor of shape (P,) = ({P},)")
        fm.load_flat(theta0, m)
    dtype = next(m.parameters()).dtype
    X = X.to(dtype)
    if y.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    y = y.long()
    if n < 1:
        raise ValueError("X must hold at least one training point (n >= 1), got n = 0")
    check_labels(fm, fm.current_flat(), X[:1], y)

    s_sample, s_noise = (int(v) for v in (np.random.SeedSequence(seed).generate_state(2, np.uint64) >> np.uint64(1)))
    g_sample = torch.Generator().manual_seed(s_sample)
    g_noise = torch.Generator().manual_seed(s_noise)
    ebs = q * n

    gsm = GradSampleModule(m, loss_reduction="sum")
    params = [p for p in m.parameters()]
    opt = DPOptimizer(
        torch.optim.SGD(params, lr=lr, momentum=momentum),
        noise_multiplier=sigma,
        max_grad_norm=C,
        expected_batch_size=ebs,
        loss_reduction="mean",
        generator=g_noise,
        secure_mode=secure_mode,
    )
    accountant = RDPAccountant()
    acc_hook = accountant.get_optimizer_hook_fn(sample_rate=q)
    sampler = UniformWithReplacementSampler(num_samples=n, sample_rate=q, generator=g_sample, steps=T)

    thetas = torch.empty((T, P), dtype=dtype)
    sums = torch.empty((T, P), dtype=dtype)
    gbars = torch.empty((T, P), dtype=dtype)
    masks = torch.zeros((T, n), dtype=torch.bool)
    state = {"t": 0, "idx": []}

    def hook(optim: DPOptimizer) -> None:
        acc_hook(optim)
        t = state["t"]
        noisy = torch.cat([p.grad.detach().reshape(-1) for p in params]) * ebs
        summed = torch.cat([p.summed_grad.detach().reshape(-1) for p in params])
        known = summed
        idx = state["idx"]
        if target_index is not None and target_index in idx:
            pos = idx.index(target_index)
            gs = [_grad_sample(p)[pos].to(p.dtype) for p in params]
            norm = torch.stack([g.reshape(-1).norm(2) for g in gs]).norm(2)  # Opacus' order of norms
            factor = (C / (norm + 1e-6)).clamp(max=1.0)
            known = summed - factor * torch.cat([g.reshape(-1) for g in gs])
        sums[t] = noisy
        gbars[t] = noisy - known

    opt.attach_step_hook(hook)
    for t, idx in enumerate(sampler):
        state["t"], state["idx"] = t, list(idx)
        masks[t, idx] = True
        with torch.no_grad():
            thetas[t] = torch.cat([p.detach().reshape(-1) for p in params])
        opt.zero_grad(set_to_none=True)
        sel = torch.as_tensor(idx, dtype=torch.long)
        out = gsm(X[sel])
        loss = F.cross_entropy(out, y[sel], reduction="sum")
        with warnings.catch_warnings():  # inputs need no grad; Opacus' hooks only need module grads
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            loss.backward()
        opt.step()
    final = torch.cat([p.detach().reshape(-1) for p in params]).clone()
    settings = dict(noise_multiplier=sigma, clip=C, steps=T, lr=lr, sample_rate=q, momentum=momentum,
                    expected_batch_size=ebs, n=n, P=P, record="full", trainer="opacus",
                    accountant_history=[tuple(h) for h in accountant.history])
    return Transcript(thetas=thetas, gbar=gbars, batch_masks=masks, final_theta=final, noisy_sums=sums,
                      target_index=target_index, settings=settings, seed=seed, batched=False)
