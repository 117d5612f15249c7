"""Hugging Face ``Trainer`` callback: log the certified risk of DP-SGD training and stop at a limit.

::

    from rerokit.integrations.transformers import RiskCallback

    cb = RiskCallback(privacy_engine, prior=10, max_gamma=0.3, card="card.html")
    trainer = Trainer(model=model, args=args, train_dataset=ds, optimizers=(dp_optimizer, None))
    cb.attach(trainer)         # first in the callback list, so W&B / MLflow / TensorBoard see the numbers
    trainer.train()
    cb.summary                 # {"steps", "gamma", "tpr_at_fpr_1pct", "epsilon", "stopped_early", ...}

Every time the Trainer logs (``logging_steps``) the callback adds ``privacy/gamma`` (certified
reconstruction bound for the prior; Hayes et al. 2023, "Bounding Training Data Reconstruction in
DP-SGD"), ``privacy/tpr_at_fpr_1pct`` (largest TPR of any membership test at 1% FPR) and
``privacy/epsilon`` (at ``delta``) to the ``logs`` dict and to ``state.log_history``. Steps are the
Trainer's optimizer steps (``state.global_step``: accumulation substeps are not counted), or the
Opacus accountant's own count when one is given. Before a step would take a number over
``max_gamma`` / ``max_tpr`` / ``max_epsilon`` it sets ``control.should_training_stop``, so the
finished model never exceeds the limit. Needs ``transformers`` (the ``integrations`` extra).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from rerokit.integrations._monitor import RiskLimits, RiskMonitor

__all__ = ["RiskCallback"]


class RiskCallback(TrainerCallback):
    """A ``transformers.TrainerCallback`` that logs and limits the certified risk of DP-SGD training.

    Args:
      run: an Opacus ``PrivacyEngine`` or accountant whose history counts the steps (preferred:
        it sees the noise multiplier and sampling rate Opacus used); or None: the settings below,
        or else the accountant behind the Trainer's Opacus optimizer, found when training starts.
      noise_multiplier: sigma of the DP optimizer (without ``run``).
      sample_rate: Poisson sampling rate q = expected batch size / dataset size (without ``run``).
      sampler: how batches are drawn: ``"poisson"`` (Opacus' default), ``"shuffle"`` or ``"full_batch"``.
      prior: the adversary's prior for gamma: an int n (n equally likely candidates; default 10).
      delta: delta of the logged epsilon (default 1e-5).
      max_gamma: stop before gamma would exceed this (None: no limit).
      max_tpr: stop before the TPR bound at 1% FPR would exceed this.
      max_epsilon: stop before epsilon would exceed this.
      card: write the risk card of the finished run here: an HTML card, or with a ``.md`` suffix
        the Privacy section of a model card such as ``README.md`` (None: none).

    Raises:
      ValueError: if the run is given twice, or a setting or limit is out of range; when training
        starts, if no run is known.
      TypeError: if ``run`` is neither an accountant nor a ``PrivacyEngine``.
    """

    def __init__(self, run: Any = None, *, noise_multiplier: float | None = None, sample_rate: float | None = None,
                 sampler: str = "poisson", prior: Any = 10, delta: float = 1e-5, max_gamma: float | None = None,
                 max_tpr: float | None = None, max_epsilon: float | None = None, card: str | Path | None = None):
        self.monitor = RiskMonitor(run, noise_multiplier=noise_multiplier, sample_rate=sample_rate, sampler=sampler,
                                   prior=prior, delta=delta, limits=RiskLimits(max_gamma, max_tpr, max_epsilon),
                                   card=card, allow_late=True)
        self.summary: dict[str, Any] | None = None
        self._attached_first = False

    def attach(self, trainer: Any) -> "RiskCallback":
        """Add this callback to ``trainer`` *first*, so the reporting callbacks (W&B, MLflow,
        TensorBoard), which run before user callbacks, log the risk numbers too.

        Args:
          trainer: a ``transformers.Trainer``.

        Returns:
          self.
        """
        handler = trainer.callback_handler
        handler.callbacks[:] = [c for c in handler.callbacks if c is not self]
        handler.callbacks.insert(0, self)
        self._attached_first = True
        return self

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if not self.monitor.bind(kwargs.get("optimizer")):
            raise ValueError("RiskCallback needs the run: pass the Opacus PrivacyEngine (RiskCallback(engine, ...)), "
                             "or noise_multiplier= and sample_rate=, or train with an Opacus DPOptimizer")
        report_to = [r for r in (getattr(args, "report_to", None) or []) if r not in ("none", None)]
        if report_to and not self._attached_first:
            warnings.warn("RiskCallback was passed in callbacks=[...], so the Trainer's reporting callbacks "
                          f"({', '.join(report_to)}) log before it and miss the privacy numbers; use "
                          "RiskCallback(...).attach(trainer) instead", UserWarning, stacklevel=2)
        if self.monitor.should_stop(state.global_step, _max_steps(state)):
            control.should_training_stop = True
        return control

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        # called once per optimizer step (on_substep_end marks accumulation substeps)
        if self.monitor.should_stop(state.global_step, _max_steps(state)):
            control.should_training_stop = True
            control.should_log = True
        return control

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, float] | None = None,
               **kwargs: Any) -> Any:
        if logs is None:
            return control
        m = self.monitor.log_metrics(state.global_step)
        logs.update(m)
        if state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1].update(m)
        return control

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        self.summary = self.monitor.finish(state.global_step)
        return control


def _max_steps(state: Any) -> int | None:
    m = getattr(state, "max_steps", None)
    return int(m) if m and m > 0 else None
