"""rerokit.integrations.transformers.RiskCallback inside a real Hugging Face Trainer (tiny model, CPU).

The callback's numbers are compared with ``rerokit.reconstruction_risk`` of the schedule the run
actually had; steps are the Trainer's optimizer steps (gradient accumulation substeps counted
separately here to show they are not steps); the stop leaves gamma at most the limit while one
more step would exceed it.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra")
transformers = pytest.importorskip("transformers", reason="needs the integrations extra (transformers)")
pytest.importorskip("accelerate", reason="the Trainer needs accelerate (integrations extra)")

from torch import nn  # noqa: E402
from transformers import Trainer, TrainerCallback, TrainingArguments  # noqa: E402

import rerokit  # noqa: E402
from rerokit.integrations.transformers import RiskCallback  # noqa: E402

pytestmark = pytest.mark.torch
SIGMA, Q = 1.0, 0.05
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x, labels=None, **_):
        logits = self.lin(x)
        return (nn.functional.cross_entropy(logits, labels), logits)


class Rows(torch.utils.data.Dataset):
    def __init__(self, n: int = 72):  # 18 batches of 4: six steps of 3 accumulated batches
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 4, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


class CountSubsteps(TrainerCallback):
    def __init__(self):
        self.substeps = 0

    def on_substep_end(self, args, state, control, **kw):
        self.substeps += 1


def _trainer(tmp_path, cb: RiskCallback, *, max_steps: int, accum: int = 1, callbacks=()):
    torch.manual_seed(0)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=max_steps, per_device_train_batch_size=4,
                             gradient_accumulation_steps=accum, logging_steps=2, save_strategy="no", report_to="none",
                             use_cpu=True, disable_tqdm=True, seed=0)
    trainer = Trainer(model=Tiny(), args=args, train_dataset=Rows(), callbacks=list(callbacks))
    cb.attach(trainer)
    return trainer


def test_counts_optimizer_steps_not_accumulation_substeps_and_logs_the_risk(tmp_path):
    cb, sub = RiskCallback(noise_multiplier=SIGMA, sample_rate=Q, prior=10), CountSubsteps()
    trainer = _trainer(tmp_path, cb, max_steps=6, accum=3, callbacks=[sub])
    trainer.train()
    assert trainer.state.global_step == 6 and sub.substeps == 6 * 2  # 2 substeps before each step's last batch
    r = rerokit.reconstruction_risk(noise_multiplier=SIGMA, sample_rate=Q, steps=6, prior=10,
                                    options=rerokit.RiskOptions(fprs=(0.01,)))
    s = cb.summary
    assert s["steps"] == 6 and s["stopped_early"] is False
    assert s["gamma"] == pytest.approx(r.gamma, rel=1e-12)
    assert s["epsilon"] == pytest.approx(r.epsilon, rel=1e-12)
    assert s["tpr_at_fpr_1pct"] == pytest.approx(r.membership.tpr_at_fpr[0.01], rel=1e-12)
    logged = [h for h in trainer.state.log_history if "privacy/gamma" in h]
    assert [h["privacy/steps"] for h in logged if "loss" in h] == [2, 4, 6]
    g4 = rerokit.reconstruction_risk(noise_multiplier=SIGMA, sample_rate=Q, steps=4, prior=10).gamma
    assert next(h for h in logged if h.get("privacy/steps") == 4)["privacy/gamma"] == pytest.approx(g4, rel=1e-12)


def test_reporting_callbacks_see_the_numbers_when_attached_first(tmp_path):
    seen = []

    class Reporter(TrainerCallback):  # stands in for W&B / MLflow / TensorBoard (they run before user callbacks)
        def on_log(self, args, state, control, logs=None, **kw):
            seen.append(dict(logs))

    cb = RiskCallback(noise_multiplier=SIGMA, sample_rate=Q, prior=10)
    trainer = _trainer(tmp_path, cb, max_steps=2, callbacks=[Reporter()])
    trainer.train()
    assert seen and all("privacy/gamma" in logs for logs in seen)


def test_stops_before_max_gamma_is_exceeded_and_writes_the_card(tmp_path):
    target = 0.13
    card = tmp_path / "card.html"
    cb = RiskCallback(noise_multiplier=SIGMA, sample_rate=Q, prior=10, max_gamma=target, card=card)
    trainer = _trainer(tmp_path, cb, max_steps=100)
    trainer.train()
    T = trainer.state.global_step
    assert cb.summary["stopped_early"] and cb.summary["stop_reason"] == "max_gamma" and T < 100
    assert T == rerokit.calibrate_steps(target, SIGMA, Q, prior=10).steps
    g = rerokit.reconstruction_risk(noise_multiplier=SIGMA, sample_rate=Q, steps=T, prior=10).gamma
    assert cb.summary["gamma"] == pytest.approx(g, rel=1e-12) and g <= target
    text = card.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and f"T = {T}" in text


def test_warns_when_reporting_callbacks_would_miss_the_numbers():
    from types import SimpleNamespace

    from transformers import TrainerControl, TrainerState

    cb = RiskCallback(noise_multiplier=SIGMA, sample_rate=Q)  # passed in callbacks=[...], not attached
    with pytest.warns(UserWarning, match="attach"):
        cb.on_train_begin(SimpleNamespace(report_to=["wandb"]), TrainerState(), TrainerControl())


def test_without_a_run_training_says_what_to_pass(tmp_path):
    cb = RiskCallback(prior=10)
    with pytest.raises(ValueError, match="needs the run"):
        _trainer(tmp_path, cb, max_steps=1).train()


def test_example_with_opacus_reads_the_accountant_and_prints_one_json_line(tmp_path, capsys):
    pytest.importorskip("opacus")
    import importlib.util

    spec = importlib.util.spec_from_file_location("hf_trainer_risk", EXAMPLES / "hf_trainer_risk.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod.main(["--max-steps", "30", "--max-gamma", "0.15", "--out-dir", str(tmp_path / "o")])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["stopped_early"] is True and out["steps"] == out["trainer_steps"] < 30
    r = rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=out["sample_rate"], steps=out["steps"], prior=10)
    assert out["gamma"] == pytest.approx(r.gamma, rel=1e-12) and out["gamma"] <= 0.15
    assert out["epsilon"] == pytest.approx(r.epsilon, rel=1e-12)
