"""PyTorch Lightning callback: log the certified risk of DP-SGD training and stop at a limit.

::

    from rerokit.integrations.lightning import RiskCallback

    trainer = lightning.Trainer(max_steps=500, callbacks=[RiskCallback(prior=10, max_gamma=0.3)])
    trainer.fit(module)        # module.privacy_engine (an Opacus PrivacyEngine) is found by itself

The run is the Opacus accountant given as ``run`` or found on the LightningModule as
``privacy_engine`` or ``accountant``; or explicit settings (``noise_multiplier=``,
``sample_rate=``). At every ``log_every_n_steps``-th optimizer step (``trainer.global_step``:
accumulated batches count once) it logs ``privacy/gamma``, ``privacy/tpr_at_fpr_1pct`` and
``privacy/epsilon`` through ``pl_module.log`` (so every Lightning logger gets them), and before a
step would take a number over ``max_gamma`` / ``max_tpr`` / ``max_epsilon`` it sets
``trainer.should_stop``. Needs ``lightning`` (or ``pytorch_lightning``; the ``integrations``
extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

try:  # the unified package first; the standalone one otherwise
    from lightning.pytorch import Callback
except ImportError:  # pragma: no cover - exercised only where lightning is absent
    from pytorch_lightning import Callback

from rerokit.integrations._monitor import RiskLimits, RiskMonitor

__all__ = ["RiskCallback"]


class RiskCallback(Callback):
    """A Lightning ``Callback`` that logs and limits the certified risk of DP-SGD training.

    Args:
      run: an Opacus ``PrivacyEngine`` or accountant; None to use the settings, or to find one on
        the module (``privacy_engine`` / ``accountant``) or behind the trainer's Opacus optimizer.
      noise_multiplier: sigma of the DP optimizer (without an accountant).
      sample_rate: Poisson sampling rate q (without an accountant).
      sampler: how batches are drawn: ``"poisson"`` (Opacus' default), ``"shuffle"`` or ``"full_batch"``.
      prior: the adversary's prior for gamma: an int n (n equally likely candidates; default 10).
      delta: delta of the logged epsilon (default 1e-5).
      max_gamma: stop before gamma would exceed this (None: no limit).
      max_tpr: stop before the TPR bound at 1% FPR would exceed this.
      max_epsilon: stop before epsilon would exceed this.
      card: write the risk card of the finished run here: an HTML card, or with a ``.md`` suffix
        the Privacy section of a model card such as ``README.md`` (None: none).

    Raises:
      ValueError: if the run is given twice, or a setting or limit is out of range; at ``fit``, if
        no run is known.
      TypeError: if ``run`` is neither an accountant nor a ``PrivacyEngine``.
    """

    def __init__(self, run: Any = None, *, noise_multiplier: float | None = None, sample_rate: float | None = None,
                 sampler: str = "poisson", prior: Any = 10, delta: float = 1e-5, max_gamma: float | None = None,
                 max_tpr: float | None = None, max_epsilon: float | None = None, card: str | Path | None = None):
        super().__init__()
        self.monitor = RiskMonitor(run, noise_multiplier=noise_multiplier, sample_rate=sample_rate, sampler=sampler,
                                   prior=prior, delta=delta, limits=RiskLimits(max_gamma, max_tpr, max_epsilon),
                                   card=card, allow_late=True)
        self.summary: dict[str, Any] | None = None
        self._last_step = -1

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        found = [getattr(pl_module, n, None) for n in ("privacy_engine", "accountant")]
        found += list(getattr(trainer, "optimizers", None) or [])  # an Opacus DPOptimizer's accountant
        for run in found:
            if self.monitor.bind(run):
                break
        if not self.monitor.ready:
            raise ValueError("RiskCallback needs the run: pass run=privacy_engine, or noise_multiplier= and "
                             "sample_rate=, or set pl_module.privacy_engine")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._last_step = trainer.global_step
        if self.monitor.should_stop(trainer.global_step, _max_steps(trainer)):
            trainer.should_stop = True

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        step = trainer.global_step
        if step == self._last_step:  # an accumulation substep: no optimizer step happened
            return
        self._last_step = step
        stop = self.monitor.should_stop(step, _max_steps(trainer))
        every = max(int(getattr(trainer, "log_every_n_steps", 1) or 1), 1)
        if stop or step % every == 0:
            for k, v in self.monitor.log_metrics(step).items():
                pl_module.log(k, v, on_step=True, on_epoch=False, prog_bar=k.endswith("gamma"))
        if stop:
            trainer.should_stop = True

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.summary = self.monitor.finish(trainer.global_step)


def _max_steps(trainer: Any) -> int | None:
    m = getattr(trainer, "max_steps", None)
    return int(m) if m is not None and m > 0 else None
