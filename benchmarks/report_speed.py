"""Wall time of ``rerokit report`` against ``rerokit bound dpsgd``, measured in the same run.

Each command runs as a fresh process (what a user waits for: interpreter start, imports,
computation, printing), ``--repeats`` times interleaved; the best and the median wall time of
each are printed with their ratio. Cases:

* ``bound dpsgd``: ``rerokit bound dpsgd --noise-multiplier 1 --sample-rate 0.01 --steps 1000
  --prior-size 10`` (the baseline);
* ``report (settings only)``: ``rerokit report --noise-multiplier 1 --sample-rate 0.01 --steps
  1000`` (level, informed priors 2/10/100, membership, epsilon, mu; no torch, no scipy.stats, no
  matplotlib; the target is under 1 s);
* ``report (+ data)``: adds ``--data-shape 1x28x28 --clip 1`` (pixel prior, uninformed bounds,
  their over-steps binomial through scipy.special);
* ``report --what-if``: settings only plus the six calibrations of "what would change it";
* ``report --html``: settings + data with the HTML card (matplotlib, 25 points over steps).

    python benchmarks/report_speed.py [--repeats 5] [--no-html]

Timings on a shared machine are noisy: the load average is printed; compare the ratio.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

SETTINGS = ["--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000"]


def wall(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of one fresh ``rerokit`` process."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "rerokit.cli", *argv], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {r.stderr.strip()}")
    return dt, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-html", action="store_true", help="skip the --html case")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rerokit-report-speed-")
    cases = {
        "bound dpsgd": ["bound", "dpsgd", *SETTINGS, "--prior-size", "10"],
        "report (settings only)": ["report", *SETTINGS],
        "report (+ data)": ["report", *SETTINGS, "--data-shape", "1x28x28", "--clip", "1"],
        "report --what-if": ["report", *SETTINGS, "--what-if"],
    }
    if not args.no_html:
        cases["report --html"] = ["report", *SETTINGS, "--data-shape", "1x28x28", "--clip", "1", "--html",
                                  os.path.join(tmp, "card.html")]
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; load average {os.getloadavg()}")
    wall(cases["bound dpsgd"])  # warm the file cache
    times: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.repeats):
        for k, argv in cases.items():
            w, c = wall(argv)
            times[k].append(w)
            cpu[k].append(c)
    base_best = min(times["bound dpsgd"])
    base_med = statistics.median(times["bound dpsgd"])
    print(f"{'command':<26} {'best':>8} {'median':>8} {'CPU':>7}   wall ratio to bound dpsgd (best / median)")
    for k, ts in times.items():
        b, m = min(ts), statistics.median(ts)
        print(f"{k:<26} {b:7.2f}s {m:7.2f}s {min(cpu[k]):6.2f}s   {b / base_best:5.1f}x / {m / base_med:5.1f}x")
    ok = min(times["report (settings only)"]) < 1.0
    print(f"settings-only report under 1 s: {ok} (best of {args.repeats}); load average {os.getloadavg()}")
    print("CPU = user + system seconds of the process (less sensitive to other load than wall time)")


if __name__ == "__main__":
    main()
