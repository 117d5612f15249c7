"""Timing helper shared by the benchmarks (run as scripts: ``python benchmarks/<name>.py``)."""

from __future__ import annotations

import time
from typing import Any, Callable


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """(the fastest of ``repeats`` wall-clock runs of ``fn()`` in seconds, the last result)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out
