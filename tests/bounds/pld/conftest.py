"""Fixtures of the PLD engine's tests."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest


@pytest.fixture
def compose_precisions(monkeypatch) -> Callable[[ModuleType], list[str]]:
    """``compose_precisions(module)``: the list of the precision of every ``module.compose`` call
    (pld.tilt, pld.jumps) while the test holds it."""

    def watch(module: ModuleType) -> list[str]:
        seen: list[str] = []
        real = module.compose

        def recording(*args, **kwargs):
            seen.append(kwargs.get("precision", "double"))
            return real(*args, **kwargs)

        monkeypatch.setattr(module, "compose", recording)
        return seen

    return watch
