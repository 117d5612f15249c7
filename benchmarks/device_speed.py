"""Benchmark: the vectorised engines on the CPU and, when there is one, on a CUDA GPU.

Two workloads, each timed on ``cpu`` and ``cuda`` (same seeds; random numbers are drawn on the
CPU on both devices, so the decisions agree up to floating-point rounding - the agreement is
printed):

  * audit: prior-aware audit trials (Hayes et al. 2023 App. A on the digits: MLP 64-10-10,
    |D-| = 999, T = 100, full batch, C = 0.1, prior 10, sigma = 1, alg2), in blocks of
    ``--chunk-size`` trials on the CPU and ``--gpu-chunk-size`` on the GPU (a GPU wants bigger
    blocks);
  * shadow models: RecoNN's non-private shadow models (Balle et al. 2022: |D-| = 500, 100 GD
    steps with momentum, MLP 64-10-10), ``--models`` of them.

Without a CUDA device it prints "no CUDA device" and the CPU figures. The CPU runs use one
thread per block, as every executor does (``torch default threads`` is printed for reference).

    python benchmarks/device_speed.py [--trials 512] [--models 4000] [--chunk-size 64] [--gpu-chunk-size 1024]

Measured 2026-11-26 on one NVIDIA H200 (16 CPU cores, torch 2.11.0+cu130): ``--trials 2048 --models
4000``: audit cpu 162.4 trials/s, cuda 382.8 (2.4x), guesses equal for 100.0% of the trials; shadow
models cpu 102.8 models/s, cuda 31,056 (302x), largest parameter difference 9.54e-07. ``--trials 8192
--gpu-chunk-size 4096 --models 2000``: audit 174.2 vs 409.6 trials/s (2.4x, 100.0% equal); shadow
models 207.0 vs 27,809 models/s (134x; the CPU side ran at load 15-43). After the GPU chunk size
(up to 1,024 trials per engine chunk instead of 64) and the one-copy initialisation: ``--trials 8192
--gpu-chunk-size 4096 --models 1000``: audit 233.5 vs 1,659.9 trials/s (7.1x, 100.0% equal); shadow
models 239.5 vs 20,987 models/s (88x at 1,000 models). On one NVIDIA H100 80GB HBM3 (16 CPU cores,
torch 2.11.0+cu130), main at 260abde, ``--trials 8192 --gpu-chunk-size 4096 --models 4000``: audit
158.3 vs 1,104.1 trials/s (7.0x, 100.0% equal); shadow models 184.8 vs 27,220 models/s (147x,
largest parameter difference 9.54e-07).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from rerokit.experiments.audit import AuditConfig, RunOptions, run_prior_aware_audit


def audit_rate(cfg: AuditConfig, trials: int, chunk: int, device: str, seed: int):
    if device == "cuda":  # CUDA context and kernels loaded before the clock starts
        run_prior_aware_audit(cfg, 2, seed, attacks=("alg2",), options=RunOptions(chunk_size=2, progress=False, device=device))
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    rep = run_prior_aware_audit(cfg, trials, seed, attacks=("alg2",), options=RunOptions(chunk_size=chunk, progress=False, device=device))
    if device == "cuda":
        torch.cuda.synchronize()
    return trials / (time.perf_counter() - t0), [r["guess"]["alg2"] for r in rep.records]


def shadow_rate(models: int, device: str, seed: int):
    from rerokit.attacks.reconn import TABLE_V, ReconData, shadow_targets, split_dataset
    from rerokit.data import load_dataset
    from rerokit.experiments.reconn import default_models_block, train_models_in_blocks

    sp = split_dataset(load_dataset("digits"), 500, 10, seed)
    Xs, ys, _ = shadow_targets(sp.X_pool, sp.y_pool, models, sp.shape, seed)
    block = default_models_block(500, (10,), 10) if device == "cpu" else models
    kw = dict(settings=TABLE_V, init="known", init_seed=seed, seed=seed)
    if device == "cuda":
        train_models_in_blocks(ReconData(sp.X_fixed, sp.y_fixed, Xs[:8], ys[:8]), block_size=8, device=device, **kw)
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    th = train_models_in_blocks(ReconData(sp.X_fixed, sp.y_fixed, Xs, ys), block_size=block, device=device, **kw)
    if device == "cuda":
        torch.cuda.synchronize()
    return models / (time.perf_counter() - t0), th


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=512)
    ap.add_argument("--models", type=int, default=4000)
    ap.add_argument("--chunk-size", type=int, default=64)
    ap.add_argument("--gpu-chunk-size", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    cuda = torch.cuda.is_available()
    gpu = torch.cuda.get_device_name(0) if cuda else "no CUDA device"
    print(f"cpus={os.cpu_count()}, torch default threads={torch.get_num_threads()}, load avg {os.getloadavg()[0]:.2f}; "
          f"GPU: {gpu}; torch {torch.__version__}")
    cfg = AuditConfig(noise_multiplier=1.0)
    cpu_rate, cpu_guess = audit_rate(cfg, a.trials, a.chunk_size, "cpu", a.seed)
    print(f"audit, cpu (1 thread per block, blocks of {a.chunk_size}): {cpu_rate:.2f} trials/s")
    if cuda:
        gpu_rate, gpu_guess = audit_rate(cfg, a.trials, a.gpu_chunk_size, "cuda", a.seed)
        agree = float(np.mean(np.array(gpu_guess) == np.array(cpu_guess)))
        print(f"audit, cuda (blocks of {a.gpu_chunk_size}): {gpu_rate:.2f} trials/s = {gpu_rate / cpu_rate:.1f}x the "
              f"cpu; guesses equal to the cpu's for {agree:.1%} of the trials")
    else:
        print("audit, cuda: no CUDA device")
    cpu_m, th_cpu = shadow_rate(a.models, "cpu", a.seed)
    print(f"shadow models, cpu: {cpu_m:.1f} models/s")
    if cuda:
        gpu_m, th_gpu = shadow_rate(a.models, "cuda", a.seed)
        diff = float((th_gpu - th_cpu).abs().max())
        print(f"shadow models, cuda: {gpu_m:.1f} models/s = {gpu_m / cpu_m:.1f}x the cpu; largest parameter "
              f"difference to the cpu {diff:.2e}")
    else:
        print("shadow models, cuda: no CUDA device")
    print(f"load avg at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
