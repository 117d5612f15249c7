"""Per-trial seeds of a run: the one derivation used by the runs that write them and the readers
that check them (torch-free)."""

from __future__ import annotations

from rerokit._validate import check_int

__all__ = ["trial_seeds"]


def trial_seeds(seed: int, K: int) -> list[int]:
    """Per-trial seeds ``[s_0..s_{K-1}]`` (63-bit) derived from ``seed``; s_k depends only on (seed, k).

    Args:
        seed: the run's seed (>= 0).
        K: the number of trials (>= 1).

    Returns:
        K ints, the first 63 bits of ``numpy.random.SeedSequence(seed).generate_state(K)`` (a prefix
        of a longer run's seeds: ``generate_state`` is prefix-stable).
    """
    import numpy as np

    seed = check_int("seed", seed, minimum=0)
    K = check_int("K", K, minimum=1)
    st = np.random.SeedSequence(seed).generate_state(K, np.uint64) >> np.uint64(1)
    return [int(s) for s in st]
