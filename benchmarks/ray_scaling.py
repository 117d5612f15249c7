"""Benchmark: the same prior-aware audit on the local executor and on 1 and 2 local Ray workers.

Setting: Hayes et al. 2023 App. A on the digits (MLP 64-10-10 ELU, |D-| = 999, T = 100, full
batch, C = 0.1, prior size 10, sigma = 1), attack alg2, blocks of ``--chunk-size`` trials (64).
Every block runs with ONE torch thread in every executor (that is what makes the records equal
bit for bit, checked here), so 2 workers use 2 cores.

Rows (each a fresh run of ``--trials`` trials, same seed):
  * local: the local executor, blocks one after another (1 worker, 1 thread per block);
  * local, 2 workers: the local executor running 2 blocks at a time on threads (the default of
    `--executor local` on a 2-core machine), 1 thread per block;
  * local, torch default threads: the old behaviour (process thread count, usually = cores), on
    ``--threads-trials`` trials - what fixing one thread per block costs (or saves) locally;
  * ray, 1 worker / ray, 2 workers: a local Ray cluster of 1 / 2 CPUs started for the row.
For Ray rows, ``startup`` is the first call (cluster start, worker processes, imports, one block
of 1 trial per worker) and ``trials/s`` the following timed run on the warm workers; ``cold
trials/s`` counts the startup too (what a single command line sees). The small-run overhead is
the startup plus one block: the time a ``--trials 64`` run pays for Ray.

Prints seconds, trials/s, the ratios (2 workers / 1 worker, 2 workers / local) and the load
average before and after each row. On a shared machine other jobs take cores: run it when
``uptime`` shows a load well below the number of cores.

    python benchmarks/ray_scaling.py [--trials 8192] [--threads-trials 512] [--chunk-size 64]

Measured (2 shared cores, 8192 trials per row, 2026-11-23, two runs): local 1 worker 70.5 / 72.9
trials/s, local 2 workers (threads) 119.8 / 125.6 (1.70x / 1.72x); ray 1 worker 78.1 / 67.6, ray 2
workers 123.0 / 120.6 (1.58x / 1.78x; startup 3.7-4.7 s); torch's default 2 threads 143.9 (512
trials) / 137.3 (2048 trials). An earlier run at load 1.0-1.8: local 52.9, ray 1 worker 56.2, ray 2
workers 107.2 (1.91x). Records identical in all rows. On the same machine at load ~2.2 (another job
busy on a core) torch's 2 threads fell to 2.3 trials/s against 50 with one thread per block.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from rerokit.executors import LocalExecutor, RayExecutor
from rerokit.experiments.audit import AuditConfig, RunOptions, run_prior_aware_audit


def _load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def _run(cfg, trials, chunk, ex, seed):
    t0 = time.perf_counter()
    rep = run_prior_aware_audit(cfg, trials, seed, attacks=("alg2",), options=RunOptions(chunk_size=chunk, progress=False, executor=ex))
    return time.perf_counter() - t0, rep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=8192, help="trials of each timed run (default 8192)")
    ap.add_argument("--threads-trials", type=int, default=512,
                    help="trials of the 'torch default threads' row (default 512; 0 skips it)")
    ap.add_argument("--chunk-size", type=int, default=64, help="block size (default 64)")
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    cfg = AuditConfig(noise_multiplier=a.sigma)
    print(f"setting: digits MLP 64-10-10 ELU, |D-|={cfg.n_known}, T={cfg.steps}, q={cfg.sample_rate}, C={cfg.clip}, "
          f"N={cfg.prior_size}, sigma={a.sigma}, alg2, blocks of {a.chunk_size}; cpus={os.cpu_count()}, "
          f"torch default threads={torch.get_num_threads()}, torch {torch.__version__}")
    rows = {}

    print(f"\n[local] load before {_load()}", flush=True)
    dt, ref = _run(cfg, a.trials, a.chunk_size, LocalExecutor(threads=1), a.seed)
    rows["local"] = a.trials / dt
    print(f"local (1 thread per block): {a.trials} trials in {dt:.1f} s = {rows['local']:.2f} trials/s; "
          f"load after {_load()}", flush=True)

    print(f"\n[local, 2 workers] load before {_load()}", flush=True)
    dt, rep = _run(cfg, a.trials, a.chunk_size, LocalExecutor(threads=1, workers=2), a.seed)
    rows["local2"] = a.trials / dt
    print(f"local, 2 workers (threads): {a.trials} trials in {dt:.1f} s = {rows['local2']:.2f} trials/s; records "
          f"identical to 1 worker: {rep.records == ref.records}; load after {_load()}", flush=True)
    if rep.records != ref.records:
        raise SystemExit("records differ between 1 and 2 local workers")

    if a.threads_trials > 0:
        print(f"\n[local, torch default threads] load before {_load()}", flush=True)
        dt, rep = _run(cfg, a.threads_trials, a.chunk_size, LocalExecutor(threads=None), a.seed)
        rows["local_default_threads"] = a.threads_trials / dt
        same = [r["guess"] for r in rep.records] == [r["guess"] for r in ref.records[: a.threads_trials]]
        print(f"local ({torch.get_num_threads()} threads, the process default): {a.threads_trials} trials in {dt:.1f} s"
              f" = {rows['local_default_threads']:.2f} trials/s (guesses equal to the 1-thread run: {same}); "
              f"load after {_load()}", flush=True)

    for n in (1, 2):
        print(f"\n[ray, {n} worker(s)] load before {_load()}", flush=True)
        with RayExecutor(workers=n) as ex:
            t0 = time.perf_counter()
            run_prior_aware_audit(cfg, n, a.seed, attacks=("alg2",), options=RunOptions(chunk_size=1, progress=False, executor=ex))
            startup = time.perf_counter() - t0
            dt, rep = _run(cfg, a.trials, a.chunk_size, ex, a.seed)
        same = rep.records == ref.records
        rows[f"ray{n}"] = a.trials / dt
        rows[f"ray{n}_cold"] = a.trials / (dt + startup)
        rows[f"ray{n}_startup"] = startup
        print(f"ray, {n} worker(s): startup {startup:.1f} s; {a.trials} trials in {dt:.1f} s = {rows[f'ray{n}']:.2f} "
              f"trials/s warm, {rows[f'ray{n}_cold']:.2f} trials/s with the startup; records identical to local: "
              f"{same}; load after {_load()}", flush=True)
        if not same:
            raise SystemExit("records differ from the local run")

    block_s = a.chunk_size / rows["local"]
    r = rows["ray2"] / rows["local"]  # speed-up of 2 warm workers over local
    breakeven = rows["ray2_startup"] * r / (r - 1) if r > 1 else float("inf")
    print("\nsummary (trials/s)")
    print(f"  local, 1 thread per block   {rows['local']:8.2f}")
    print(f"  local, 2 workers            {rows['local2']:8.2f}   (vs 1 worker {rows['local2'] / rows['local']:.2f}x)")
    if "local_default_threads" in rows:
        print(f"  local, torch default threads {rows['local_default_threads']:7.2f}   "
              f"(1 thread / default = {rows['local'] / rows['local_default_threads']:.2f}x)")
    print(f"  ray, 1 worker               {rows['ray1']:8.2f}   (vs local {rows['ray1'] / rows['local']:.2f}x)")
    print(f"  ray, 2 workers              {rows['ray2']:8.2f}   (vs 1 worker {rows['ray2'] / rows['ray1']:.2f}x, "
          f"vs local {rows['ray2'] / rows['local']:.2f}x)")
    print(f"  with the startup: 1 worker {rows['ray1_cold']:.2f}, 2 workers {rows['ray2_cold']:.2f} "
          f"(2 vs 1: {rows['ray2_cold'] / rows['ray1_cold']:.2f}x)")
    print(f"Ray overhead for a small run: startup {rows['ray1_startup']:.1f} s (1 worker) / {rows['ray2_startup']:.1f} s "
          f"(2 workers) against {block_s:.1f} s for one block of {a.chunk_size} trials locally; with 2 workers "
          f"Ray pays off once the run takes more than ~{breakeven:.0f} s locally (startup x r / (r - 1), r = "
          f"{r:.2f}); on one machine the local executor's 2 workers give "
          f"{rows['local2'] / rows['ray2']:.2f}x Ray's 2 workers without the startup: Ray is for more machines")


if __name__ == "__main__":
    main()
