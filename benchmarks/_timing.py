"""Timing helper shared by the benchmarks (run as scripts: ``python benchmarks/<name>.py``)."""

from __future__ import annotations

import json
import math
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


def riskcal_cell(sigma: float, q: float, T: int, kappa: float, repeats: int, get_beta_for_dpsgd: Callable,
                 extra: dict | None = None, out: str | None = None) -> dict:
    """One cell against riskcal in the same run: the best of ``repeats`` wall times of rerokit's full
    certified bracket (``rero_dpsgd(..., comparisons=False)``) and of riskcal's ``get_beta_for_dpsgd``,
    their ratio (riskcal / rerokit), rerokit's relative width and riskcal's gamma (not a bound),
    printed and appended to ``out`` as one JSON line (``extra`` first, e.g. the seed)."""
    from rerokit.bounds.dpsgd import rero_dpsgd

    t_r, b = best_time(lambda: rero_dpsgd(sigma, q, T, kappa, comparisons=False), repeats)
    t_c, beta = best_time(lambda: get_beta_for_dpsgd(sigma, q, T, kappa), repeats)
    width = (b.value - b.interval[0]) / b.value
    row = dict(extra or {})
    row.update({"sigma": sigma, "q": q, "T": T, "kappa": kappa, "rerokit_s": t_r, "riskcal_s": t_c,
                "ratio": t_c / t_r, "lower": b.interval[0], "upper": b.value, "rel_width": width,
                "riskcal_gamma": 1.0 - float(beta), "time": time.strftime("%Y-%m-%dT%H:%M:%S")})
    print(f"  sigma={sigma} q={q} T={T:>7} kappa={kappa:.3g}: rerokit {t_r * 1e3:7.1f} ms, riskcal "
          f"{t_c * 1e3:7.1f} ms (x{t_c / t_r:.2f}), width {width:.1e}", flush=True)
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")
    return row


def riskcal_summary(rows: Sequence[dict]) -> None:
    """The geometric mean of riskcal / rerokit over :func:`riskcal_cell` rows, the widest bracket, and
    the cells where rerokit is slower, slowest first."""
    gm = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    slower = sorted((r for r in rows if r["ratio"] < 1.0), key=lambda r: r["ratio"])
    print(f"\ngeometric mean riskcal/rerokit x{gm:.2f}; rerokit slower in {len(slower)} of {len(rows)} cells; "
          f"widest bracket {max(r['rel_width'] for r in rows):.1e}")
    for r in slower:
        print(f"  sigma={r['sigma']} q={r['q']} T={r['T']} kappa={r['kappa']:.3g}: x{r['ratio']:.2f} "
              f"({r['rerokit_s'] * 1e3:.1f} ms against {r['riskcal_s'] * 1e3:.1f} ms)")
