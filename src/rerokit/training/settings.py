"""Parameter objects of the training functions (torch-free): what DP-SGD computes
(:class:`DPSGDSettings`), how the engine computes it (:class:`EngineOptions`) and the MLP trained
by the RecoNN attacks (:class:`MLPSpec`).

Each is a frozen dataclass whose fields are checked when it is made (a ``ValueError`` or
``TypeError`` naming the field and its valid range), so a function that takes one never sees a
bad value::

    from rerokit.training import DPSGDSettings, EngineOptions, train_dpsgd_many
    s = DPSGDSettings(noise_multiplier=1.0, clip=0.1, steps=100, lr=1.0, sample_rate=0.5)
    r = train_dpsgd_many(fm, theta0, Xk, yk, s, seed=123, options=EngineOptions(num_threads=1))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rerokit._validate import check_bool, check_choice, check_int, check_nonnegative, check_positive, check_probability

__all__ = ["DPSGDSettings", "EngineOptions", "MLPSpec", "METHODS"]

METHODS = ("auto", "vmap", "linear")
"""Clipped-sum backends of the engine (:class:`EngineOptions` ``method``)."""



@dataclass(frozen=True)
class DPSGDSettings:
    """The hyper-parameters of one DP-SGD (or DP-GD, or plain GD) run: what is computed.

    One step (:mod:`rerokit.training.engine`): the sum of the per-sample gradients of a Poisson
    batch, each clipped to norm ``clip``, plus N(0, (noise_multiplier clip)^2 I), divided by the
    expected batch size ``sample_rate * n``, then a torch-SGD step of size ``lr`` with ``momentum``.

    Attributes:
        noise_multiplier: sigma >= 0 (the noise std on the clipped sum is sigma * clip; 0: no noise).
        clip: the clipping norm C > 0; None: no clipping (then ``noise_multiplier`` must be 0:
            plain (S)GD, e.g. RecoNN's shadow models).
        steps: T, the number of steps (an integer >= 1).
        lr: the learning rate (> 0).
        sample_rate: q in (0, 1], the Poisson sampling rate of each batch (default 1: full batch).
        momentum: SGD momentum in [0, 1) (default 0; torch's convention, as Opacus' DPOptimizer).
    """

    noise_multiplier: float
    clip: float | None
    steps: int
    lr: float
    sample_rate: float = 1.0
    momentum: float = 0.0

    def __post_init__(self) -> None:
        sigma = check_nonnegative("noise_multiplier", self.noise_multiplier)
        clip = self.clip
        if clip is not None:
            clip = check_positive("clip", clip)
        elif sigma > 0:
            raise ValueError("clip must be a finite number > 0 when noise_multiplier > 0 "
                             "(noise std is noise_multiplier * clip); got None")
        steps = check_int("steps", self.steps, minimum=1)
        lr = check_positive("lr", self.lr)
        q = check_probability("sample_rate", self.sample_rate)
        momentum = check_nonnegative("momentum", self.momentum)
        if momentum >= 1:
            raise ValueError(f"momentum must be a number in [0, 1), got {momentum!r}")
        for name, value in (("noise_multiplier", sigma), ("clip", clip), ("steps", steps), ("lr", lr),
                            ("sample_rate", q), ("momentum", momentum)):
            object.__setattr__(self, name, value)

    @property
    def private(self) -> bool:
        """Whether the run is DP-SGD (noise and clipping), not plain full-batch GD."""
        return not (self.noise_multiplier == 0.0 and self.clip is None)

    def to_dict(self) -> dict[str, Any]:
        """The settings as a dict (the keys of the engine's ``Result.settings``)."""
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> "DPSGDSettings":
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class EngineOptions:
    """How the vectorised DP-SGD engine (:func:`rerokit.training.train_dpsgd_many`) computes a run -
    not what it computes (:class:`DPSGDSettings` does that): any choice here gives the same
    numbers up to float round-off.

    Attributes:
        method: the clipped-sum backend: ``"vmap"`` (``vmap`` of per-sample gradients),
            ``"linear"`` (the exact MLP engine, :class:`rerokit.training.mlp.MLPPlan`, for
            ``nn.Sequential`` MLPs) or ``"auto"`` (linear when supported; default).
        chunk_size: trials trained together (an integer >= 1); None: a default that bounds memory.
        progress: a progress bar (trials x steps) on stderr (default False).
        num_threads: torch intra-op threads for the call only (an integer >= 1, restored after);
            None: leave torch's setting.
        compile: ``torch.compile`` the step (falls back to eager with a warning where it fails).
        device: where the run's tensors live: ``"cpu"``, ``"cuda"``, ``"auto"`` or a
            ``torch.device``; None (default): the initial parameters' device. Random numbers are
            drawn on the CPU and moved, so every device gets the same draws.
    """

    method: str = "auto"
    chunk_size: int | None = None
    progress: bool = False
    num_threads: int | None = None
    compile: bool = False
    device: Any = None

    def __post_init__(self) -> None:
        check_choice("method", self.method, METHODS)
        if self.chunk_size is not None:
            object.__setattr__(self, "chunk_size", check_int("chunk_size", self.chunk_size, minimum=1))
        if self.num_threads is not None:
            object.__setattr__(self, "num_threads", check_int("num_threads", self.num_threads, minimum=1))
        check_bool("progress", self.progress)
        check_bool("compile", self.compile)
        if self.device is not None and not isinstance(self.device, str):
            import torch  # a non-string device can only be a torch.device (torch is then installed)

            if not isinstance(self.device, torch.device):
                raise TypeError(f"device must be one of cpu, cuda, auto (a string) or a torch.device, "
                                f"got {type(self.device).__name__}")

    def replace(self, **changes: Any) -> "EngineOptions":
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class MLPSpec:
    """An MLP ``Flatten-Linear-act-...-Linear`` (:func:`rerokit.training.make_mlp`) on inputs of
    the data's dimension.

    Attributes:
        hidden: the hidden layers' widths (each an integer >= 1; default (10,)).
        activation: the activation's name (a key of :data:`rerokit.training.ACTIVATIONS`; default ``"elu"``).
        num_classes: the outputs (an integer >= 1; default 10).
    """

    hidden: tuple[int, ...] = (10,)
    activation: str = "elu"
    num_classes: int = 10

    def __post_init__(self) -> None:
        if isinstance(self.hidden, (str, bytes)) or not hasattr(self.hidden, "__iter__"):
            raise TypeError(f"hidden must be a sequence of integers >= 1, got {type(self.hidden).__name__}")
        object.__setattr__(self, "hidden", tuple(check_int(f"hidden[{i}]", h, minimum=1)
                                                 for i, h in enumerate(self.hidden)))
        check_choice("activation", self.activation, _activations())
        object.__setattr__(self, "num_classes", check_int("num_classes", self.num_classes, minimum=1))


def _activations() -> tuple[str, ...]:
    from rerokit.training.models import ACTIVATIONS  # torch: imported when an MLPSpec is made

    return tuple(ACTIVATIONS)
