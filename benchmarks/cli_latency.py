"""Latency of the commands a user runs first, against ``rerokit bound dpsgd`` in the same run.

Measures (wall clock, best of ``--repeats``, each a fresh process as a user would start it):

* ``rerokit bound dpsgd`` (the baseline: one certified bound),
* ``rerokit calibrate dpsgd`` for the README example (target gamma 0.2, q = 0.01, T = 1000, prior 10),
* ``rerokit audit prior-aware --epsilon 4 ...`` (the README's main job): the time until its first
  visible output (the line saying what it does) and until its first progress update; the run is
  stopped then.
* ``python -c "import rerokit; rerokit.reconstruction_risk(...)"``.

Prints each time and its ratio to the baseline.

    python benchmarks/cli_latency.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

RERO = [sys.executable, "-m", "rerokit.cli"]
BOUND = RERO + ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000",
                "--prior-size", "10", "--json"]
CALIBRATE = RERO + ["calibrate", "dpsgd", "--target-gamma", "0.2", "--sample-rate", "0.01", "--steps", "1000",
                    "--prior-size", "10", "--json"]
AUDIT = RERO + ["audit", "prior-aware", "--dataset", "digits", "--prior-size", "10", "--epsilon", "4", "--steps",
                "100", "--trials", "200", "--seed", "0"]
ENTRY = [sys.executable, "-c", "import rerokit; rerokit.reconstruction_risk(noise_multiplier=1, sample_rate=0.01, "
         "steps=1000, prior=10)"]


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def first_output(cmd: list[str], timeout: float = 120.0) -> tuple[float, float]:
    """Seconds until the first visible byte of output (stdout or stderr) of a fresh process, and
    until the first progress update after it (a carriage return or newline ending non-empty text
    that follows the first line); the process is then stopped."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    first = update = float("nan")
    buf, ends = b"", 0
    try:
        assert p.stdout is not None
        while time.perf_counter() - t0 < timeout:
            ch = p.stdout.read(1)
            if not ch:
                break
            if ch in (b"\n", b"\r"):
                if buf.strip():
                    ends += 1
                    if ends == 2:
                        update = time.perf_counter() - t0
                        break
                buf = b""
            else:
                if not ch.isspace() and first != first:
                    first = time.perf_counter() - t0
                buf += ch
    finally:
        p.kill()
        p.wait()
    return first, update


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    base = min(wall(BOUND) for _ in range(a.repeats))
    cal = min(wall(CALIBRATE) for _ in range(a.repeats))
    entry = min(wall(ENTRY) for _ in range(a.repeats))
    firsts = [first_output(AUDIT) for _ in range(a.repeats)]
    first = min(f[0] for f in firsts)
    progress = min(f[1] for f in firsts)
    print(f"load average {os.getloadavg()[0]:.2f}; best of {a.repeats} fresh processes")
    print(f"{'command':58s} {'seconds':>8s} {'x bound':>8s}")
    for name, t in [("rerokit bound dpsgd (baseline)", base), ("rerokit calibrate dpsgd (README example)", cal),
                    ("import rerokit; reconstruction_risk(...)", entry),
                    ("audit prior-aware --epsilon 4: first output", first),
                    ("audit prior-aware --epsilon 4: first progress update", progress)]:
        print(f"{name:58s} {t:8.3f} {t / base:8.2f}")


if __name__ == "__main__":
    main()
