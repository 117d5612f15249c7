"""Audit your own Opacus training run in one run: gradient canaries (white-box) or input canaries (black-box).

White-box (:class:`GradientCanaryAudit`), Nasr et al. (USENIX Security 2023) Dirac gradient
canaries inside a real ``opacus.optimizers.DPOptimizer``: m canary slots own random coordinates
of the model's parameters; at every step each slot's canary (membership: present or absent;
reconstruction: one of k candidates, antipodal or a regular simplex) joins the batch with
Poisson probability q, the run's sampling rate, as ONE MORE ROW OF THE PER-SAMPLE GRADIENTS
``p.grad_sample`` before Opacus clips them (a gradient of norm C, so Opacus' own clipping, sum
and noise treat it exactly as a record's). After Opacus adds the noise the hook reads only the
canaries' coordinates of the privatized sum, minus the clipped sum of the real records (the
informed white-box adversary of Hayes et al. 2023; ``subtract_known=False`` keeps their
gradients in, Nasr et al.'s setting), and keeps O(m k) running log-likelihood statistics
(:func:`rerokit.bounds.onerun_scores.gaussian_canary_llr`): O(m T) work over the run, no
transcript. :meth:`GradientCanaryAudit.result` turns them into the one-run bound for that very run
(:func:`rerokit.bounds.onerun_scores.audit_scores`, the run's DP-SGD curves as hypotheses).

    from rerokit.opacus import GradientCanaryAudit
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                   noise_multiplier=1.0, max_grad_norm=1.0)
    audit = GradientCanaryAudit(optimizer, canaries=1000, sample_rate=1 / len(loader), seed=0)
    for x, y in loader:                       # train as usual
        optimizer.zero_grad(); loss_fn(model(x), y).backward(); optimizer.step()
    audit.result().bound.epsilon_lower       # what this run proves

The canaries are part of the run: they move the model by at most C per step on their own
coordinates (pick m small against the parameter count, or audit a copy of the run).

Where it cannot work, and says so: ghost clipping (``DPOptimizerFastGradientClipping``,
``grad_sample_mode="ghost"``) never materialises per-sample gradients, so no row can be added;
per-layer clipping (``DPPerLayerOptimizer``) clips each layer with its own threshold, so a
canary's norm is not the run's C; distributed optimizers sum across workers after clipping.
All of these raise ``TypeError`` at construction. Memory: each step adds (number of canaries
sampled, about q m) rows of P numbers to ``p.grad_sample``.

Black-box (:class:`InputCanaries`): records to add to the training data (membership: each
present with probability 1/2; reconstruction: one of k candidate labels of the same input), and
after training, scores from the final model's log-probabilities.

Needs the ``torch`` extra (torch and opacus).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch

from rerokit._validate import check_choice, check_int, check_probability
from rerokit.bounds.onerun import DpsgdHypothesis
from rerokit.bounds.onerun_scores import ScoreAudit, audit_scores, canary_directions, gaussian_canary_llr

__all__ = ["GradientCanaryAudit", "InputCanaries"]

_GAMES = ("membership", "reconstruction")


class GradientCanaryAudit:
    """White-box gradient canaries hooked into an Opacus ``DPOptimizer`` (see the module docstring).

    Args:
      optimizer: the ``DPOptimizer`` returned by ``PrivacyEngine.make_private`` (flat clipping).
      canaries: m >= 1 slots (membership: 1 coordinate each; reconstruction: k - 1).
      sample_rate: the run's Poisson rate q in (0, 1] (``1 / len(loader)`` for Opacus' Poisson loader).
      game: "membership" (default) or "reconstruction".
      options: k >= 2 candidates per slot (reconstruction).
      seed: seed of the coordinates, secrets and canary sampling.
      subtract_known: subtract the real records' clipped sum before scoring (default True).

    Raises:
      TypeError: ghost clipping, per-layer clipping or a distributed optimizer, or not a DPOptimizer.
      ValueError: more canary coordinates than parameters, bad arguments.
    """

    def __init__(self, optimizer: Any, *, canaries: int, sample_rate: float, game: str = "membership",
                 options: int = 2, seed: int = 0, subtract_known: bool = True):
        from opacus.optimizers import DPOptimizer

        name = type(optimizer).__name__
        if not isinstance(optimizer, DPOptimizer):
            raise TypeError(f"optimizer must be an opacus DPOptimizer (from PrivacyEngine.make_private), got {name}")
        if "FastGradientClipping" in name or "Ghost" in name:
            raise TypeError(f"{name} uses ghost clipping: it never materialises per-sample gradients, so gradient "
                            "canaries cannot be added (use grad_sample_mode='hooks', or InputCanaries for black-box)")
        if "PerLayer" in name or "Distributed" in name or "AdaClip" in name:
            raise TypeError(f"{name}: gradient canaries need one flat clipping norm on one worker")
        self.game = check_choice("game", game, _GAMES)
        self.k = check_int("options", options, minimum=2)
        if self.game == "membership" and self.k != 2:
            raise ValueError("options must be 2 for the membership game")
        self.m = check_int("canaries", canaries, minimum=1)
        self.q = check_probability("sample_rate", sample_rate)
        self.opt = optimizer
        self.subtract_known = bool(subtract_known)
        self.seed = check_int("seed", seed, minimum=0)
        self.sigma = float(optimizer.noise_multiplier)
        self.C = float(optimizer.max_grad_norm)
        self.V = canary_directions(self.game, self.k)  # (k', d)
        d = self.V.shape[1]
        self.params = [p for p in optimizer.params]
        sizes = [p.numel() for p in self.params]
        P = int(sum(sizes))
        if self.m * d > P:
            raise ValueError(f"{self.m} canaries need {self.m * d} coordinates but the model has {P} parameters")
        rng = np.random.default_rng([self.seed, 3])
        self.coords = rng.permutation(P)[: self.m * d].reshape(self.m, d)
        self.secrets = rng.integers(0, 2 if self.game == "membership" else self.k, self.m)
        present = self.secrets == 1 if self.game == "membership" else np.ones(self.m, bool)
        vec = self.V[0][None].repeat(self.m, 0) if self.game == "membership" else self.V[self.secrets]
        self._vals = self.C * vec * present[:, None]  # (m, d): each slot's canary gradient
        self._offsets = np.concatenate([[0], np.cumsum(sizes)])
        self._rng = rng
        self._llr = np.zeros((self.m, self.V.shape[0]))
        self._sampled: np.ndarray | None = None
        self.steps = 0
        self._orig_clip = optimizer.clip_and_accumulate
        self._orig_noise = optimizer.add_noise
        optimizer.clip_and_accumulate = self._clip_and_accumulate
        optimizer.add_noise = self._add_noise

    # ----------------------------------------------------------------- the two hooks

    def _rows(self, sampled: np.ndarray) -> list[torch.Tensor]:
        """Per parameter, the (n_c, *p.shape) per-sample gradients of the sampled canaries."""
        idx = np.nonzero(sampled)[0]
        rows = []
        flat_c, vals = self.coords[idx].reshape(-1), self._vals[idx].reshape(-1)
        owner = np.repeat(np.arange(idx.size), self.coords.shape[1])
        for j, p in enumerate(self.params):
            lo, hi = self._offsets[j], self._offsets[j + 1]
            sel = (flat_c >= lo) & (flat_c < hi)
            r = torch.zeros((idx.size, p.numel()), dtype=p.dtype, device=p.device)
            if sel.any():
                r[torch.as_tensor(owner[sel]), torch.as_tensor(flat_c[sel] - lo)] = torch.as_tensor(
                    vals[sel], dtype=p.dtype, device=p.device)
            rows.append(r.reshape(idx.size, *p.shape))
        return rows

    def _clip_and_accumulate(self) -> None:
        sampled = self._rng.random(self.m) < self.q if self.q < 1 else np.ones(self.m, bool)
        for p in self.params:
            if getattr(p, "grad_sample", None) is None:
                raise TypeError("no p.grad_sample: gradient canaries need per-sample gradients (ghost clipping or a "
                                "model without GradSampleModule cannot be audited this way)")
            if isinstance(p.grad_sample, list):
                raise TypeError("accumulated per-sample gradients (virtual steps) are not supported by the canary hook")
        if sampled.any():
            for p, r in zip(self.params, self._rows(sampled)):
                p.grad_sample = torch.cat([p.grad_sample, r.to(p.grad_sample.dtype)])
        self._sampled = sampled
        self._orig_clip()

    def _residual(self) -> np.ndarray:
        """The privatized sum at the canary coordinates, minus the real records' clipped sum."""
        flat = self.coords.reshape(-1)
        noisy = torch.cat([p.grad.reshape(-1) for p in self.params]).detach()
        out = noisy[torch.as_tensor(flat, device=noisy.device)].double().cpu().numpy()
        if self.subtract_known:
            summed = torch.cat([p.summed_grad.reshape(-1) for p in self.params]).detach()
            out = out - summed[torch.as_tensor(flat, device=summed.device)].double().cpu().numpy()
            # what Opacus' clipping made of the sampled canaries: factor C / (C + 1e-6) on a norm-C row
            factor = self.C / (self.C + 1e-6)
            out = out + (factor * self._vals * self._sampled[:, None]).reshape(-1)
        return out.reshape(self.m, -1) / self.C

    def _add_noise(self) -> None:
        self._orig_noise()  # p.grad = summed_grad + noise (before Opacus divides by the batch size)
        self._llr += gaussian_canary_llr(self._residual(), self.V, self.q, self.sigma)
        self.steps += 1

    def detach(self) -> None:
        """Remove the hooks (the optimizer trains without canaries afterwards)."""
        self.opt.clip_and_accumulate = self._orig_clip
        self.opt.add_noise = self._orig_noise

    # ----------------------------------------------------------------- result

    @property
    def scores(self) -> np.ndarray:
        """(m, k) candidate scores so far (membership: [absent = 0, present = log-likelihood ratio])."""
        if self.game == "membership":
            return np.concatenate([np.zeros((self.m, 1)), self._llr], axis=1)
        return self._llr.copy()

    def result(self, *, delta: float = 1e-5, confidence: float = 0.95, method: str = "fdp",
               guess_counts: Sequence[int] | None = None, selection: str = "bonferroni") -> ScoreAudit:
        """The one-run bound of the run so far (its claim: DP-SGD with the optimizer's sigma, q and the steps taken).

        Raises:
          ValueError: before the first step.
        """
        if self.steps == 0:
            raise ValueError("no optimizer step was taken with the canaries attached")
        hyp = DpsgdHypothesis(self.q, self.steps, self.sigma)
        return audit_scores(self.scores, self.secrets, guess_counts=guess_counts, selection=selection, seed=self.seed,
                            options=self.k, bound_kw=dict(method=method, delta=delta, confidence=confidence, dpsgd=hyp,
                                                          adjacency="add_remove" if self.game == "membership"
                                                          else "replace_one"))


class InputCanaries:
    """Black-box input canaries for any training loop (Opacus' DataLoader included).

    Each slot is an input of ``inputs`` with a label other than its true one: membership: one
    wrong label, present with probability 1/2; reconstruction: k distinct wrong labels, one present.

    Args:
      inputs: (m, ...) canary inputs (records the run would not otherwise see).
      labels: (m,) their true labels.
      num_classes: number of classes (> options).
      game, options, seed: as :class:`GradientCanaryAudit`.
    """

    def __init__(self, inputs: torch.Tensor, labels: torch.Tensor, *, num_classes: int, game: str = "membership",
                 options: int = 2, seed: int = 0):
        self.game = check_choice("game", game, _GAMES)
        self.k = check_int("options", options, minimum=2, maximum=check_int("num_classes", num_classes, minimum=2) - 1
                           if game == "reconstruction" else None)
        if self.game == "membership" and self.k != 2:
            raise ValueError("options must be 2 for the membership game")
        self.inputs = torch.as_tensor(inputs)
        true = np.asarray(torch.as_tensor(labels).cpu()).astype(int)
        self.m = check_int("canaries", len(true), minimum=1)
        rng = np.random.default_rng([check_int("seed", seed, minimum=0), 4])
        ncand = 1 if self.game == "membership" else self.k
        self.labels = np.stack([rng.permutation([c for c in range(num_classes) if c != t])[:ncand] for t in true])
        self.secrets = rng.integers(0, 2 if self.game == "membership" else self.k, self.m)
        self.seed = seed

    def training_records(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(X, y) of the canaries that are in the run: add them to the training data."""
        if self.game == "membership":
            idx = np.nonzero(self.secrets == 1)[0]
            return self.inputs[idx], torch.as_tensor(self.labels[idx, 0])
        return self.inputs, torch.as_tensor(self.labels[np.arange(self.m), self.secrets])

    def with_canaries(self, dataset: Any) -> Any:
        """``ConcatDataset([dataset, the present canaries])`` for a DataLoader of (input, label) pairs."""
        from torch.utils.data import ConcatDataset, TensorDataset

        X, y = self.training_records()
        return ConcatDataset([dataset, TensorDataset(X, y)])

    def result(self, model: Callable[[torch.Tensor], torch.Tensor], *, sample_rate: float | None = None,
               steps: int | None = None, noise_multiplier: float | None = None, delta: float = 1e-5,
               confidence: float = 0.95, guess_counts: Sequence[int] | None = None) -> ScoreAudit:
        """Score the canaries with the final ``model`` (logits) and bound the run.

        Args:
          model: the trained model (inputs -> logits).
          sample_rate, steps, noise_multiplier: the run's schedule, to test its DP-SGD curve (optional).
          delta, confidence, guess_counts: as :func:`rerokit.bounds.onerun_scores.audit_scores`.
        """
        with torch.no_grad():
            logp = torch.log_softmax(model(self.inputs), -1).double().cpu().numpy()
        if self.game == "membership":
            scores = logp[np.arange(self.m), self.labels[:, 0]]
        else:
            scores = np.take_along_axis(logp, self.labels, axis=1)
        hyp = None if sample_rate is None or steps is None else DpsgdHypothesis(sample_rate, steps, noise_multiplier)
        return audit_scores(scores, self.secrets, guess_counts=guess_counts, seed=self.seed, options=self.k,
                            bound_kw=dict(delta=delta, confidence=confidence, dpsgd=hyp,
                                          adjacency="add_remove" if self.game == "membership" else "replace_one"))
