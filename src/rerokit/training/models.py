"""Models used across rerokit's attacks (torch).

``make_mlp(64, [10], 10)`` is the digits analogue of the papers' 784-10-10 ELU MLP
(Hayes et al. 2023 App. A; Balle et al. 2022 Sec. V). Models are plain ``nn.Module``s so that
``torch.func.functional_call`` + ``vmap`` can run many parameter sets at once and Opacus can wrap
them (no BatchNorm; GroupNorm-free small CNN).
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from rerokit._validate import check_choice, check_int

__all__ = ["make_mlp", "SmallCNN", "ACTIVATIONS"]

ACTIVATIONS = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "sigmoid": nn.Sigmoid}


def make_mlp(in_dim: int, hidden: Sequence[int], out_dim: int, activation: str = "elu", bias: bool = True) -> nn.Sequential:
    """Flatten -> [Linear -> activation] * len(hidden) -> Linear."""
    in_dim = check_int("in_dim", in_dim, minimum=1)
    out_dim = check_int("out_dim", out_dim, minimum=1)
    check_choice("activation", activation, tuple(ACTIVATIONS))
    layers: list[nn.Module] = [nn.Flatten()]
    d = in_dim
    for i, h in enumerate(hidden):
        h = check_int(f"hidden[{i}]", h, minimum=1)
        layers += [nn.Linear(d, h, bias=bias), ACTIVATIONS[activation]()]
        d = h
    layers.append(nn.Linear(d, out_dim, bias=bias))
    return nn.Sequential(*layers)


class SmallCNN(nn.Module):
    """conv(channels->16, 3x3) -> act -> conv(16->32, 3x3, stride 2) -> act -> global avg pool -> linear."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, activation: str = "elu", width: int = 16):
        super().__init__()
        check_choice("activation", activation, tuple(ACTIVATIONS))
        act = ACTIVATIONS[activation]
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
        return self.head(self.features(x))
