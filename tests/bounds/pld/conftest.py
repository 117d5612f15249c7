"""Fixtures of the PLD engine's tests."""

from __future__ import annotations

from types import ModuleType
from typing import Callable, NamedTuple

import pytest

from rerokit.bounds.pld import builder


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


class Tilt(NamedTuple):
    """One far-tail tilt run (builder.SchedulePLD._tail_power_from): its grid step, that step over
    the calling schedule's, and its truncation's depth below the level (log tau - log alpha)."""

    h: float
    ratio: float
    depth: float


@pytest.fixture
def tilts(monkeypatch) -> list[Tilt]:
    """Every far-tail tilt run while the test holds this list (monkeypatch.undo() stops recording)."""
    seen: list[Tilt] = []
    orig = builder.SchedulePLD._tail_power_from

    def spy(self, src, log_alpha):
        seen.append(Tilt(src.h, src.h / self.h, src.log_tau - log_alpha))
        return orig(self, src, log_alpha)

    monkeypatch.setattr(builder.SchedulePLD, "_tail_power_from", spy)
    return seen
