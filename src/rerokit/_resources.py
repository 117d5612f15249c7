"""Memory estimates checked before a command allocates (one place for every command).

A size option (rows of a layer, trials x steps x parameters, shadow models, samples) can ask for
more memory than the machine has; allocating it fails late with a ``RuntimeError`` or the kernel's
OOM killer. Commands compute the bytes they will hold at once and call :func:`check_memory`
first, which raises one ``ValueError`` naming the option, the estimate and the limit.

The limit is the physical memory of the machine (``os.sysconf``), or the cgroup memory limit
when one is set and smaller (containers). Only the standard library is imported here.
"""

from __future__ import annotations

import math
import os
from typing import Iterable

__all__ = [
    "memory_limit",
    "check_memory",
    "format_bytes",
    "mlp_num_params",
    "analytic_attack_bytes",
    "kappa_samples_bytes",
    "dpsgd_trials_bytes",
    "trial_records_bytes",
    "reconn_bytes",
    "release_mixture_bytes",
    "dpsgd_fil_bytes",
    "dpsgd_accounting_bytes",
    "check_dpsgd_accounting",
    "group_step_pld_bytes",
]


def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            v = int(text)
            if 0 < v < 1 << 60:  # "max" or a huge sentinel means no limit
                return v
    return None


def memory_limit() -> int:
    """Bytes of memory a command may plan to use: physical memory, or a smaller cgroup limit or
    address-space limit (``ulimit -v``)."""
    try:
        phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not a POSIX system
        phys = 0
    if phys <= 0:  # pragma: no cover
        try:
            import psutil  # type: ignore[import-not-found]

            phys = int(psutil.virtual_memory().total)
        except Exception:  # noqa: BLE001 - no way to know: do not refuse anything
            return 1 << 62
    cg = _cgroup_limit()
    limit = min(phys, cg) if cg else phys
    try:  # an address-space limit (ulimit -v) is a hard cap too
        import resource

        for which in (resource.RLIMIT_AS, getattr(resource, "RLIMIT_DATA", resource.RLIMIT_AS)):
            soft = resource.getrlimit(which)[0]
            if 0 < soft != resource.RLIM_INFINITY:
                limit = min(limit, soft)
    except (ImportError, ValueError, OSError):  # pragma: no cover - not a POSIX system
        pass
    return limit


def format_bytes(n: float) -> str:
    """``1.5 GB``-style text (decimal units) of a byte count.

    Args:
      n: the byte count (inf/nan allowed).

    Returns:
      The text, e.g. ``"1.5 GB"`` or ``"512 bytes"``; ``"an unbounded amount"`` if ``n`` is not finite.
    """
    if not math.isfinite(n):
        return "an unbounded amount"
    for unit, size in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def check_memory(option: str, nbytes: float, what: str, *, hint: str | None = None) -> None:
    """Raise ``ValueError`` when ``nbytes`` exceeds :func:`memory_limit`.

    ``nbytes`` is the estimate of what the command holds at once.

    Args:
      option: the option to make smaller (e.g. ``--rows``), named in the message.
      nbytes: the estimated bytes held at once.
      what: what needs the memory, for the message.
      hint: how to fix it; None (default) says to use a smaller ``option``.

    Raises:
      ValueError: if ``nbytes`` exceeds the memory limit; the message names the option, the
        estimate and the limit.
    """
    limit = memory_limit()
    if nbytes > limit:
        fix = hint or f"use a smaller {option}"
        raise ValueError(f"{option}: {what} needs about {format_bytes(nbytes)} of memory, more than the "
                         f"{format_bytes(limit)} of this machine; {fix}")


def mlp_num_params(sizes: Iterable[int]) -> int:
    """Parameters of a fully connected network with layer widths ``sizes``, each layer with a bias.

    sum (a + 1) b over consecutive widths (a, b).

    Args:
      sizes: layer widths (input, hidden..., output), integers.

    Returns:
      The number of parameters (0 for fewer than two widths).
    """
    s = [int(x) for x in sizes]
    return sum((a + 1) * b for a, b in zip(s[:-1], s[1:]))


# --------------------------------------------------------------------------- estimates per workload
# Each returns the bytes held at once (the largest arrays, a small constant factor for temporaries).


def analytic_attack_bytes(rows: int, dim: int, targets: int, backend: str, *, chunk: int = 100) -> float:
    """Memory estimate of the analytic attack: copies of its layer W (rows x dim, float64) and the targets' arrays.

    Opacus keeps about 8 copies of W (weight, its clone, per-sample grad, grad, noise, released copy,
    estimate); vmap about 5 per target of a chunk of <= ``chunk`` targets (per-sample grads, noise,
    released gradient, estimate) plus 2; and about 12 arrays of the targets' size (the data,
    reconstructions, metrics and their temporaries).

    Args:
      rows: M, the rows of the attacker's layer.
      dim: N, the dimension of a target.
      targets: number of targets attacked.
      backend: "opacus" or anything else for the vmap backend.
      chunk: targets per vmap chunk (default 100).

    Returns:
      The estimated bytes held at once (a float).
    """
    layer = 8.0 * rows * dim
    data = 12 * 8.0 * targets * dim
    if backend == "opacus":
        return 8 * layer + data
    return (5 * min(chunk, targets) + 2) * layer + data


def kappa_samples_bytes(n: int, dim: int, metric: str, itemsize: int = 8) -> float:
    """Memory estimate of :func:`rerokit.bounds.priors.kappa_from_samples` on ``n`` samples of ``dim`` values.

    Args:
      n: number of samples.
      dim: values per (flattened) sample.
      metric: "exact", "l2", or another distance ("linf"/"l1").
      itemsize: bytes per value of the samples (default 8; used for "exact").

    Returns:
      The estimated bytes held at once (a float).
    """
    if metric == "exact":
        return 4.0 * n * dim * itemsize  # np.unique over rows: sorted copies and an index
    if metric == "l2":
        return 8.0 * (n * dim + 4 * min(512, n) * n)  # float copy + (512, n) distance block, its masks
    block = max(1, min(512, 16_000_000 // max(1, n * dim)))
    return 8.0 * (n * dim + 3 * block * n * dim)  # (block, n, dim) differences


def dpsgd_trials_bytes(chunk: int, steps: int, params: int, n_train: int, dim: int, *, itemsize: int = 4,
                       full: bool = False) -> float:
    """Memory estimate of one chunk of DP-SGD trials recorded by :func:`rerokit.training.train_dpsgd_many`.

    The transcript (thetas and g-bar, plus noisy sums when ``full``: chunk x steps x params), the
    batch masks (chunk x steps x n_train), a noise block (chunk x 64 x params), the training sets
    (chunk x n_train x dim) and the candidate statistics' working set (2^24 gradient entries).

    Args:
      chunk: trials run at once.
      steps: DP-SGD steps per trial.
      params: model parameters.
      n_train: training-set size.
      dim: input dimension.
      itemsize: bytes per transcript value (default 4, float32).
      full: also record the noisy sums (default False).

    Returns:
      The estimated bytes held at once (a float).
    """
    per = (3 if full else 2) * steps * params * itemsize + steps * n_train + 64 * params * itemsize
    per += n_train * dim * 8 + 8 * params * itemsize
    return float(chunk) * per + 4.0 * (1 << 24) * itemsize


def trial_records_bytes(trials: int) -> float:
    """Bookkeeping of a run of ``trials`` trials.

    Seeds, the list of trials to do and one result record (a small dict, about 1.5 kB in Python)
    per trial kept for the summary.

    Args:
      trials: number of trials.

    Returns:
      The estimated bytes (1600 per trial).
    """
    return 1600.0 * trials


def reconn_bytes(dim: int, classes: int, hidden, reconstructor_hidden, shadow_models: int, targets: int) -> float:
    """Memory estimate of RecoNN: every shadow and released model, their targets, and the reconstructor.

    The parameters of every shadow and released model (float32, with the momentum and the final
    copy), their targets, and the reconstructor (params -> hidden... -> dim) with Adam.

    Args:
      dim: input dimension.
      classes: number of classes (output width of the models).
      hidden: hidden widths of the shadow/released models.
      reconstructor_hidden: hidden widths of the reconstructor.
      shadow_models: number of shadow models.
      targets: number of released (target) models.

    Returns:
      The estimated bytes held at once (a float).
    """
    P = mlp_num_params([dim, *hidden, classes])
    models = shadow_models + targets
    recon = mlp_num_params([P, *reconstructor_hidden, dim])
    return 4.0 * (4 * models * P + 2 * models * dim + 4 * recon)


def release_mixture_bytes(steps: int, sampling_rate: float) -> float:
    """Memory estimate of :func:`rerokit.bounds.uninformed.mse_rero_over_steps`.

    Arrays over the central range of Binomial(T, q) holding all but 1e-15 of its mass (about 2 x 9
    standard deviations wide).

    Args:
      steps: T, the number of steps.
      sampling_rate: q in (0, 1].

    Returns:
      The estimated bytes held at once (a float).
    """
    width = min(float(steps) + 1.0, 18.0 * math.sqrt(steps * sampling_rate * (1.0 - sampling_rate)) + 3.0)
    return 8.0 * 8 * width


def dpsgd_fil_bytes(n: int, params: int, *, chunk: int = 512) -> float:
    """Memory estimate of DP-SGD with FIL accounting (:func:`rerokit.training.fil.dpsgd_fil`).

    The model, the dataset's per-sample clipped gradients of a chunk of <= ``chunk`` samples
    (float32) and their sum.

    Args:
      n: number of training samples.
      params: model parameters.
      chunk: samples per chunk of per-sample gradients (default 512).

    Returns:
      The estimated bytes held at once (a float).
    """
    return 4.0 * (8 * params + 3 * min(n, chunk) * params)


# Peak memory of the privacy-loss-distribution accounting of DP-SGD (bound dpsgd / tradeoff / the
# report's membership numbers). Its arrays span the Chernoff windows of the composed losses, whose
# width grows like the standard deviation of the composed loss: sqrt(U), U = T * min(1, q^2 (e^{1/sigma^2}
# - 1)) summed over segments, until the window reaches its size limit (compose.MAX_FFT points; the grid is
# then coarsened), which bounds the peak for every schedule. Measured (peak RSS of `bound dpsgd --prior-size
# 10`, bounds.pld engine, 2026-11-25), sqrt(U) -> MB: 533 -> 221 (sigma 2, q 0.1, T 1e8), 656 -> 212 (1, 0.5,
# 1e6), 1000 -> 435 (0.5, 0.5, 1e6), 2074 -> 592 (1, 0.5, 1e7), 3162 -> 1209 (0.7, 0.9, 1e7), 6557 -> 1578
# (1, 0.5, 1e8); 1258 at T = 1e9 (coarsened grid). The estimate base + per-sqrt-unit is above every one
# (by 8 % at the tightest); the cap is 1.6x the largest peak measured.
_PLD_BASE_BYTES = 100e6
_PLD_BYTES_PER_SQRT_UNIT = 0.4e6
_PLD_MAX_BYTES = 2.5e9


def dpsgd_accounting_bytes(segments: Iterable[tuple[float, float, int]]) -> float:
    """Memory estimate of the PLD accounting of a DP-SGD schedule.

    Args:
      segments: (noise multiplier sigma, sampling rate q, steps T) of each constant part.

    Returns:
      The estimated peak bytes: a base plus ``_PLD_BYTES_PER_SQRT_UNIT`` per square root of the
      units sum T min(1, q^2 (e^{1/sigma^2} - 1)), at most ``_PLD_MAX_BYTES`` (a float; inf-safe).
    """
    units = 0.0
    for sigma, q, steps in segments:
        sigma, q = float(sigma), float(q)
        inv = 1.0 / sigma if sigma > 0 else math.inf  # no sigma**2: it overflows at 1e300 and underflows at 1e-300
        growth = 1.0 if inv > 26.0 else min(1.0, q * q * math.expm1(inv * inv))
        units += float(steps) * growth
    return min(_PLD_MAX_BYTES, _PLD_BASE_BYTES + _PLD_BYTES_PER_SQRT_UNIT * math.sqrt(units))


def check_dpsgd_accounting(segments: Iterable[tuple[float, float, int]], option: str = "--steps") -> None:
    """Refuse a schedule whose PLD accounting would not fit in memory (before it is computed).

    Args:
      segments: (sigma, q, T) of each constant part of the schedule.
      option: the option to name (default ``--steps``).

    Raises:
      ValueError: naming ``option``, the estimate and the limit (:func:`check_memory`).
    """
    segs = [tuple(s) for s in segments]
    total = sum(int(s[2]) for s in segs)
    fix = (f"use fewer {option} or a larger noise multiplier" if option == "--steps" else
           f"give {option} a schedule with fewer steps or larger noise multipliers")
    check_memory(option, dpsgd_accounting_bytes(segs), f"the privacy-loss distribution of {total} DP-SGD steps",
                 hint=fix)


def group_step_pld_bytes(group_size: int) -> float:
    """Memory estimate of one DP-SGD step's PLD for a group of k examples that move together.

    The step's loss is a Binomial(k, q) mixture evaluated at every point of its grid (at most
    ``bounds.pld.step.MAX_STEP_WIDTH`` = 2e5 points): (k + 1) x 2e5 float64 arrays, about four at
    once. Measured: k = 100, 0.52 GB peak (estimate 0.75 GB); k = 1e6 asked numpy for 1.46 TiB.

    Args:
      group_size: k >= 1 (an int of any size).

    Returns:
      The estimated peak bytes (a float).
    """
    k = float(min(int(group_size), 10**18))
    return _PLD_BASE_BYTES + 4 * 8.0 * (k + 1.0) * 200_000
