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
when q = 1 nor for the noise when sigma = 0. ``train_dpsgd_many(..., seed=seeds)`` (K seeds) draws
trial k's masks and noise from generators seeded with ``seeds[k]`` exactly the same way, so trial k
of a vectorised run equals ``train_dpsgd(..., seed=seeds[k])`` on trial k's data (same random
numbers; floating-point results agree to rounding, ~1e-6, because batched kernels sum in a
different order). With one seed ``seed=s``, ``seeds = trial_seeds(s, K)``, and seed k depends only
on (s, k).

The hyper-parameters are a :class:`rerokit.training.settings.DPSGDSettings`, how the engine runs
(backend, chunks, threads, progress, compile, device) an
:class:`rerokit.training.settings.EngineOptions`.

Transcripts (``record=True``): see :mod:`rerokit.training.transcript`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np
import torch
from torch.func import vmap

from rerokit._validate import check_instance, check_int
from rerokit.seeding import trial_seeds  # noqa: F401 - re-exported: rerokit.training.trial_seeds
from rerokit.training.grads import check_batch, check_labels, per_sample_grads_unchecked, clip_rows
from rerokit.training.mlp import MLPInputs, MLPPlan, mlp_plan
from rerokit.training.models import FunctionalModel
from rerokit.training.settings import DPSGDSettings, EngineOptions
from rerokit.training.transcript import Transcript

__all__ = ["Result", "DPSGDSettings", "EngineOptions", "train_dpsgd", "train_dpsgd_many", "trial_seeds",
           "NOISE_BLOCK", "linear_plan_supported", "shared_chunk_size", "check_record"]

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


def check_record(record: Any) -> bool | str:
    """``record`` checked: False, True, ``"full"`` or ``"gbar_only"`` (else ValueError naming it)."""
    if record not in _RECORD or isinstance(record, (int,)) and not isinstance(record, bool):
        raise ValueError(f"record must be one of False, True, 'full', 'gbar_only'; got {record!r}")
    return record


def _check_settings(settings: Any) -> DPSGDSettings:
    return check_instance("settings", settings, DPSGDSettings)


def _check_options(options: Any) -> EngineOptions:
    return check_instance("options", options, EngineOptions, EngineOptions)


@contextlib.contextmanager
def _threads(num_threads: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``num_threads`` inside the block (None: unchanged), restored after.

    The count is process-wide: in a block of a run whose blocks run concurrently on threads
    (:func:`rerokit.executors.concurrent_threads`) only that run's count is accepted (and nothing is
    set), anything else is a ``ValueError`` (:func:`rerokit.executors.check_thread_count`)."""
    if num_threads is None:
        yield
        return
    from rerokit.executors import check_thread_count

    num_threads = check_thread_count("num_threads", num_threads)
    if torch.get_num_threads() == num_threads:  # nothing to set, nothing to restore
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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


class _VmapSums:
    """Generic clipped sums for any model: (k, n, P) per-sample clipped gradients by ``vmap`` over
    trials of ``vmap(grad)`` over samples (``per_sample_clipped_grads``), then weighted sums."""

    name = "vmap"

    def __init__(self, fm: FunctionalModel, shared: tuple[torch.Tensor, torch.Tensor] | None = None):
        self.fm, self.shared = fm, shared
        self._one = vmap(lambda th, x, yy, C: clip_rows(per_sample_grads_unchecked(fm, th, x, yy), C), in_dims=(0, 0, 0, None))

    def prepare(self, X: torch.Tensor, y: torch.Tensor):
        """Trial data (k, r, ...), (k, r) -> the (k, n, ...) datasets, shared points first."""
        if self.shared is None:
            return X, y
        Xs, ys = self.shared
        k = X.shape[0]
        return torch.cat([Xs.unsqueeze(0).expand(k, *Xs.shape), X], 1), torch.cat([ys.unsqueeze(0).expand(k, -1), y], 1)

    def sums(self, theta, data, C, w=None, target=None):
        """Same contract as :meth:`rerokit.training.mlp.MLPPlan.clipped_sums` (``data`` from :meth:`prepare`)."""
        X, y = data
        G = self._one(theta, X, y, C)  # (k, n, P)
        if w is None:
            w = torch.ones(G.shape[:2], dtype=G.dtype, device=G.device)
        s = torch.einsum("kn,knp->kp", w, G)
        if target is None:
            return s, None
        ar = torch.arange(G.shape[0], device=G.device)
        return s, G[ar, target] * w[ar, target].unsqueeze(-1)


class _MLPSums:
    """Clipped sums of an ``nn.Sequential`` MLP by the MLP engine (:mod:`rerokit.training.mlp`):
    shared points are one block used by every trial (never copied per trial)."""

    name = "linear"

    def __init__(self, plan: MLPPlan, shared: tuple[torch.Tensor, torch.Tensor] | None = None):
        self.plan = plan
        self.shared = None if shared is None else plan.block(shared[0].unsqueeze(0), shared[1].unsqueeze(0))

    def prepare(self, X: torch.Tensor, y: torch.Tensor) -> MLPInputs:
        blocks = [] if self.shared is None else [self.shared]
        if X.shape[1] > 0:
            blocks.append(self.plan.block(X, y))
        return self.plan.inputs(X.shape[0], *blocks)

    def sums(self, theta, data, C, w=None, target=None):
        return self.plan.clipped_sums(theta, data, C, w, target)


def _select_sums(fm: FunctionalModel, method: str, X: torch.Tensor, shared=None) -> _VmapSums | _MLPSums:
    """The clipped-sum backend: the MLP engine for method auto/linear (auto: when supported), else vmap.

    ``X``: the per-trial data (K, r, ...), whose samples must be vectors when the MLP has no Flatten.
    """
    if method != "vmap":
        try:
            plan = MLPPlan(fm)
            if not plan.has_flatten and X.dim() != 3:
                raise ValueError("inputs are not vectors and the model has no leading Flatten")
            return _MLPSums(plan, shared)
        except ValueError as e:
            if method == "linear":
                raise ValueError(f"method='linear' needs an nn.Sequential MLP of Flatten/Linear/activation layers: {e}") from None
    return _VmapSums(fm, shared)


def shared_chunk_size(n: int, widest: int) -> int:
    """Models trained together by default when ``n`` points are shared by all of them (MLP engine,
    ``shared=``): about 2^21 activations (n x the widest layer) per chunk, where one matrix product
    serves the whole chunk (RecoNN's shadow models).

    Args:
        n: points per model (shared + own).
        widest: the widest layer's width.

    Returns:
        The chunk size (>= 1).
    """
    return max(1, 2**21 // max(1, int(n) * int(widest)))


def linear_plan_supported(fm: FunctionalModel) -> bool:
    """True if ``train_dpsgd_many(options=EngineOptions(method='auto'))`` uses the MLP engine for this model.

    Args:
        fm: the model.

    Returns:
        Whether ``fm`` is an ``nn.Sequential`` MLP the engine supports (:class:`rerokit.training.mlp.MLPPlan`).
    """
    return mlp_plan(fm) is not None


def _compiled(fn):
    """``torch.compile(fn)``, falling back to eager ``fn`` (with a warning) if compilation fails
    on the first call (e.g. no C++ compiler): eager is exact, only slower."""
    state: dict[str, Any] = {}

    def run(*args):
        if "fn" not in state:
            try:
                cfn = torch.compile(fn, dynamic=False)
                out = cfn(*args)
                state["fn"] = cfn
                return out
            except Exception as e:  # pragma: no cover - depends on the platform's toolchain
                import warnings

                warnings.warn(f"torch.compile failed ({type(e).__name__}); running eagerly", RuntimeWarning)
                state["fn"] = fn
        return state["fn"](*args)

    return run


@dataclass
class _Runs:
    """Raw outputs of :func:`_train`: final parameters (K, P) and, when recording, (K, T, ...) tensors."""

    final: torch.Tensor
    thetas: torch.Tensor | None = None
    gbar: torch.Tensor | None = None
    masks: torch.Tensor | None = None
    sums: torch.Tensor | None = None


def _train(backend, theta0: torch.Tensor, X: torch.Tensor, y: torch.Tensor, cfg: DPSGDSettings, n: int, seeds: list[int],
           tgt: torch.Tensor | None, mode: str | None, chunk_size: int, progress: bool = False,
           compile: bool = False) -> _Runs:
    """The one DP-SGD loop (module docstring) for K runs in chunks of ``chunk_size`` trials.

    ``theta0`` (K, P); ``X`` (K, r, ...), ``y`` (K, r) each trial's own points (the backend adds
    shared ones: n in all); ``tgt`` (K,) or None. Nothing is drawn, and no mask or noise tensor is
    formed, when q = 1 (masks) or sigma = 0 (noise): the random streams are those of ``_RunRandom``.
    """
    K, P = theta0.shape
    dtype, dev = theta0.dtype, theta0.device
    sigma, C, T, q, lr, mom = cfg.noise_multiplier, cfg.clip, cfg.steps, cfg.sample_rate, cfg.lr, cfg.momentum
    ebs = q * n
    scale = sigma * (C if C is not None else 0.0)
    out = _Runs(final=torch.empty((K, P), dtype=dtype, device=dev))
    if mode:
        out.thetas = torch.empty((K, T, P), dtype=dtype, device=dev)
        out.gbar = torch.empty((K, T, P), dtype=dtype, device=dev)
        out.masks = (torch.ones if q >= 1.0 else torch.empty)((K, T, n), dtype=torch.bool, device=dev)
        out.sums = torch.empty((K, T, P), dtype=dtype, device=dev) if mode == "full" else None

    def step(theta, v, w, z, data, tgt_c):
        s_b, s_t = backend.sums(theta, data, C, w, tgt_c)
        noisy = s_b if z is None else s_b + scale * z
        upd = noisy / ebs
        if mom > 0:
            v = mom * v + upd
            upd = v
        return theta - lr * upd, v, noisy, s_b, s_t

    step_fn = _compiled(step) if compile else step
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=K * T, desc="dpsgd trials x steps", unit="step", leave=False)
    with torch.no_grad():
        for a in range(0, K, chunk_size):
            b_ = min(K, a + chunk_size)
            k = b_ - a
            rngs = [_RunRandom(s) for s in seeds[a:b_]] if (q < 1.0 or sigma > 0.0) else None
            theta = theta0[a:b_].detach().clone()
            v = torch.zeros_like(theta)
            data = backend.prepare(X[a:b_], y[a:b_])
            tgt_c = None if (tgt is None or not mode) else tgt[a:b_].to(dev)
            for t0 in range(0, T, NOISE_BLOCK):
                bl = min(NOISE_BLOCK, T - t0)
                mblk = None if q >= 1.0 else torch.stack([r.masks(bl, n, q) for r in rngs]).to(dev)  # (k, bl, n)
                zblk = None if sigma == 0.0 else torch.stack([r.noise(bl, P, sigma, dtype) for r in rngs]).to(dev)
                for j in range(bl):
                    t = t0 + j
                    w = None if mblk is None else mblk[:, j].to(dtype)
                    z = None if zblk is None else zblk[:, j]
                    if mode:
                        out.thetas[a:b_, t] = theta
                    theta, v, noisy, s_b, s_t = step_fn(theta, v, w, z, data, tgt_c)
                    if mode:
                        # gbar = noisy - sum over known points in B_t = noise + w_target clip_C(g_target)
                        out.gbar[a:b_, t] = noisy - s_b if s_t is None else noisy - (s_b - s_t)
                        if mblk is not None:
                            out.masks[a:b_, t] = mblk[:, j]
                        if out.sums is not None:
                            out.sums[a:b_, t] = noisy
                if bar is not None:
                    bar.update(k * bl)
            _check_finite(theta, lr, a)
            out.final[a:b_] = theta
    if bar is not None:
        bar.close()
    return out


def train_dpsgd(
    fm: FunctionalModel, theta0: torch.Tensor, X: torch.Tensor, y: torch.Tensor, settings: DPSGDSettings,
    *,
    seed: int,
    target_index: int | None = None,
    record: bool | str = False,
    options: EngineOptions | None = None,
) -> Result:
    """One run of DP-SGD (DP-GD for ``sample_rate=1``): the K = 1 case of :func:`train_dpsgd_many`.

    See the module docstring for the step and the random streams.

    Args:
        fm: the model.
        theta0: (P,) initial parameters.
        X: (n, ...) training points; y: (n,) integer labels.
        settings: the :class:`DPSGDSettings` (noise_multiplier, clip, steps, lr, sample_rate,
            momentum).
        seed: the run's seed (masks and noise streams).
        target_index: index of z* in ``X`` (the point the informed adversary does not know;
            None = all known, gbar is then pure noise).
        record: False; True/"full" (thetas, noisy_sums, gbar, batch_masks); "gbar_only" (no noisy_sums).
        options: the :class:`EngineOptions` (default ``EngineOptions()``): ``method`` "vmap"
            (reference: per step, the (n, P) per-sample clipped gradients of all n points by
            ``per_sample_clipped_grads``), "linear" (the MLP engine for Sequential MLPs,
            :class:`rerokit.training.mlp.MLPPlan`: exact, no per-sample gradient tensor), "auto"
            (linear when supported); ``progress``, ``num_threads``, ``compile``, ``device`` as for
            :func:`train_dpsgd_many` (``chunk_size`` has no effect on one run).

    Returns:
        A :class:`Result` with ``theta`` (P,) and, with ``record``, a single-run :class:`Transcript`.
    """
    cfg = _check_settings(settings)
    record = check_record(record)
    opts = _check_options(options)
    check_instance("fm", fm, FunctionalModel)
    seed = check_int("seed", seed, minimum=0)
    check_batch(fm, theta0, X, y)
    check_labels(fm, theta0, X[:1], y)
    n, P = int(X.shape[0]), fm.num_params
    if n < 1:
        raise ValueError("X must hold at least one training point (n >= 1), got n = 0")
    if target_index is not None:
        target_index = check_int("target_index", target_index, minimum=0, maximum=n - 1)
    if opts.device is not None:
        from rerokit.training.devices import resolve_device

        theta0 = theta0.to(resolve_device(opts.device))
    dtype, dev = theta0.dtype, theta0.device
    X, y = X.to(device=dev, dtype=dtype), y.to(device=dev, dtype=torch.long)
    mode = _record_mode(record)
    backend = _select_sums(fm, opts.method, X[None])
    tgt = None if target_index is None else torch.tensor([target_index], device=dev)
    with _threads(opts.num_threads):
        runs = _train(backend, theta0.detach()[None], X[None], y[None], cfg, n, [seed], tgt, mode, 1,
                      progress=opts.progress, compile=opts.compile)
    theta = runs.final[0]
    settings_d = dict(cfg.to_dict(), expected_batch_size=cfg.sample_rate * n, n=n, P=P, record=mode or False,
                      method=backend.name)
    tr = None
    if mode:
        tr = Transcript(thetas=runs.thetas[0], gbar=runs.gbar[0], batch_masks=runs.masks[0], final_theta=theta.clone(),
                        noisy_sums=None if runs.sums is None else runs.sums[0], target_index=target_index,
                        settings=settings_d, seed=seed, batched=False)
    return Result(theta=theta, transcript=tr, seed=seed, settings=settings_d)


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


def _trial_seeds_of(seed: Any, K: int) -> list[int]:
    """``seed`` of :func:`train_dpsgd_many`: one int (``trial_seeds(seed, K)``) or K ints."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return trial_seeds(check_int("seed", seed, minimum=0), K)
    if isinstance(seed, (str, bytes, bool)) or not hasattr(seed, "__iter__"):
        raise TypeError(f"seed must be one integer >= 0 or K={K} integers, got {type(seed).__name__}")
    seeds = [check_int(f"seed[{i}]", s, minimum=0) for i, s in enumerate(seed)]
    if len(seeds) != K:
        raise ValueError(f"seed must be one integer or K={K} integers (one per trial), got {len(seeds)}")
    return seeds


def train_dpsgd_many(
    fm: FunctionalModel, theta0: torch.Tensor, X: torch.Tensor, y: torch.Tensor, settings: DPSGDSettings,
    *,
    seed: int | Sequence[int],
    target_index: int | Sequence[int] | torch.Tensor | None = None,
    record: bool | str = False,
    shared: tuple[torch.Tensor, torch.Tensor] | None = None,
    options: EngineOptions | None = None,
) -> Result:
    """K independent DP-SGD runs, vectorised over trials (no Python loop over trials in the math).

    Trial k equals ``train_dpsgd(fm, theta0[k], X[k], y[k], settings, seed=seeds[k])`` up to
    rounding. Tensors live on ``theta0``'s device (or ``options.device``); masks and noise are
    drawn on the CPU (device-independent streams) and moved. Non-private GD (``clip=None``,
    ``noise_multiplier=0``, ``sample_rate=1``) draws nothing: it is RecoNN's shadow-model training
    (:func:`rerokit.attacks.reconn.gd_many`).

    Args:
        fm: the model.
        theta0: initial parameters, (P,) shared by all trials or (K, P).
        X: each trial's own points (K, n, ...) (or (K, r, ...) with ``shared``); may be an
            ``expand``ed view: only one chunk of trials is materialised at a time.
        y: their integer labels, (K, n).
        settings: the :class:`DPSGDSettings` of every trial.
        seed: K per-trial seeds ``seeds``, or one seed, then ``seeds = trial_seeds(seed, K)``.
        target_index: None, one int for all trials, or K ints (index into each trial's dataset).
        record: as in :func:`train_dpsgd` (tensors get a leading K).
        shared: ``(Xs (m, ...), ys (m,))``, points common to every trial (e.g. a fixed D-),
            prepended to each trial's own ``X[k]`` without materialising K copies: trial k's
            dataset is ``cat([Xs, X[k]])`` (n = m + r; ``target_index`` indexes that concatenation,
            so the per-trial target at ``X[k, 0]`` has index m).
        options: the :class:`EngineOptions` (default ``EngineOptions()``): ``method`` "vmap"
            (``vmap`` over trials of ``vmap(grad)`` over samples: forms (chunk, n, P) per-sample
            gradients), "linear" (the MLP engine for Sequential MLPs,
            :class:`rerokit.training.mlp.MLPPlan`: exact ghost clipping, the shared points one
            block for all trials) or "auto" (linear when supported); ``chunk_size`` trials
            processed together (default: bounded memory; larger with ``shared``); ``progress`` a
            progress bar (trials x steps); ``num_threads`` torch intra-op threads for this call
            only (on a loaded shared machine 1 thread was 4x faster than 2, an earlier run of
            benchmarks/trials_vmap.py; on an idle one 2 threads were about 1.9x faster than 1,
            benchmarks/ray_scaling.py, 2026-11-23); ``compile`` ``torch.compile`` the step (same
            result to float round-off); ``device`` where the trials run (default: ``theta0``'s).

    Returns:
        A :class:`Result` with ``theta`` (K, P) and, with ``record``, a batched transcript.

    Raises:
        ValueError: if a setting or shape is out of range, ``seed`` is neither one seed nor K, or
            training diverges (naming ``lr``).
        TypeError: if ``fm`` is not a FunctionalModel, ``settings``/``options`` have the wrong type,
            or data or labels have the wrong type.
    """
    cfg = _check_settings(settings)
    record = check_record(record)
    opts = _check_options(options)
    check_instance("fm", fm, FunctionalModel)
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
    seeds = _trial_seeds_of(seed, K)
    tgt = _as_target_array(target_index, K, n)
    th_check = theta0 if theta0.dim() == 1 else theta0[0]
    check_labels(fm, th_check, X[0, :1], y)
    if shared is not None:
        check_labels(fm, th_check, X[0, :1], shared[1], name="shared labels ys")
    if opts.device is not None:
        from rerokit.training.devices import resolve_device

        theta0 = theta0.to(resolve_device(opts.device))
    if theta0.dim() == 1:
        theta0 = theta0.unsqueeze(0).expand(K, P)
    dtype, dev = theta0.dtype, theta0.device
    X = X.to(device=dev, dtype=dtype)
    y = y.to(device=dev, dtype=torch.long)
    if shared is not None:
        Xs, ys = shared[0].to(device=dev, dtype=dtype), shared[1].to(device=dev, dtype=torch.long)

    shared_t = None if shared is None else (Xs, ys)
    backend = _select_sums(fm, opts.method, X, shared_t)
    if backend.name == "linear":
        if shared is None:
            # CPU: small chunks keep the (chunk, width, n) activations in cache; 64 was fastest on 2
            # cores. GPU: each step is a few kernel launches whatever the chunk, so 64 trials left an
            # H200 launch-bound (4,096 trials ran as 64 chunks x 100 steps); up to 1,024 trials and
            # ~2^27 input elements (0.5 GB in float32) per chunk instead.
            cap, budget = (64, 2**24) if dev.type == "cpu" else (1024, 2**27)
            default_chunk = max(1, min(K, cap, budget // max(1, n * X[0, 0].numel())))
        else:
            # shared points: one matrix product for the whole chunk, so larger chunks pay (as RecoNN's gd_many)
            default_chunk = min(K, shared_chunk_size(n, max(lin.out for lin in backend.plan.linears)))
    else:
        default_chunk = max(1, min(K, 2**24 // max(1, n * P)))
    chunk_size = default_chunk if opts.chunk_size is None else opts.chunk_size
    mode = _record_mode(record)
    ebs = cfg.sample_rate * n
    with _threads(opts.num_threads):
        runs = _train(backend, theta0, X, y, cfg, n, seeds, tgt, mode, chunk_size, progress=opts.progress,
                      compile=opts.compile)
    final = runs.final
    settings_d = dict(cfg.to_dict(), expected_batch_size=ebs, n=n, P=P, K=K, record=mode or False,
                      method=backend.name)
    tr = None
    if mode:
        tr = Transcript(thetas=runs.thetas, gbar=runs.gbar, batch_masks=runs.masks, final_theta=final.clone(),
                        noisy_sums=runs.sums, target_index=tgt, settings=settings_d, seed=list(seeds), batched=True)
    return Result(theta=final, transcript=tr, seed=list(seeds), settings=settings_d)
