"""Auditing DP-SGD with reconstruction attacks (Hayes, Mahloujifar & Balle 2023, Sec. 3-4, App. A).

One trial (App. A, Table 1):

1. draw a prior pi = {z_1..z_N} of N distinct points of the dataset, the target z* from pi
   (uniformly, or with the given prior weights p_i), and the known set D- of ``n_known`` further
   points from the rest of the dataset;
2. train the model with DP-SGD on D- + {z*} from a fresh initialisation, recording the
   transcript (theta_t, privatized sums, batches, g-bar_t);
3. run the attacks on the transcript and record whether each guessed z*.

Success rates come with exact Clopper-Pearson intervals and are compared with the ReRo bound
gamma of DP-SGD (Hayes et al. Thm 2, :func:`rerokit.bounds.dpsgd.rero_dpsgd`) at the prior's
baseline kappa = max_i p_i (1/N for a uniform prior).

Randomness: trial i uses ``s_i = trial_seeds(seed, trials)[i]`` - a seed that depends on
``(seed, i)`` only (:func:`rerokit.training.trial_seeds`); the data draw uses
``numpy.random.default_rng([s_i, 0])``, the initialisation ``init_flat(s_i)``, the DP-SGD
noise/batches ``train_dpsgd_many(seed=[s_i])``, the gradient attack's restarts ``s_i mod 2^31``.

Blocks, executors, resume: trials run in blocks with FIXED boundaries - block b holds trials
[b B, (b + 1) B), B = ``chunk_size`` (recorded in the file's settings) - trained together
through ``train_dpsgd_many`` (and scored by vmapped candidate statistics). One pure function per
audit computes a block from (config, seed, block index, its trials) with a fixed number of
intra-op threads; the executor (:mod:`rerokit.executors`: ``local`` in this process, or ``ray``
workers) calls it, and the driver appends the finished trials to the JSON-lines ``TrialLog``
(the prior-aware audit a block at a time, the gradient audit each trial as its attack ends when
local). An interruption loses at most the blocks in flight; ``resume=True`` recomputes only the
blocks with missing trials (a block partly in the file is recomputed whole and only its missing
trials are appended). So a local run, a Ray run with any number of workers and a resumed run
write the same records bit for bit (on one device; ``device="cuda"`` runs the engines on a GPU
with the same random numbers, drawn on the CPU, and agrees with the CPU to rounding).

Models: ``model="mlp"`` (Flatten-Linear-act-...-Linear, the fast MLP engine), ``"cnn"``
(:class:`rerokit.training.SmallCNN`, any C x H x W input: digits 1x8x8, MNIST 1x28x28, CIFAR-10
3x32x32) or any ``torch.nn.Module`` built by a user function ``model_fn(sample_shape,
num_classes)`` (per-sample gradients by ``vmap(grad)`` through ``torch.func.functional_call``;
an ``nn.Sequential`` MLP it returns still gets the MLP engine).

Library use that reproduces ``rerokit audit prior-aware --epsilon 4`` exactly::

    from rerokit.experiments.audit import AuditConfig, run_audit
    cfg = AuditConfig.resolve(epsilon=4.0)            # n_known default, sigma calibrated (PLD)
    rep = run_audit("prior-aware", cfg, trials=100, seed=0)
    rep.summary().to_dict()                           # the command's JSON (without rerokit_version)
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
import torch

from rerokit._validate import check_choice, check_instance, check_int, check_nonnegative, check_positive, check_probability
from rerokit.attacks.gradient import GradientAttack
from rerokit.attacks.result import AttackResult
from rerokit.executors import RunOptions
from rerokit.experiments.audit_outcome import AuditOutcome, EmpiricalBounds, MetricSummary

if TYPE_CHECKING:
    from rerokit.training.settings import DPSGDSettings

__all__ = [
    "PRIOR_AWARE_ATTACKS",
    "AUDITS",
    "DEFAULT_TRIALS",
    "DEFAULT_CHUNK_SIZE",
    "AuditConfig",
    "GradientAttack",
    "RunOptions",
    "TrialBlocks",
    "Trial",
    "AuditReport",
    "AuditOutcome",
    "MetricSummary",
    "EmpiricalBounds",
    "make_trial",
    "build_model",
    "rero_gamma",
    "candidate_statistics_many",
    "run_prior_aware_audit",
    "run_gradient_audit",
    "run_audit",
    "check_audit_memory",
    "import_model_factory",
]

PRIOR_AWARE_ATTACKS = ("alg2", "alg3", "loglik", "alg2_nosub")
"""Attacks the prior-aware audit can run: Alg. 2, Alg. 3, App. G log-likelihood, and Alg. 2
without known-gradient subtraction (App. E, Fig. 10)."""

AUDITS = ("prior-aware", "gradient")
DEFAULT_TRIALS = {"prior-aware": 100, "gradient": 10}
"""Default trial counts of :func:`run_audit` (and the CLI)."""
DEFAULT_CHUNK_SIZE = {"prior-aware": 64, "gradient": 8}
"""Default block sizes (trials trained together) of :func:`run_audit` (and the CLI)."""
N_KNOWN_MAX = 999
"""Default |D-|: min(999, dataset size - prior size)."""


def __getattr__(name: str) -> Any:
    """``AuditSummary``: the deprecated name of :class:`AuditOutcome` (it clashed with the report's
    :class:`rerokit.report.AuditSummary`, the audit as the report reads it)."""
    if name == "AuditSummary":
        import warnings

        warnings.warn("rerokit.experiments.audit.AuditSummary is deprecated; use AuditOutcome "
                      "(rerokit.experiments.audit_outcome)", DeprecationWarning, stacklevel=2)
        return AuditOutcome
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_MAX_TRIAL_ID = 10**9


@dataclass(frozen=True)
class AuditConfig:
    """Settings of an audit (echoed into every result file header).

    Defaults follow Hayes et al. App. A scaled to the digits data: MLP 64-10-10 with ELU,
    |D-| = 999, full batch (q = 1), T = 100 steps, C = 0.1, prior size 10.
    ``noise_multiplier`` is sigma (noise std sigma C on the gradient sum); ``lr`` multiplies the
    averaged privatized gradient (sum / (q n)); App. A sweeps it per epsilon, the default 10 gives
    test accuracy ~0.8 at epsilon = 1 and ~0.9 at epsilon = 16 on the digits (measured, 4 runs). ``prior_weights`` (length N, summing to 1) makes
    the prior non-uniform; None = uniform.
    """

    noise_multiplier: float
    dataset: str = "digits"
    data_path: str | None = None
    prior_size: int = 10
    n_known: int = 999
    steps: int = 100
    sample_rate: float = 1.0
    clip: float = 0.1
    lr: float = 10.0
    model: "str | Callable[..., Any]" = "mlp"
    hidden: tuple[int, ...] = (10,)
    activation: str = "elu"
    prior_weights: tuple[float, ...] | None = None
    model_fn: Callable[..., Any] | None = None
    epsilon: float | None = None
    delta: float | None = None

    def __post_init__(self) -> None:
        if callable(self.model):
            if self.model_fn is not None and self.model_fn is not self.model:
                raise ValueError("give the model function once: model=f or model_fn=f")
            object.__setattr__(self, "model_fn", self.model)
            object.__setattr__(self, "model", "custom")
        if isinstance(self.model_fn, str):
            object.__setattr__(self, "model_fn", import_model_factory(self.model_fn))
        if self.model_fn is not None:
            if not callable(self.model_fn):
                raise TypeError(f"model_fn must be a function (sample_shape, num_classes) -> torch.nn.Module, "
                                f"got {type(self.model_fn).__name__}")
            if self.model not in ("mlp", "custom"):  # "mlp" is the default, not a choice
                raise ValueError(f"give model={self.model!r} or model_fn, not both")
            object.__setattr__(self, "model", "custom")
        elif self.model == "custom":
            raise ValueError("model 'custom' needs model_fn (a function (sample_shape, num_classes) -> nn.Module)")
        if self.epsilon is not None:
            check_positive("epsilon", self.epsilon)
        if self.delta is not None:
            check_probability("delta", self.delta, high_open=True)
        check_nonnegative("noise_multiplier", self.noise_multiplier)
        check_int("prior_size", self.prior_size, minimum=2)
        check_int("n_known", self.n_known, minimum=0)
        check_int("steps", self.steps, minimum=1)
        check_probability("sample_rate", self.sample_rate)
        check_positive("clip", self.clip)
        check_positive("lr", self.lr)
        check_choice("model", self.model, ("mlp", "cnn", "custom"))
        check_choice("dataset", self.dataset, ("digits", "mnist", "cifar10"))
        object.__setattr__(self, "hidden", tuple(check_int("hidden", h, minimum=1) for h in self.hidden))
        if self.prior_weights is not None:
            w = np.asarray(self.prior_weights, dtype=float)
            if w.shape != (self.prior_size,) or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ValueError(f"prior_weights must be {self.prior_size} finite numbers >= 0 (one per prior point)")
            if abs(w.sum() - 1.0) > 1e-9:
                raise ValueError(f"prior_weights must sum to 1, got {float(w.sum())!r}")
            object.__setattr__(self, "prior_weights", tuple(float(v) for v in w))

    @property
    def kappa(self) -> float:
        """Baseline success of the best model-free guess: max_i p_i (1/N if uniform)."""
        if self.prior_weights is None:
            return 1.0 / self.prior_size
        return float(max(self.prior_weights))

    def dpsgd_settings(self) -> "DPSGDSettings":
        """The training's :class:`rerokit.training.settings.DPSGDSettings` (noise_multiplier, clip,
        steps, lr, sample_rate; no momentum)."""
        from rerokit.training.settings import DPSGDSettings

        return DPSGDSettings(noise_multiplier=self.noise_multiplier, clip=self.clip, steps=self.steps, lr=self.lr,
                             sample_rate=self.sample_rate)

    @property
    def model_factory(self) -> str | None:
        """``module:qualname`` of ``model_fn`` (None for the built-in models)."""
        if self.model_fn is None:
            return None
        f = self.model_fn
        return f"{getattr(f, '__module__', None) or '?'}:{getattr(f, '__qualname__', None) or type(f).__name__}"

    def to_dict(self) -> dict[str, Any]:
        """The settings echoed into result files and outputs (JSON-ready). ``epsilon``/``delta``
        (what sigma was calibrated for) are not settings of the run, ``model_fn`` appears as
        ``model_factory`` (its ``module:name``) for a user model."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
             if f.name not in ("model_fn", "epsilon", "delta")}
        d["hidden"] = list(self.hidden)
        d["prior_weights"] = None if self.prior_weights is None else list(self.prior_weights)
        if self.model_fn is not None:
            d["model_factory"] = self.model_factory
        return d

    @classmethod
    def resolve(cls, *, epsilon: float | None = None, noise_multiplier: float | None = None, delta: float = 1e-5,
                n_known: int | None = None, **fields: Any) -> "AuditConfig":
        """The audit settings of ``rerokit audit ...``: defaults filled in, checked, sigma calibrated.

        Args:
            epsilon: target epsilon > 0; sigma is calibrated for (epsilon, delta) at the run's
                sample rate and steps with dp-accounting's PLD accountant
                (:func:`rerokit.bounds.calibrate.noise_multiplier_for_epsilon`).
            noise_multiplier: sigma >= 0 given directly instead of ``epsilon``.
            delta: delta in (0, 1) of the calibration (also used for the empirical lower bounds).
            n_known: |D-|; default min(999, dataset size - prior_size) (digits; 999 for the
                other datasets, whose size is only known once loaded).
            **fields: any other :class:`AuditConfig` field (dataset, data_path, prior_size, steps,
                sample_rate, clip, lr, model, hidden, activation, prior_weights, model_fn).

        Returns:
            The config, with ``epsilon`` and ``delta`` kept for the report.
        """
        return cls._base(n_known=n_known, **fields)._calibrated(epsilon, noise_multiplier, delta)

    @classmethod
    def from_epsilon(cls, epsilon: float, delta: float = 1e-5, **fields: Any) -> "AuditConfig":
        """:meth:`resolve` with ``epsilon`` (sigma calibrated for (epsilon, delta)).

        Args:
            epsilon: target epsilon > 0.
            delta: delta in (0, 1).
            **fields: further settings, as for :meth:`resolve` (n_known included).

        Returns:
            The config.
        """
        return cls.resolve(epsilon=epsilon, delta=delta, **fields)

    @classmethod
    def _base(cls, *, n_known: int | None = None, **fields: Any) -> "AuditConfig":
        """The settings with sigma 0 (cheap checks, before the calibration)."""
        from rerokit._files import check_data_path

        if "noise_multiplier" in fields:
            raise TypeError("pass noise_multiplier (or epsilon) to resolve, not as a field")
        check_data_path(fields.get("data_path"))
        n_data = _dataset_size(fields.get("dataset", "digits"))
        if n_known is None:
            N = check_int("prior_size", fields.get("prior_size", 10), minimum=2)
            n_known = N_KNOWN_MAX if n_data is None else max(0, min(N_KNOWN_MAX, n_data - N))
        for k in ("hidden", "prior_weights"):
            if fields.get(k) is not None and not isinstance(fields[k], tuple):
                fields[k] = tuple(fields[k])
        base = cls(noise_multiplier=0.0, n_known=n_known, **fields)
        if n_data is not None:
            make_trial(n_data, base.prior_size, base.n_known, 0, base.prior_weights)
        return base

    def _calibrated(self, epsilon: float | None, noise_multiplier: float | None, delta: float) -> "AuditConfig":
        """This config with sigma given or calibrated for (epsilon, delta)."""
        delta = check_probability("delta", delta, high_open=True)
        if noise_multiplier is not None:
            if epsilon is not None:
                raise ValueError("give epsilon or noise_multiplier, not both")
            sigma, eps = check_nonnegative("noise_multiplier", noise_multiplier), None
        else:
            if epsilon is None:
                raise ValueError("give epsilon (> 0) or noise_multiplier (>= 0)")
            from rerokit.bounds.calibrate import noise_multiplier_for_epsilon

            eps = check_positive("epsilon", epsilon)
            sigma = noise_multiplier_for_epsilon(eps, delta, self.sample_rate, self.steps)
        return dataclasses.replace(self, noise_multiplier=float(sigma), epsilon=eps, delta=delta)


def import_model_factory(spec: str) -> Callable[..., Any]:
    """The user function named ``package.module:function`` (``--model-factory``), imported.

    Importing runs that module's code: it is the user's own code, named explicitly. The module is
    looked up on ``sys.path`` and, failing that, in the current folder.

    Args:
        spec: ``module:function`` (``function`` may be ``Class.method``-style dotted).

    Returns:
        The callable. ``ValueError`` (naming ``model_factory``) when it cannot be imported or
        found, ``TypeError`` when it is not callable.
    """
    import importlib
    import os
    import re

    ident = r"[A-Za-z_][A-Za-z0-9_]*"
    if not isinstance(spec, str) or not re.fullmatch(rf"{ident}(\.{ident})*:{ident}(\.{ident})*", spec.strip()):
        raise ValueError(f"model_factory must be package.module:function, got {spec!r}")
    mod_name, _, attr = spec.strip().partition(":")
    try:
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            if exc.name != mod_name.split(".")[0] or os.getcwd() in sys.path:
                raise
            sys.path.append(os.getcwd())  # the current folder, as `python -m` would
            mod = importlib.import_module(mod_name)
    except Exception as exc:  # noqa: BLE001 - any error raised by the user's module
        msg = " ".join(str(exc).split())
        raise ValueError(f"model_factory {spec}: cannot import {mod_name} ({type(exc).__name__}: {msg})") from None
    obj: Any = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"model_factory {spec}: {mod_name} has no {attr}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"model_factory {spec} must be a function (sample_shape, num_classes) -> torch.nn.Module, "
                        f"got {type(obj).__name__}")
    return obj


def _dataset_size(dataset: Any) -> int | None:
    """The size of a dataset known without reading user files (digits), else None."""
    if dataset == "digits":
        from rerokit.data import load_dataset

        return load_dataset("digits").n
    return None


@dataclass(frozen=True)
class Trial:
    """Indices into the dataset: ``prior`` (N,), the target's position ``target`` in the prior,
    ``known`` (n_known,) = D-; and the trial seed."""

    prior: np.ndarray
    target: int
    known: np.ndarray
    seed: int

    @property
    def target_index(self) -> int:
        """Dataset index of z*."""
        return int(self.prior[self.target])


def make_trial(n_data: int, prior_size: int, n_known: int, seed: int, prior_weights: Sequence[float] | None = None) -> Trial:
    """Trial construction (Hayes et al. 2023, App. A): prior = N distinct random points, target ~ p
    (uniform by default) from the prior, D- = ``n_known`` random points outside the prior.

    Args:
        n_data: the dataset's size (>= 2).
        prior_size: N (>= 2).
        n_known: |D-| (>= 0; N + |D-| <= ``n_data``).
        seed: the trial's seed s_i; the draw uses ``numpy.random.default_rng([s_i, 0])``.
        prior_weights: p (N weights summing to 1, as checked by :class:`AuditConfig`), or None for
            a uniform target.

    Returns:
        The :class:`Trial` (dataset indices).

    Raises:
        ValueError: if a size is out of range or N + |D-| exceeds the dataset.
    """
    n_data = check_int("n_data", n_data, minimum=2)
    N = check_int("prior_size", prior_size, minimum=2)
    m = check_int("n_known", n_known, minimum=0)
    if N + m > n_data:
        what = f"prior_size {N} alone exceeds" if N > n_data else f"prior_size {N} + n_known {m} exceed"
        raise ValueError(f"prior_size + n_known must be <= the dataset size {n_data}: {what} it")
    rng = np.random.default_rng([int(seed), 0])
    perm = rng.permutation(n_data)
    p = None if prior_weights is None else np.asarray(prior_weights, dtype=float)
    target = int(rng.choice(N, p=p))
    return Trial(prior=perm[:N].copy(), target=target, known=perm[N : N + m].copy(), seed=int(seed))


def build_model(cfg: AuditConfig, sample_shape: tuple[int, ...], num_classes: int):
    """The audited model as a :class:`rerokit.training.FunctionalModel`.

    Built under ``torch.manual_seed(0)`` (global RNG state restored), so that parameters a user
    module initialises outside ``reset_parameters`` are the same in every process (trial
    initialisations come from :meth:`FunctionalModel.init_flat`, which re-runs
    ``reset_parameters`` under the trial seed).

    Args:
        cfg: the settings (``model``, ``hidden``, ``activation``, ``model_fn``).
        sample_shape: one input's shape, e.g. (1, 8, 8).
        num_classes: outputs of the model.

    Returns:
        The model. A ``model_fn`` that does not return an ``nn.Module`` is a ``TypeError``.
    """
    from rerokit.training import FunctionalModel, SmallCNN, make_mlp

    from rerokit.training.models import GLOBAL_RNG_LOCK

    shape = tuple(int(s) for s in sample_shape)
    with GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        if cfg.model == "mlp":
            module = make_mlp(int(np.prod(shape)), list(cfg.hidden), num_classes, cfg.activation)
        elif cfg.model == "cnn":
            width = cfg.hidden[0] if cfg.hidden else 16
            module = SmallCNN(shape[0], num_classes, cfg.activation, width=width)
        else:
            try:
                module = cfg.model_fn(shape, int(num_classes))
            except Exception as exc:  # a user function: say which one failed, keep the cause chained
                raise ValueError(f"model_fn {cfg.model_factory} failed when called with sample_shape={shape}, "
                                 f"num_classes={int(num_classes)}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"model_fn {cfg.model_factory} must return a torch.nn.Module, got {type(module).__name__}")
    return FunctionalModel(module)


def rero_gamma(noise_multiplier: float, sample_rate: float, steps: int, kappa: float) -> float:
    """ReRo bound gamma of DP-SGD at baseline kappa (Hayes et al. 2023, Thm 2; 1 when sigma = 0).

    Args:
        noise_multiplier: sigma >= 0.
        sample_rate: q in (0, 1].
        steps: T >= 1.
        kappa: the prior's baseline success in (0, 1).

    Returns:
        gamma (:func:`rerokit.bounds.dpsgd.rero_dpsgd`, without its comparisons).
    """
    if noise_multiplier == 0:
        return 1.0
    from rerokit.bounds.dpsgd import rero_dpsgd

    return float(rero_dpsgd(noise_multiplier, sample_rate, steps, kappa, comparisons=False).value)


def candidate_statistics_many(
    fm,
    thetas: torch.Tensor,
    gbar: torch.Tensor,
    Xc: torch.Tensor,
    yc: torch.Tensor,
    clip: float,
    *,
    max_elements: int = 1 << 24,
    method: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(inner, sqnorm)`` (k, T, N) for k trials: s_{t,i} = <clip_C(g_{t,i}), g-bar_t> / C^2 and
    n_{t,i} = ||clip_C(g_{t,i})||^2 / C^2 of each trial's N candidates ``Xc`` (k, N, ...) at its
    parameters ``thetas`` (k, T, P). Clipped gradients come from
    :func:`rerokit.training.per_sample_clipped_grads`, vmapped over steps and trials; work is
    split so that at most ``max_elements`` gradient entries exist at once.

    ``method``: "vmap" (generic, above), "mlp" (the MLP engine for ``nn.Sequential`` MLPs,
    :meth:`rerokit.training.mlp.MLPPlan.candidate_statistics`: with z = W a + b per layer and
    delta = dl/dz, <g, g-bar> = sum_layers delta . (G-bar_W a + g-bar_b) and
    ||g||^2 = sum_layers ||delta||^2 (||a||^2 + 1), so no (T, N, P) gradient tensor is formed;
    clip factor min(1, C / (||g|| + CLIP_EPS)) as in the engine), or "auto" (mlp when the model
    and the candidates' shape allow it). Both paths agree to rounding (tested).

    Args:
        fm: the audited :class:`rerokit.training.FunctionalModel`.
        thetas: theta_t of each trial, shape (k, T, P).
        gbar: g-bar_t of each trial, shape (k, T, P).
        Xc: each trial's candidates, shape (k, N, ...).
        yc: their labels, shape (k, N).
        clip: clipping norm C > 0.
        max_elements: the most gradient entries held at once (vmap path).
        method: ``"auto"``, ``"vmap"`` or ``"mlp"``.

    Returns:
        ``(inner, sqnorm)``, each of shape (k, T, N).

    Raises:
        ValueError: if ``method`` is unknown, or ``"mlp"`` for a model the MLP engine cannot take.
    """
    from rerokit.attacks.prior_aware import step_statistics_from_grads
    from rerokit.training import per_sample_clipped_grads
    from rerokit.training.mlp import mlp_plan

    if method not in ("auto", "vmap", "mlp"):
        raise ValueError(f"method must be one of auto, vmap, mlp; got {method!r}")
    plan = None if method == "vmap" else mlp_plan(fm)
    if plan is not None and (plan.has_flatten or Xc.dim() == 3):
        return plan.candidate_statistics(thetas, gbar, Xc, yc, check_positive("clip", clip), max_elements=max_elements)
    if method == "mlp":
        raise ValueError("method='mlp' needs an nn.Sequential of Flatten/Linear/activation layers")
    k, T, P = thetas.shape
    N = Xc.shape[1]
    per_trial = T * N * P
    step = max(1, max_elements // max(1, per_trial))

    def one(th, gb, x, y):
        G = torch.func.vmap(lambda t: per_sample_clipped_grads(fm, t, x, y, clip))(th)  # (T, N, P)
        return step_statistics_from_grads(G, gb, clip)

    inners, sqs = [], []
    with torch.no_grad():
        if step >= 1 and per_trial <= max_elements:
            f = torch.func.vmap(one)
            for a in range(0, k, step):
                i_, s_ = f(thetas[a : a + step], gbar[a : a + step], Xc[a : a + step], yc[a : a + step])
                inners.append(i_)
                sqs.append(s_)
        else:  # one trial is already large: split its steps
            tstep = max(1, max_elements // max(1, N * P))
            for a in range(k):
                ii, ss = [], []
                for t0 in range(0, T, tstep):
                    i_, s_ = one(thetas[a, t0 : t0 + tstep], gbar[a, t0 : t0 + tstep], Xc[a], yc[a])
                    ii.append(i_)
                    ss.append(s_)
                inners.append(torch.cat(ii)[None])
                sqs.append(torch.cat(ss)[None])
    return torch.cat(inners), torch.cat(sqs)


@dataclass
class AuditReport:
    """Outcome of an audit: one :class:`AttackResult` per attack (or metric), the bound gamma
    at ``kappa``, the per-trial records, and the settings."""

    results: dict[str, AttackResult]
    gamma: float
    kappa: float
    noise_multiplier: float
    records: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    kind: str = "prior-aware"
    primary: str | None = None
    epsilon: float | None = None
    delta: float | None = None
    out: str | None = None

    def empirical_lower_bounds(self, attack: str, *, delta: float = 1e-5, confidence: float = 0.95) -> dict[str, Any]:
        """What the attack's successes prove about the mechanism (:func:`rerokit.bounds.empirical.audit_lower_bounds`).

        With k successes of ``attack`` in n trials at baseline kappa, the one-sided Clopper-Pearson
        lower end s_lo (at ``confidence``) refutes mu-GDP for every mu < Phi^-1(s_lo) - Phi^-1(kappa)
        and (eps, delta)-DP for every eps < log((s_lo - delta)/kappa) (Balle et al. 2022 Cor. 3 with
        delta; Hayes et al. 2023; Nasr et al. 2021 for the audit framing), at that confidence.

        Args:
          attack: a prior-aware attack name (its records hold one bool success per trial).
          delta: delta of the refuted (eps, delta)-DP guarantees.
          confidence: one-sided confidence.

        Returns:
          ``audit_lower_bounds``' dict (success_lower, mu_gdp_lower, epsilon_lower, ...).
        """
        from rerokit.bounds.empirical import audit_lower_bounds

        k = sum(bool(r["success"][attack]) for r in self.records)
        return audit_lower_bounds(k, len(self.records), self.kappa, confidence=confidence, delta=delta)

    def _empirical(self, primary: str, delta: float | None) -> EmpiricalBounds | None:
        """The empirical lower bounds of a success-rate ``primary`` at ``delta`` (None without one)."""
        r = self.results[primary]
        if delta is None or r.metric != "success" or not self.records or not isinstance(
                self.records[0].get("success"), dict):
            return None
        e = self.empirical_lower_bounds(primary, delta=delta)
        return EmpiricalBounds(e["success_lower"], e["mu_gdp_lower"], e["epsilon_lower"], e["confidence"])

    def to_dict(self, primary: str | None = None, *, delta: float | None = None) -> dict[str, Any]:
        """JSON-ready summary: gamma, kappa, sigma, trials, seed, every attack's metric, value and
        interval, and the settings.

        Args:
            primary: an attack name whose result is also flattened to the top level (its metric,
                ``ci_low``, ``ci_high``), or None.
            delta: with a success-rate ``primary``, the empirical lower bounds it proves at this
                delta are added (``empirical_mu_lower``, ``empirical_epsilon_lower``,
                ``empirical_success_lower`` at ``empirical_confidence``,
                :meth:`empirical_lower_bounds`); None: not.

        Returns:
            A JSON-ready dict.
        """
        d: dict[str, Any] = {}
        if primary is not None:
            d.update(MetricSummary.of(self.results[primary]).flat())
            e = self._empirical(primary, delta)
            if e is not None:
                d.update(e.flat())
        d.update(gamma=self.gamma, kappa=self.kappa, noise_multiplier=self.noise_multiplier,
                 trials=len(self.records), seed=self.seed)
        d["attacks"] = {k: MetricSummary.of(r).to_dict() for k, r in self.results.items()}
        d["settings"] = dict(self.settings)
        return d

    def summary(self) -> AuditOutcome:
        """The outcome of ``rerokit audit prior-aware|gradient`` as an :class:`AuditOutcome`
        (``.to_dict()``: the command's JSON, less ``rerokit_version``).

        Prior-aware: the primary attack's success and interval, the empirical lower bounds (at
        ``delta``), gamma, kappa, sigma, trials, seed, every attack, ``epsilon``, ``delta``, the
        mean target-clipped fraction, settings (and ``out``). Gradient: the mean MSE and its
        interval, then the prior-matching success at the primary prior size, the same common
        fields, settings (and ``out``).

        Returns:
            The :class:`~rerokit.experiments.audit_outcome.AuditOutcome`.
        """
        primary = self.primary or next(iter(self.results))
        gradient = self.kind == "gradient"
        return AuditOutcome(
            kind=self.kind, attack=primary, result=MetricSummary.of(self.results[primary]),
            attacks={k: MetricSummary.of(r) for k, r in self.results.items()}, gamma=self.gamma, kappa=self.kappa,
            noise_multiplier=self.noise_multiplier, trials=len(self.records), seed=self.seed,
            settings=dict(self.settings), epsilon=self.epsilon, delta=self.delta,
            empirical=None if gradient else self._empirical(primary, self.delta),
            mse=MetricSummary.of(self.results["mse"]) if gradient else None,
            mean_target_clipped_fraction=None if gradient else
            sum(x["target_clipped_fraction"] for x in self.records) / len(self.records),
            out=self.out,
        )


def load_audit_data(cfg: AuditConfig):
    from rerokit.data import load_dataset

    if cfg.dataset in ("mnist", "cifar10") and cfg.data_path is None:
        raise ValueError(f"dataset {cfg.dataset} needs data_path (a local file or folder)")
    return load_dataset(cfg.dataset, cfg.data_path) if cfg.data_path else load_dataset(cfg.dataset)


def train_chunk(cfg: AuditConfig, fm, ds, trials: list[Trial], record: str, device: str = "cpu"):
    """DP-SGD on D- + {z*} for each of ``trials``, vectorised, on ``device`` (random numbers drawn on the CPU)."""
    from rerokit.training import train_dpsgd_many

    X = torch.as_tensor(ds.X)
    y = torch.as_tensor(ds.y)
    # training set D- + {z*}; the target sits last (position is irrelevant: i.i.d. sampling).
    idx = torch.as_tensor(np.stack([np.concatenate([t.known, [t.target_index]]) for t in trials]), dtype=torch.long)
    theta0 = fm.init_flat_many([t.seed for t in trials]).to(device)
    res = train_dpsgd_many(fm, theta0, X[idx], y[idx], cfg.dpsgd_settings(), seed=[t.seed for t in trials],
                           target_index=len(trials[0].known), record=record)
    return res


# --------------------------------------------------------------------------- blocks
# The one function per audit that computes a block (both executors call it). A block's inputs are
# the job (config, attack settings, device) and the Block (index, trials lo..hi-1, the missing
# ones, their seeds); dataset and model are loaded once per process and cached.


@dataclass(frozen=True)
class _Job:
    """What every block of an audit run needs (sent once to each Ray worker)."""

    kind: str
    cfg: AuditConfig
    device: str = "cpu"
    attacks: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()
    attack: GradientAttack = GradientAttack()

    @property
    def user_code(self) -> str | None:
        """The user code the blocks run (``--model-factory``), named when a block fails in it."""
        return None if self.cfg.model_fn is None else f"the model of model_factory {self.cfg.model_factory}"


_STATE: dict[str, Any] = {}
_STATE_LOCK = threading.Lock()  # blocks may run on several threads (rerokit.executors.LocalExecutor)
_MODELS = threading.local()  # one model per thread: torch.func.functional_call swaps a module's parameters


def initial_state(cfg: AuditConfig, device: str) -> tuple[Any, Any, torch.Tensor, torch.Tensor]:
    """``(dataset, model, X, y)`` of ``cfg`` (X, y as tensors on ``device``), cached for the last config
    (the data shared by all threads, the model built once per thread)."""
    key = (json.dumps(cfg.to_dict(), sort_keys=True), cfg.model_fn, device)
    with _STATE_LOCK:
        if _STATE.get("key") != key:
            _STATE.clear()
            ds = load_audit_data(cfg)
            _STATE.update(key=key, value=(ds, torch.as_tensor(ds.X).to(device), torch.as_tensor(ds.y).to(device)))
        ds, X, y = _STATE["value"]
    if getattr(_MODELS, "key", None) != key:
        _MODELS.key, _MODELS.fm = key, build_model(cfg, ds.sample_shape, ds.num_classes)
    return ds, _MODELS.fm, X, y


def block_trials(cfg: AuditConfig, n_data: int, block) -> list[Trial]:
    return [make_trial(n_data, cfg.prior_size, cfg.n_known, s, cfg.prior_weights) for s in block.payload]


def _prior_aware_block(job: _Job, block) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of the missing trials of one block of a prior-aware audit (trials lo..hi-1 trained together)."""
    from rerokit.attacks import prior_aware as pa

    cfg, attacks = job.cfg, job.attacks
    ds, fm, X, y = initial_state(cfg, job.device)
    tri = block_trials(cfg, ds.n, block)
    record = "full" if "alg2_nosub" in attacks else "gbar_only"
    log_prior = None if cfg.prior_weights is None else torch.log(
        torch.as_tensor(cfg.prior_weights, dtype=torch.float64)).to(job.device)
    tr = train_chunk(cfg, fm, ds, tri, record, device=job.device).transcript
    pidx = torch.as_tensor(np.stack([t.prior for t in tri]), dtype=torch.long).to(job.device)
    Xc, yc = X[pidx], y[pidx]
    stats = {"sub": candidate_statistics_many(fm, tr.thetas, tr.gbar, Xc, yc, cfg.clip)}
    if "alg2_nosub" in attacks:
        stats["nosub"] = candidate_statistics_many(fm, tr.thetas, tr.noisy_sums, Xc, yc, cfg.clip)
    inner, sq = (s.double() for s in stats["sub"])
    guesses: dict[str, np.ndarray] = {}
    for a in attacks:
        if a == "alg2_nosub":
            sc = pa.alg2_scores(stats["nosub"][0].double())
        else:
            sc = pa.scores(a, inner, sq, noise_multiplier=cfg.noise_multiplier or None,
                           sample_rate=cfg.sample_rate, log_prior=log_prior)
        guesses[a] = pa.guess(sc).cpu().numpy()
    tgt = torch.as_tensor([t.target for t in tri], device=sq.device)
    tgt_sq = sq[torch.arange(len(tri), device=sq.device), :, tgt].cpu()  # (k, T)
    todo = set(block.todo)
    for j, t in enumerate(tri):
        i = block.lo + j
        if i in todo:
            yield i, {
                "seed": t.seed,
                "prior": t.prior,
                "target": t.target,
                "guess": {a: int(guesses[a][j]) for a in attacks},
                "success": {a: bool(guesses[a][j] == t.target) for a in attacks},
                "target_clipped_fraction": float((tgt_sq[j] >= 0.999).double().mean()),
            }


def _gradient_block(job: _Job, block) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of the missing trials of one block of a gradient audit, each as soon as its attack is done."""
    from rerokit.attacks.gradient import gradient_attack, mse, prior_match_success

    cfg = job.cfg
    ds, fm, _, _ = initial_state(cfg, job.device)
    tri = block_trials(cfg, ds.n, block)
    tr = train_chunk(cfg, fm, ds, tri, "gbar_only", device=job.device).transcript
    todo = set(block.todo)
    for j, t in enumerate(tri):
        i = block.lo + j
        if i not in todo:  # its record is in the file: only its training (shared by the block) is redone
            continue
        ti = t.target_index
        x = ds.X[ti]
        o = gradient_attack(fm, tr.thetas[j], tr.gbar[j], int(ds.y[ti]), cfg.clip, ds.sample_shape,
                            data_range=ds.data_range, attack=job.attack, seed=t.seed % (2**31))
        z_hat = o.z_hat.cpu()
        pool = np.delete(ds.X, ti, axis=0)
        yield i, {
            "seed": t.seed,
            "target_index": ti,
            "mse": mse(z_hat, x),
            "objective": o.loss,
            "prior_success": {str(n): prior_match_success(z_hat.numpy(), x, pool, n) for n in job.sizes},
        }


# the audit blocks hold no shared mutable state (data read-only, one model per thread, seeded
# generators per trial, the global generator under a lock): the local executor may run several
_prior_aware_block.thread_safe = True  # type: ignore[attr-defined]
_gradient_block.thread_safe = True  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- driver


def declared_guarantee(cfg: "AuditConfig") -> dict[str, Any]:
    """What the audited run promises, kept in the result file's header so that a report made from the file
    states it: the (epsilon, delta) sigma was calibrated for (None when sigma was given) and the sampler
    (the engine samples each example independently with probability q: "poisson"; q = 1: "full_batch").

    Args:
      cfg: the audit's settings.

    Returns:
      ``{"epsilon": ..., "delta": ..., "sampler": ...}``.
    """
    q = getattr(cfg, "sample_rate", 1.0)  # trial runners whose settings are not an AuditConfig (e.g. full-batch games)
    return {"epsilon": getattr(cfg, "epsilon", None), "delta": getattr(cfg, "delta", None),
            "sampler": "full_batch" if q == 1.0 else "poisson"}


@dataclass(frozen=True, eq=False)
class TrialBlocks:
    """What a run of :func:`run_trial_blocks` writes and checks besides its job and options.

    Attributes:
        schema: the keys and types of one record (:mod:`rerokit.experiments.records` types), as
            :class:`rerokit.experiments.records.TrialLog` checks them.
        extra: settings written into the file's header besides the job config's, ``seed``,
            ``chunk_size``, ``device`` and the declared guarantee (e.g. the attacks run).
        desc: the progress bar's text.
        validate: called once the log is open, before any work (data, model and trial
            construction); raises ``ValueError``/``TypeError`` on a bad input. None: nothing to check.
        announce: the first line a user sees on stderr (what is being run), or None.
        check_record: what else ties a record to this run besides its trial's seed (a guess in
            the prior, ``success`` agreeing with guess and target, finite fractions): the problem
            as text, or None when the record is fine. None: no further check.
    """

    schema: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)
    desc: str = "trials"
    validate: Callable[[], None] | None = None
    announce: str | None = None
    check_record: Callable[[dict[str, Any]], str | None] | None = None

    def __post_init__(self) -> None:
        for name in ("schema", "extra"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(f"{name} must be a dict, got {type(getattr(self, name)).__name__}")
        if not isinstance(self.desc, str):
            raise TypeError(f"desc must be a string, got {type(self.desc).__name__}")
        if self.announce is not None and not isinstance(self.announce, str):
            raise TypeError(f"announce must be a string or None, got {type(self.announce).__name__}")
        for name in ("validate", "check_record"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise TypeError(f"{name} must be a function or None, got {type(getattr(self, name)).__name__}")


def run_trial_blocks(job: _Job, fn, trials: int, seed: int, opts: "RunOptions", spec: TrialBlocks,
                     ) -> tuple[int, int, dict[str, Any], list[dict[str, Any]]]:
    """Open the log, run the missing blocks on the executor, append their trials; the records of 0..trials-1.

    Every record (read on resume or appended) must carry the run's seed of its trial and pass
    ``spec.check_record``.

    Args:
        job: what every block needs (its ``cfg``, ``device``, ``kind``), sent once to each worker.
        fn: the block function ``fn(job, block)`` yielding ``(trial, record)``.
        trials: K, the number of trials (>= 1).
        seed: the run's seed (>= 0); trial i's seed is ``trial_seeds(seed, K)[i]``.
        opts: the :class:`rerokit.executors.RunOptions` (file, resume, block size, executor, progress).
        spec: the :class:`TrialBlocks` (record schema, header extras, progress text, checks).

    Returns:
        ``(K, seed, settings, records of trials 0..K-1)``.
    """
    check_instance("spec", spec, TrialBlocks)
    extra, schema, desc, announce, check_record = spec.extra, spec.schema, spec.desc, spec.announce, spec.check_record
    validate = spec.validate or (lambda: None)
    from rerokit.executors import ProgressBar, get_executor, plan_blocks, run_blocks
    from rerokit.experiments.records import TrialLog
    from rerokit.training import trial_seeds

    K = check_int("trials", trials, minimum=1, maximum=_MAX_TRIAL_ID)
    seed = check_int("seed", seed, minimum=0)
    chunk_size = opts.block_size(DEFAULT_CHUNK_SIZE.get(getattr(job, "kind", None), 64))
    out, progress = opts.out, opts.progress
    ex = get_executor(opts.executor, workers=opts.workers, address=opts.address)
    owned = ex is not opts.executor
    settings = dict(job.cfg.to_dict(), seed=seed, **extra, chunk_size=chunk_size, device=job.device,
                    **declared_guarantee(job.cfg))
    seeds = trial_seeds(seed, K)

    def semantic(rec: dict[str, Any]) -> str | None:
        if rec["seed"] != seeds[rec["trial"]]:
            return f"seed {rec['seed']} is not this run's seed of that trial ({seeds[rec['trial']]}, from seed {seed})"
        return None if check_record is None else check_record(rec)

    # every record of the file must be a trial 0..K-1 of this run with the keys it writes
    log = TrialLog(out, settings, resume=opts.resume, trials=K, schema=schema, name="out", overwrite=opts.overwrite,
                   validate=semantic)
    try:
        validate()  # data, model and trial construction, before any work
        if log.reused and progress:
            print(f"rerokit: {out} already holds the {K} trials of these settings: reporting them "
                  "(--overwrite runs them again)", file=sys.stderr, flush=True)
        elif announce and progress:  # the first line a user sees: what is being run, before the training
            print(announce, file=sys.stderr, flush=True)
        blocks = plan_blocks(K, chunk_size, log.done, payload=lambda lo, hi: seeds[lo:hi])
        run_blocks(ex, fn, job, blocks, log.append, progress=ProgressBar(desc=desc) if progress else None,
                   gpu=job.device.startswith("cuda"))
        log.sort()
        recs = [r for r in log if r["trial"] < K]
    finally:
        log.close()
        _STATE.clear()  # the dataset is not kept in this process after the run
        if owned:
            ex.close()
    return K, seed, settings, recs


def resolve_audit_device(device) -> str:
    from rerokit.training.devices import resolve_device

    d = resolve_device(device)
    return str(d) if d.index is not None else d.type


def run_prior_aware_audit(
    cfg: AuditConfig, trials: int, seed: int,
    *,
    attacks: Sequence[str] = ("alg2", "alg3", "loglik"),
    options: "RunOptions | None" = None,
    announce: str | None = None,
) -> AuditReport:
    """Run ``trials`` prior-aware attack trials (see module docstring) and summarise.

    Each attack's success rate gets a 95% Clopper-Pearson interval; ``gamma`` is the ReRo bound
    at ``cfg.kappa``. ``loglik`` needs sigma > 0. Trials already in ``out`` (with ``resume``) are
    not repeated; the summary covers trials 0..trials-1 from the file and this run.

    Args:
        cfg: the settings.
        trials: number of trials K (>= 1).
        seed: the run's seed (>= 0); trial i depends on (seed, i) only.
        attacks: names of :data:`PRIOR_AWARE_ATTACKS`.
        options: how the run is executed and recorded (:class:`rerokit.executors.RunOptions`: the
            results file ``out`` and ``resume``/``overwrite``, the block size ``chunk_size`` (default
            :data:`DEFAULT_CHUNK_SIZE`; recorded in the settings), ``progress``, ``executor``,
            ``device``); default ``RunOptions()``.
        announce: a line printed on stderr (with ``progress``) once the settings are checked, before
            the training starts.

    Returns:
        The :class:`AuditReport`.
    """
    attacks = tuple(check_choice("attack", a, PRIOR_AWARE_ATTACKS) for a in attacks)
    if not attacks:
        raise ValueError("attacks must name at least one of " + ", ".join(PRIOR_AWARE_ATTACKS))
    if "loglik" in attacks and cfg.noise_multiplier == 0:
        raise ValueError("attack loglik needs noise_multiplier > 0")
    opts = options or RunOptions()
    job = _Job("prior-aware", cfg, resolve_audit_device(opts.device), attacks=attacks)
    from rerokit.experiments.schema import prior_aware_problem, prior_aware_schema

    schema = prior_aware_schema(cfg.prior_size, attacks)

    def check_record(rec: dict[str, Any]) -> str | None:
        return prior_aware_problem(rec, cfg.prior_size, attacks)

    def validate() -> None:
        ds = initial_state(cfg, job.device)[0]
        make_trial(ds.n, cfg.prior_size, cfg.n_known, 0, cfg.prior_weights)

    spec = TrialBlocks(schema, {"attacks": list(attacks)}, "prior-aware trials", validate, announce, check_record)
    _, seed, settings, recs = run_trial_blocks(job, _prior_aware_block, trials, seed, opts, spec)
    gamma = rero_gamma(cfg.noise_multiplier, cfg.sample_rate, cfg.steps, cfg.kappa)
    results = {
        a: AttackResult.from_successes([r["success"][a] for r in recs], seed=seed, settings=settings,
                                       extras={"gamma": gamma, "kappa": cfg.kappa})
        for a in attacks
    }
    return AuditReport(results, gamma, cfg.kappa, cfg.noise_multiplier, recs, settings, seed, kind="prior-aware",
                       primary=attacks[0], epsilon=cfg.epsilon, delta=cfg.delta,
                       out=None if opts.out is None else str(opts.out))


def run_gradient_audit(
    cfg: AuditConfig, trials: int, seed: int,
    *,
    attack: "GradientAttack | None" = None,
    prior_sizes: Sequence[int] | None = None,
    options: "RunOptions | None" = None,
    announce: str | None = None,
) -> AuditReport:
    """Run ``trials`` gradient-based attack trials (Eq. 1; full transcript, label known) and
    report the reconstruction MSE and, for each prior size n in ``prior_sizes`` (default
    ``cfg.prior_size``), the App. D prior-matching success: the exact probability that z* is
    the nearest to z-hat among z* and n - 1 random other dataset points, averaged over trials
    (interval: Student-t on the mean of the per-trial probabilities). The prior drawn by the
    trial is not used by this attack (only its target). Eq. (1) is stated for full batches; for
    q < 1 every step's g-bar_t enters the objective (steps without the target add only noise).

    Args:
        cfg, trials, seed: as in :func:`run_prior_aware_audit`.
        attack: the attack's settings (:class:`GradientAttack`: Adam steps per restart, restarts,
            step size); default ``GradientAttack()``.
        prior_sizes: prior sizes of the App. D success (default ``cfg.prior_size``).
        options, announce: as in :func:`run_prior_aware_audit`.

    Returns:
        The :class:`AuditReport` (primary: ``prior_success_<first size>``).
    """
    sizes = tuple(check_int("prior_sizes", n, minimum=2) for n in (prior_sizes or (cfg.prior_size,)))
    att = attack or GradientAttack()
    opts = options or RunOptions()
    extra = {"attack": "gradient", "iterations": att.iterations, "restarts": att.restarts,
             "attack_lr": att.attack_lr, "prior_sizes": list(sizes)}
    job = _Job("gradient", cfg, resolve_audit_device(opts.device), sizes=sizes, attack=att)
    from rerokit.experiments.schema import gradient_problem, gradient_schema

    schema = gradient_schema(sizes)
    check_record = gradient_problem

    def validate() -> None:
        ds = initial_state(cfg, job.device)[0]
        if max(sizes) > ds.n:
            raise ValueError(f"prior_sizes must be <= dataset size {ds.n}, got {max(sizes)}")
        make_trial(ds.n, cfg.prior_size, cfg.n_known, 0, cfg.prior_weights)

    spec = TrialBlocks(schema, extra, "gradient-attack trials", validate, announce, check_record)
    _, seed, settings, recs = run_trial_blocks(job, _gradient_block, trials, seed, opts, spec)
    results = {"mse": AttackResult.from_values([r["mse"] for r in recs], seed=seed, metric="mse", settings=settings,
                                              support=(0.0, float("inf")))}
    gammas = {}
    for n in sizes:
        gammas[n] = rero_gamma(cfg.noise_multiplier, cfg.sample_rate, cfg.steps, 1.0 / n)
        results[f"prior_success_{n}"] = AttackResult.from_values(
            [r["prior_success"][str(n)] for r in recs], seed=seed, metric="success", settings=settings,
            extras={"gamma": gammas[n], "kappa": 1.0 / n, "prior_size": n}, support=(0.0, 1.0),
        )
    n0 = sizes[0]
    return AuditReport(results, gammas[n0], 1.0 / n0, cfg.noise_multiplier, recs, settings, seed, kind="gradient",
                       primary=f"prior_success_{n0}", epsilon=cfg.epsilon, delta=cfg.delta,
                       out=None if opts.out is None else str(opts.out))


def run_audit(
    kind: str = "prior-aware",
    config: AuditConfig | None = None,
    *,
    epsilon: float | None = None,
    noise_multiplier: float | None = None,
    delta: float = 1e-5,
    attack: "str | GradientAttack" = "auto",
    trials: int | None = None,
    seed: int = 0,
    options: "RunOptions | None" = None,
    **fields: Any,
) -> AuditReport:
    """``rerokit audit prior-aware|gradient`` as a library call: check everything, calibrate, run.

    Checks come before any work, cheap ones first: the attack settings, the executor (Ray installed,
    ``address`` reachable) and device, the audit settings (data path, |D-| default, trial
    construction), trials, seed, block size, ``out``, memory; then sigma is calibrated for
    (epsilon, delta) and the trials run (see :func:`run_prior_aware_audit`,
    :func:`run_gradient_audit`). ``rep.summary().to_dict()`` is the command's JSON.

    Args:
        kind: ``"prior-aware"`` or ``"gradient"``.
        config: a complete :class:`AuditConfig` (e.g. from :meth:`AuditConfig.resolve`); or None
            and the settings as ``epsilon`` / ``noise_multiplier`` / ``delta`` / ``**fields``.
        epsilon, noise_multiplier, delta: as for :meth:`AuditConfig.resolve` (without ``config``).
        attack: prior-aware: ``auto`` (alg2 for full batches, q = 1, else alg3) or a name of
            :data:`PRIOR_AWARE_ATTACKS`; gradient: a :class:`GradientAttack` (its Adam steps,
            restarts and step size; ``auto`` for the defaults).
        trials: trials K (default :data:`DEFAULT_TRIALS`).
        seed: the run's seed.
        options: how the run is executed and recorded (:class:`rerokit.executors.RunOptions`: ``out``
            and ``resume``/``overwrite`` - without either, a finished file of the same settings is
            reported again and any other refused -, ``chunk_size`` (default
            :data:`DEFAULT_CHUNK_SIZE`), ``progress``, ``executor``/``workers``/``address``,
            ``device``); default ``RunOptions()``.
        **fields: :class:`AuditConfig` fields (dataset, data_path, prior_size, n_known, steps,
            sample_rate, clip, lr, model, hidden, activation, prior_weights, model_fn).

    Returns:
        The :class:`AuditReport`.
    """
    from rerokit.executors import get_executor

    kind = check_choice("kind", kind, AUDITS)
    opts = options or RunOptions()
    check_instance("options", opts, RunOptions)
    if kind == "prior-aware":
        attack = check_choice("attack", attack, ("auto",) + PRIOR_AWARE_ATTACKS)
        sigma0 = config.noise_multiplier if config is not None else noise_multiplier
        if attack == "loglik" and sigma0 == 0:
            raise ValueError("attack loglik needs noise_multiplier > 0")
    elif attack == "auto":
        attack = GradientAttack()
    elif not isinstance(attack, GradientAttack):
        raise TypeError(f"attack of the gradient audit must be a GradientAttack, got {attack!r}")
    ex = get_executor(opts.executor, workers=opts.workers, address=opts.address)
    dev = resolve_audit_device(opts.device)
    try:
        if config is None:
            base = AuditConfig._base(**fields)
        else:
            if fields or epsilon is not None or noise_multiplier is not None:
                given = ", ".join([*fields, *(["epsilon"] if epsilon is not None else []),
                                   *(["noise_multiplier"] if noise_multiplier is not None else [])])
                raise ValueError(f"give the settings in config or as arguments, not both (got config and {given})")
            check_instance("config", config, AuditConfig)
            if config.delta is None:  # the delta of the empirical lower bounds, as the command's --delta
                config = dataclasses.replace(config, delta=check_probability("delta", delta, high_open=True))
            base = config
        trials = DEFAULT_TRIALS[kind] if trials is None else trials
        chunk_size = opts.block_size(DEFAULT_CHUNK_SIZE[kind])
        check_int("trials", trials, minimum=1)
        check_int("seed", seed, minimum=0)
        if opts.out is not None:
            from rerokit._files import check_output_file

            check_output_file("out", opts.out)
        elif opts.resume or opts.overwrite:
            raise ValueError(f"{'resume' if opts.resume else 'overwrite'} needs --out (the JSONL file of the run)")
        check_audit_memory(base, trials, chunk_size, full=attack == "alg2_nosub")
        cfg = base._calibrated(epsilon, noise_multiplier, delta) if config is None else config
        if kind == "prior-aware" and attack == "auto":
            attack = "alg2" if cfg.sample_rate == 1.0 else "alg3"
        line = _announce(kind, cfg, trials, seed, attack if kind == "prior-aware" else "gradient (Eq. 1)", epsilon, ex)
        run = dataclasses.replace(opts, executor=ex, workers=None, address=None, device=dev, chunk_size=chunk_size)
        if kind == "prior-aware":
            return run_prior_aware_audit(cfg, trials, seed, attacks=(attack,), options=run, announce=line)
        return run_gradient_audit(cfg, trials, seed, attack=attack, options=run, announce=line)
    finally:
        if ex is not opts.executor:
            ex.close()


def _announce(kind: str, cfg: AuditConfig, trials: int, seed: int, attack: str, epsilon: float | None, ex) -> str:
    """One line saying what the audit is about to run (printed before any heavy work)."""
    sigma = f"sigma = {cfg.noise_multiplier:.4g}" + (
        f" (calibrated for epsilon = {epsilon:g} at delta = {cfg.delta:g})" if epsilon is not None else "")
    model = cfg.model if cfg.model_fn is None else "user model"
    return (f"rerokit audit {kind}: {trials} trials of DP-SGD on {cfg.dataset} ({model}, |D-| = {cfg.n_known}, "
            f"T = {cfg.steps}, q = {cfg.sample_rate:g}, C = {cfg.clip:g}), {sigma}, prior of {cfg.prior_size} "
            f"candidates, attack {attack}; seed {seed}, executor {ex.describe()}")




def check_audit_memory(cfg: AuditConfig, trials: int, chunk_size: int, *, full: bool = False) -> None:
    """Refuse --trials / --chunk-size / --steps / --hidden whose DP-SGD transcripts (chunk x steps x
    parameters) or per-trial records do not fit in memory.

    Args:
        cfg: the settings (dataset, model, hidden, steps, n_known).
        trials: trials of the run.
        chunk_size: trials trained together.
        full: the noisy sums are recorded too (attack alg2_nosub).
    """
    import math

    from rerokit._resources import check_memory, dpsgd_trials_bytes, memory_limit, trial_records_bytes

    from rerokit.data import DATASET_SHAPES  # the data need not be loaded for the estimate

    shape = DATASET_SHAPES.get(cfg.dataset, DATASET_SHAPES["digits"])
    try:
        with torch.device("meta"):  # count the parameters without allocating them
            P = build_model(cfg, shape, 10).num_params
    except Exception:  # noqa: BLE001 - a user model that cannot be built on the meta device: build it
        P = build_model(cfg, shape, 10).num_params  # for real (a broken model_fn raises its error here)
    dim = math.prod(shape)
    n_train = cfg.n_known + 1
    chunk = min(int(chunk_size), int(trials))
    need = dpsgd_trials_bytes(chunk, cfg.steps, P, n_train, dim, full=full) + trial_records_bytes(trials)
    if need <= memory_limit():
        return
    one = dpsgd_trials_bytes(1, cfg.steps, P, n_train, dim, full=full)
    what = (f"{chunk} DP-SGD trials trained together x {cfg.steps} steps x {P} parameters "
            f"({cfg.model}, hidden {list(cfg.hidden)}) plus the records of {trials} trials")
    if trial_records_bytes(trials) > memory_limit() / 2:
        check_memory("--trials", need, what, hint="use fewer --trials")
    elif P > 10**7:
        check_memory("--hidden", need, what, hint="use a smaller model (--hidden)")
    elif chunk > 1 and one + trial_records_bytes(trials) <= memory_limit():
        check_memory("--chunk-size", need, what, hint="use a smaller --chunk-size (trials trained together)")
    else:
        check_memory("--steps", need, what, hint="use fewer --steps or a smaller model")

