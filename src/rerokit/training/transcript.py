"""What the informed adversary sees of a DP-SGD run (Hayes et al. 2023, Sec. 2 / Eq. (1), Alg. 2-3).

The informed adversary knows every training point but the target z* (the set D-), the
parameters ``theta_t`` at which step t's gradients were computed, and the privatized gradient
sum ``noisy_sum_t = sum_{i in B_t} clip_C(g_i(theta_t)) + N(0, sigma^2 C^2 I)``. It subtracts the
clipped gradients of the KNOWN points in the batch::

    gbar_t = noisy_sum_t - sum_{i in B_t, i != target} clip_C(g_i(theta_t))
           = 1[target in B_t] clip_C(g_target(theta_t)) + noise_t.

Batch: Hayes et al.'s threat model gives the adversary the sampled batch ``B_t`` (for q = 1 it
is the whole dataset; for Poisson sampling q < 1 a real adversary would not know which points
of D- were sampled, but the threat model, and this transcript, record the true batch and compute
``gbar_t`` with it). ``batch_masks[t, i]`` is True iff point i was in ``B_t``; whether the target
was sampled at step t is ``batch_masks[t, target_index]`` (known to the *recorder*, which tests and
the "top-qT" attack analysis may use; an attack that should not know it must ignore it).

With ``target_index=None`` every point is treated as known, so ``gbar_t`` is exactly the noise.

Shapes (single run; a batched transcript from ``train_dpsgd_many`` has a leading K):
``thetas (T, P)``, ``noisy_sums (T, P)``, ``gbar (T, P)``, ``batch_masks (T, n) bool``,
``final_theta (P,)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch

__all__ = ["Transcript"]


@dataclass
class Transcript:
    """Per-step record of a DP-SGD run (see module docstring); leading K dim if ``batched``.

    ``noisy_sums`` is None in ``record="gbar_only"`` mode (it equals ``gbar`` plus the known
    clipped sum, which the adversary can recompute from D- and ``thetas``).
    ``settings`` holds noise_multiplier, clip, steps, lr, sample_rate, momentum,
    expected_batch_size (= sample_rate * n, the divisor of the update), n, P, record.
    ``seed``: the run's seed (int) or, batched, the per-trial seeds (list of K ints).
    """

    thetas: torch.Tensor
    gbar: torch.Tensor
    batch_masks: torch.Tensor
    final_theta: torch.Tensor
    noisy_sums: torch.Tensor | None = None
    target_index: Any = None
    settings: dict = field(default_factory=dict)
    seed: Any = None
    batched: bool = False

    @property
    def steps(self) -> int:
        """Number of recorded steps T."""
        return int(self.thetas.shape[-2])

    @property
    def num_trials(self) -> int:
        """Number of trials K of a batched transcript.

        Raises:
          ValueError: if the transcript is not batched.
        """
        if not self.batched:
            raise ValueError("transcript is not batched (num_trials is only defined for train_dpsgd_many outputs)")
        return int(self.thetas.shape[0])

    def __len__(self) -> int:
        return self.num_trials if self.batched else self.steps

    def trial(self, k: int) -> "Transcript":
        """The single-run transcript of trial ``k`` of a batched transcript.

        Args:
          k: the trial index, an integer in [-K, K) (negative counts from the end).

        Returns:
          A non-batched :class:`Transcript` (tensor views; ``settings`` copied; its own target index
          and seed).

        Raises:
          ValueError: if the transcript is not batched, or ``k`` is out of range.
        """
        if not self.batched:
            raise ValueError("trial(k) needs a batched transcript")
        K = self.num_trials
        if not (-K <= int(k) < K):
            raise ValueError(f"k must be an integer in [0, {K - 1}], got {k}")
        k = int(k)
        ti = self.target_index
        if ti is not None:
            ti = int(ti[k])
        return Transcript(
            thetas=self.thetas[k],
            gbar=self.gbar[k],
            batch_masks=self.batch_masks[k],
            final_theta=self.final_theta[k],
            noisy_sums=None if self.noisy_sums is None else self.noisy_sums[k],
            target_index=ti,
            settings=dict(self.settings),
            seed=None if self.seed is None else int(self.seed[k]),
            batched=False,
        )

    def target_in_batch(self) -> torch.Tensor:
        """``(T,)`` (or ``(K, T)``) bool: was the target sampled at step t."""
        if self.target_index is None:
            raise ValueError("target_index is None: every point is known, there is no target")
        if self.batched:
            idx = torch.as_tensor(self.target_index, dtype=torch.long)
            return self.batch_masks[torch.arange(idx.shape[0]), :, idx]
        return self.batch_masks[:, int(self.target_index)]

    def dp_history(self) -> list[tuple[float, float, int]]:
        """``[(noise_multiplier, sample_rate, steps)]`` in Opacus' ``accountant.history`` format.

        The recorded Opacus accountant history when the run came from
        :func:`rerokit.training.opacus_adapter.record_opacus_transcript`, else built from the
        settings (one homogeneous segment). Input of
        ``rerokit.accounting.events.segments_from_opacus_history``.
        """
        if "accountant_history" in self.settings:
            return [tuple(h) for h in self.settings["accountant_history"]]
        s = self.settings
        return [(float(s["noise_multiplier"]), float(s["sample_rate"]), int(s["steps"]))]

    def to(self, dtype: torch.dtype) -> "Transcript":
        """A copy with the float tensors cast to ``dtype`` (masks stay bool).

        Args:
          dtype: the torch floating dtype for thetas, gbar, final_theta and noisy_sums.

        Returns:
          A new :class:`Transcript` (other fields shared).
        """
        return replace(
            self,
            thetas=self.thetas.to(dtype),
            gbar=self.gbar.to(dtype),
            final_theta=self.final_theta.to(dtype),
            noisy_sums=None if self.noisy_sums is None else self.noisy_sums.to(dtype),
        )

    def to_dict(self) -> dict:
        """Plain dict (tensors kept) for ``torch.save``; inverse: ``Transcript.from_dict``."""
        return {
            "thetas": self.thetas,
            "gbar": self.gbar,
            "batch_masks": self.batch_masks,
            "final_theta": self.final_theta,
            "noisy_sums": self.noisy_sums,
            "target_index": self.target_index,
            "settings": dict(self.settings),
            "seed": self.seed,
            "batched": self.batched,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Transcript":
        """The transcript from a :meth:`to_dict` dict (e.g. after ``torch.load``).

        Args:
          d: the dict, with the dataclass's field names as keys.

        Returns:
          The :class:`Transcript`.

        Raises:
          TypeError: if ``d`` has a key that is not a field, or lacks a required one.
        """
        return cls(**d)
