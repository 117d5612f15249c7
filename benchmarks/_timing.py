"""Timing helper shared by the benchmarks (run as scripts: ``python benchmarks/<name>.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Sequence


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """(the fastest of ``repeats`` wall-clock runs of ``fn()`` in seconds, the last result)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def json_in_fresh_process(code: str, args: Sequence[str], timeout: float) -> dict | None:
    """Run ``python -c code *args`` in a fresh process (this one's sys.path) and read the JSON of its
    last line of output; None if it ran past ``timeout`` seconds or failed (for old, slow paths)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        out = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True,
                             text=True, timeout=timeout, check=True)
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])
