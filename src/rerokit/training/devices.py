"""Where the vectorised engines run: ``device="cpu"`` (default), ``"cuda"`` or ``"auto"``.

The engines (DP-SGD trials, shadow models, candidate scoring) keep every tensor of a run on one
device: the parameters' device. Random numbers (Poisson masks, Gaussian noise, restarts of the
gradient attack) are always drawn on the CPU from the same seeded generators and then moved, so
a run draws the same random numbers on every device; floating-point results agree across
devices to rounding (different kernels), and bit for bit on the same device and thread count.
"""

from __future__ import annotations

import torch

__all__ = ["DEVICES", "resolve_device"]

DEVICES = ("cpu", "cuda", "auto")


def resolve_device(device: "str | torch.device | None" = "cpu") -> torch.device:
    """The torch device of a ``device`` option.

    Args:
        device: ``"cpu"`` (None too), ``"cuda"`` (the current CUDA device; ``"cuda:N"`` a given
            one), ``"auto"`` (cuda when available, else cpu), or a ``torch.device``.

    Returns:
        The device. Raises ``ValueError`` naming ``device`` for ``cuda`` without a usable GPU.
    """
    if device is None:
        return torch.device("cpu")
    if isinstance(device, torch.device):
        name = device.type if device.index is None else f"{device.type}:{device.index}"
    elif isinstance(device, str):
        name = device.strip().lower()
    else:
        raise TypeError(f"device must be one of cpu, cuda, auto (a string), got {type(device).__name__}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    base, _, index = name.partition(":")
    if base not in ("cpu", "cuda") or (index and (base == "cpu" or not index.isdigit())):
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    if base == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        why = "this torch build has no CUDA support" if torch.version.cuda is None else "no CUDA GPU is visible"
        raise ValueError(f"device {name}: no CUDA device is available ({why}); use device cpu or auto")
    if index and int(index) >= torch.cuda.device_count():
        raise ValueError(f"device {name}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    return torch.device(name)
