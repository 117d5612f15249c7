"""rerokit.integrations.lightning.RiskCallback inside a real Lightning Trainer (tiny model, CPU).

As for the Hugging Face callback: numbers against ``rerokit.reconstruction_risk`` of the run's
schedule, steps are optimizer steps (``accumulate_grad_batches`` batches count once), the stop
leaves every limit met, and the example trains with Opacus and prints one JSON line.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra")
try:
    import lightning.pytorch as pl
except ImportError:
    pl = pytest.importorskip("pytorch_lightning", reason="needs the integrations extra (lightning)")

from torch import nn  # noqa: E402

import rerokit  # noqa: E402
from rerokit.integrations.lightning import RiskCallback  # noqa: E402

pytestmark = pytest.mark.torch
SIGMA, Q = 1.0, 0.05
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Tiny(pl.LightningModule):
    def __init__(self, accountant=None):
        super().__init__()
        self.lin = nn.Linear(4, 2)
        self.batches = 0
        if accountant is not None:
            self.accountant = accountant

    def training_step(self, batch, batch_idx):
        self.batches += 1
        x, y = batch
        return nn.functional.cross_entropy(self.lin(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(96, 4, generator=g)
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long()), batch_size=4)


class Recorder(pl.Callback):
    """Reads what the module logged (callback_metrics) after each optimizer step."""

    def __init__(self):
        self.seen = {}

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        m = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("privacy/")}
        if m:  # callback_metrics keep the last value: key by the steps it was computed for
            self.seen.setdefault(int(m["privacy/steps"]), (trainer.global_step, m))


def _fit(module, cbs, *, max_steps, accum=1):
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    trainer = pl.Trainer(max_steps=max_steps, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, log_every_n_steps=2,
                         accumulate_grad_batches=accum, callbacks=cbs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module)
    return trainer


def test_counts_optimizer_steps_and_logs_through_the_module():
    cb, rec, module = RiskCallback(noise_multiplier=SIGMA, sample_rate=Q, prior=10), Recorder(), Tiny()
    trainer = _fit(module, [cb, rec], max_steps=6, accum=3)
    assert trainer.global_step == 6 and module.batches == 18
    r = rerokit.reconstruction_risk(noise_multiplier=SIGMA, sample_rate=Q, steps=6, prior=10,
                                    options=rerokit.RiskOptions(fprs=(0.01,)))
    assert cb.summary["steps"] == 6 and not cb.summary["stopped_early"]
    assert cb.summary["gamma"] == pytest.approx(r.gamma, rel=1e-12)
    assert cb.summary["tpr_at_fpr_1pct"] == pytest.approx(r.membership.tpr_at_fpr[0.01], rel=1e-12)
    assert sorted(rec.seen) == [2, 4, 6] and all(rec.seen[t][0] == t for t in rec.seen)  # logged at that step
    g4 = rerokit.reconstruction_risk(noise_multiplier=SIGMA, sample_rate=Q, steps=4, prior=10).gamma
    assert rec.seen[4][1]["privacy/gamma"] == pytest.approx(g4, rel=1e-6)  # logged as float32


def test_stops_via_should_stop_before_max_epsilon_is_exceeded(tmp_path):
    cb = RiskCallback(noise_multiplier=SIGMA, sample_rate=Q, prior=10, max_epsilon=1.3, card=tmp_path / "c.html")
    trainer = _fit(Tiny(), [cb], max_steps=100)
    T = trainer.global_step
    assert cb.summary["stopped_early"] and cb.summary["stop_reason"] == "max_epsilon" and T < 100
    eps = [rerokit.reconstruction_risk(noise_multiplier=SIGMA, sample_rate=Q, steps=t, prior=10).epsilon
           for t in (T, T + 1)]
    assert eps[0] <= 1.3 < eps[1]
    assert (tmp_path / "c.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_finds_the_accountant_on_the_module():
    class Acc:
        history = [(SIGMA, Q, 7)]

    cb = RiskCallback(prior=10)
    _fit(Tiny(accountant=Acc()), [cb], max_steps=1)
    assert cb.summary["steps"] == 7  # the accountant's count wins over the trainer's


def test_finds_the_accountant_behind_the_trainers_opacus_optimizer():
    pytest.importorskip("opacus")
    from opacus import PrivacyEngine

    class DP(Tiny):
        def setup(self, stage):
            engine = PrivacyEngine(accountant="rerokit")  # kept nowhere on the module
            self.lin, self._opt, self._dl = engine.make_private(
                module=self.lin, optimizer=torch.optim.SGD(self.lin.parameters(), lr=0.1),
                data_loader=Tiny.train_dataloader(self), noise_multiplier=1.0, max_grad_norm=1.0)
            self._acc = engine.accountant

        def configure_optimizers(self):
            return self._opt

        def train_dataloader(self):
            return self._dl

    module, cb = DP(), RiskCallback(prior=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(module, [cb], max_steps=3)
    assert cb.monitor.accountant is module._acc and cb.summary["steps"] == len(module._acc) == 3


def test_without_any_run_fit_says_what_to_pass():
    with pytest.raises(ValueError, match="needs the run"):
        _fit(Tiny(), [RiskCallback(prior=10)], max_steps=1)


def test_example_with_opacus_prints_one_json_line(capsys):
    pytest.importorskip("opacus")
    spec = importlib.util.spec_from_file_location("lightning_risk", EXAMPLES / "lightning_risk.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod.main(["--max-steps", "30", "--max-gamma", "0.15"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["stopped_early"] is True and out["steps"] == out["trainer_steps"] < 30
    r = rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=out["sample_rate"], steps=out["steps"], prior=10)
    assert out["gamma"] == pytest.approx(r.gamma, rel=1e-12) and out["gamma"] <= 0.15
