"""Models used across rerokit's attacks (torch).

``make_mlp(64, [10], 10)`` is the digits analogue of the papers' 784-10-10 ELU MLP
(Hayes et al. 2023 App. A; Balle et al. 2022 Sec. V). Models are plain ``nn.Module``s so that
``torch.func.functional_call`` + ``vmap`` can run many parameter sets at once and Opacus can wrap
them (no BatchNorm; GroupNorm-free small CNN).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Sequence

import torch
from torch import nn

from rerokit._validate import check_choice, check_int

__all__ = ["make_mlp", "SmallCNN", "ACTIVATIONS", "FunctionalModel", "GLOBAL_RNG_LOCK", "global_rng"]

GLOBAL_RNG_LOCK = threading.RLock()
"""Held by EVERY piece of rerokit that draws from torch's global generator: seeded draws
(``fork_rng`` + ``manual_seed``, :func:`global_rng`) and unseeded ones (building a module, whose
constructor runs ``reset_parameters``: :func:`make_mlp`, :class:`SmallCNN`, ...).

torch has one global CPU generator per process, not one per thread. A seeded initialisation
(``manual_seed(s)`` then ``reset_parameters``) is a function of ``s`` only if no other thread
draws from, seeds or restores that generator in between; blocks run concurrently on threads
(:class:`rerokit.executors.LocalExecutor`), so holding the lock only around the seeded draws is
not enough: a concurrent ``nn.Linear(...)`` elsewhere advanced the generator between another
thread's ``manual_seed`` and its draws (a different theta_0 for the same seed; found as
balle-mia's identical-by-construction models ending up apart). Code running in blocks that
builds modules or draws from the global generator itself must hold this lock too."""


@contextlib.contextmanager
def global_rng(seed: int | None = None) -> Iterator[None]:
    """Draw from torch's global generator safely across threads: the body runs holding
    :data:`GLOBAL_RNG_LOCK`; with ``seed``, inside ``torch.random.fork_rng`` after seeding the global
    CPU generator with ``seed`` (its state is restored afterwards). Only the CPU generator is seeded
    (the same state as ``torch.manual_seed(seed)`` gives it): rerokit builds and initialises modules on
    the CPU, and ``torch.manual_seed`` would also reseed every CUDA generator, which costs ~0.5 ms a
    call on a GPU machine and is not restored by the CPU-only fork.

    Args:
        seed: an integer >= 0, or None (lock only: an unseeded draw, e.g. building a module).

    Returns:
        A context manager.
    """
    with GLOBAL_RNG_LOCK:
        if seed is None:
            yield
            return
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(int(seed))
            yield

ACTIVATIONS = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "sigmoid": nn.Sigmoid}


def make_mlp(in_dim: int, hidden: Sequence[int], out_dim: int, activation: str = "elu", bias: bool = True) -> nn.Sequential:
    """Flatten -> [Linear -> activation] * len(hidden) -> Linear (``make_mlp(64, [10], 10)``: the
    digits analogue of the 784-10-10 ELU MLP of Hayes et al. 2023 App. A and Balle et al. 2022).

    Args:
        in_dim: the flattened input dimension (>= 1).
        hidden: the hidden widths (each >= 1; empty: a linear model).
        out_dim: the number of outputs (>= 1).
        activation: a name of :data:`ACTIVATIONS`.
        bias: give the Linear layers biases.

    Returns:
        The ``nn.Sequential`` (torch's default initialisation under the global RNG, drawn holding
        :data:`GLOBAL_RNG_LOCK`).
    """
    in_dim = check_int("in_dim", in_dim, minimum=1)
    out_dim = check_int("out_dim", out_dim, minimum=1)
    check_choice("activation", activation, tuple(ACTIVATIONS))
    hidden = [check_int(f"hidden[{i}]", h, minimum=1) for i, h in enumerate(hidden)]
    layers: list[nn.Module] = [nn.Flatten()]
    d = in_dim
    with GLOBAL_RNG_LOCK:  # nn.Linear draws its initialisation from torch's global generator
        for h in hidden:
            layers += [nn.Linear(d, h, bias=bias), ACTIVATIONS[activation]()]
            d = h
        layers.append(nn.Linear(d, out_dim, bias=bias))
    return nn.Sequential(*layers)


class SmallCNN(nn.Module):
    """conv(channels->width, 3x3) -> act -> conv(width->2 width, 3x3, stride 2) -> act -> global avg
    pool -> linear: a small CNN for any C x H x W input, without buffers (no BatchNorm).

    Args:
        in_channels: C of the inputs.
        num_classes: the number of outputs.
        activation: a name of :data:`ACTIVATIONS`.
        width: channels of the first convolution (16 by default; the second has twice as many).
    """

    def __init__(self, in_channels: int = 1, num_classes: int = 10, activation: str = "elu", width: int = 16):
        super().__init__()
        check_choice("activation", activation, tuple(ACTIVATIONS))
        act = ACTIVATIONS[activation]
        with GLOBAL_RNG_LOCK:  # the layers draw their initialisation from torch's global generator
            self.features = nn.Sequential(
                nn.Conv2d(in_channels, width, 3, padding=1),
                act(),
                nn.Conv2d(width, 2 * width, 3, stride=2, padding=1),
                act(),
                nn.AdaptiveAvgPool2d(1),
                nn.Flatten(),
            )
            self.head = nn.Linear(2 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The logits.

        Args:
            x: a batch of images, shape (B, C, H, W).

        Returns:
            Logits of shape (B, num_classes).
        """
        return self.head(self.features(x))


class FunctionalModel:
    """A model handled functionally, with its parameters as one flat vector ``theta`` of shape ``(P,)``.

    Built from an ``nn.Module`` (the module's own parameter tensors are never modified by the
    functional methods). Flat vectors make ``vmap`` over trials/models and storing transcripts
    ``theta_1..theta_T`` (shape ``(T, P)``) simple. The layout of ``theta`` is the concatenation
    of ``module.named_parameters()`` in order, each flattened row-major.

    - ``flatten(params) -> (P,)``; ``unflatten(theta) -> {name: view}`` (views into ``theta``).
    - ``init_flat(seed) -> (P,)``: the module's default initialisation (``reset_parameters``)
      drawn under ``torch.manual_seed(seed)`` in a forked RNG (global RNG state untouched), so
      the same seed always gives the same ``theta_0``.
    - ``logits(theta, X) -> (n, classes)`` via ``torch.func.functional_call``.

    Buffers (e.g. BatchNorm running stats) are not supported: per-sample gradients and DP-SGD
    need per-sample independence, so a module with buffers raises ``ValueError``.

    Args:
        module: the ``nn.Module`` (kept, not copied; at least one parameter, no buffers).

    Raises:
        TypeError: if ``module`` is not an ``nn.Module``.
        ValueError: if it has buffers or no parameters.
    """

    def __init__(self, module: nn.Module):
        if not isinstance(module, nn.Module):
            raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
        if any(True for _ in module.buffers()):
            raise ValueError("module must have no buffers (no BatchNorm); per-sample gradients need independent samples")
        named = [(n, p) for n, p in module.named_parameters()]
        if not named:
            raise ValueError("module must have at least one parameter")
        self.module = module
        self.names: list[str] = [n for n, _ in named]
        self.shapes: list[torch.Size] = [p.shape for _, p in named]
        self.numels: list[int] = [p.numel() for _, p in named]
        offs = [0]
        for k in self.numels:
            offs.append(offs[-1] + k)
        self.offsets: list[int] = offs
        self.num_params: int = offs[-1]
        self.dtype: torch.dtype = named[0][1].dtype

    def __repr__(self) -> str:
        return f"FunctionalModel({type(self.module).__name__}, P={self.num_params})"

    def flatten(self, params) -> torch.Tensor:
        """``{name: tensor}`` (or an iterable of ``(name, tensor)``) -> ``(P,)`` in this model's layout.

        Args:
            params: every parameter of the module by name, each of its shape.

        Returns:
            The flat (P,) vector (detached).

        Raises:
            ValueError: if a parameter is missing or has the wrong shape.
        """
        d = dict(params)
        missing = [n for n in self.names if n not in d]
        if missing:
            raise ValueError(f"params is missing parameters {missing}")
        for n, s in zip(self.names, self.shapes):
            if tuple(d[n].shape) != tuple(s):
                raise ValueError(f"params[{n!r}] must have shape {tuple(s)}, got {tuple(d[n].shape)}")
        return torch.cat([d[n].detach().reshape(-1) for n in self.names])

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """``(..., P)`` -> ``{name: (..., *shape)}`` views (differentiable; works under vmap).

        Args:
            theta: flat parameters with last dimension P.

        Returns:
            The parameters by name, views into ``theta``.

        Raises:
            ValueError: if the last dimension is not P.
        """
        if theta.shape[-1] != self.num_params:
            raise ValueError(f"theta must have last dimension P={self.num_params}, got shape {tuple(theta.shape)}")
        lead = theta.shape[:-1]
        return {
            n: theta[..., a:b].reshape(*lead, *s)
            for n, s, a, b in zip(self.names, self.shapes, self.offsets[:-1], self.offsets[1:])
        }

    def current_flat(self) -> torch.Tensor:
        """The module's current parameters as ``(P,)`` (a copy)."""
        return self.flatten(self.module.named_parameters()).clone()

    def init_flat(self, seed: int) -> torch.Tensor:
        """Deterministic ``theta_0`` of shape ``(P,)``: the module's default init under ``manual_seed(seed)``.

        Every submodule's ``reset_parameters`` runs on a copy of the module in a forked RNG (the
        global RNG state is untouched; one seeded initialisation at a time across threads).

        Args:
            seed: an integer in [0, 2^63).

        Returns:
            theta_0, shape (P,).
        """
        return self.init_flat_many([seed])[0]

    def init_flat_many(self, seeds) -> torch.Tensor:
        """``(K, P)``: row k is ``init_flat(seeds[k])``.

        One copy of the module is re-initialised K times under one hold of the lock (a copy and a
        lock per seed cost more than the draws: 4,096 seeds took 6.9 s on a GPU machine, 3.9 s of it
        in ``deepcopy``).

        Args:
            seeds: K seeds, as for :meth:`init_flat`.

        Returns:
            The stacked initialisations, shape (K, P).
        """
        import copy

        seeds = [check_int("seed", s, minimum=0, maximum=2**63 - 1) for s in seeds]
        m = copy.deepcopy(self.module)
        resets = [sub.reset_parameters for sub in m.modules() if callable(getattr(sub, "reset_parameters", None))]
        out = torch.empty((len(seeds), self.num_params), dtype=self.dtype, device=next(m.parameters()).device)
        # torch's global generator is process-wide: one seeded initialisation at a time, and no other
        # rerokit code draws from it meanwhile (blocks may run on several threads,
        # rerokit.executors.LocalExecutor; see GLOBAL_RNG_LOCK)
        with global_rng(0):
            for k, seed in enumerate(seeds):
                torch.default_generator.manual_seed(seed)
                for reset in resets:
                    reset()
                out[k] = self.flatten(m.named_parameters())
        return out

    def load_flat(self, theta: torch.Tensor, module: nn.Module | None = None) -> nn.Module:
        """Copy ``theta`` into ``module``'s parameters in place.

        Args:
            theta: flat parameters, shape (P,).
            module: a module with this model's parameter layout (default: this model's module).

        Returns:
            The module.
        """
        m = self.module if module is None else module
        params = self.unflatten(theta.detach())
        with torch.no_grad():
            for n, p in m.named_parameters():
                p.copy_(params[n])
        return m

    def logits(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        """Model output for inputs ``X`` at flat parameters ``theta``, by ``torch.func.functional_call``.

        Args:
            theta: flat parameters, shape (P,).
            X: a batch of inputs (batch first).

        Returns:
            The module's output, e.g. logits of shape (n, classes).
        """
        return torch.func.functional_call(self.module, self.unflatten(theta), (X,))
