"""Audits of models other than the built-in MLP: a user's ``torch.nn.Module`` (``model_fn`` /
``--model-factory``, per-sample gradients by ``vmap(grad)``) and the built-in CNN on 1x8x8
(digits), 1x28x28 (MNIST) and 3x32x32 (CIFAR-10) inputs; local data files only."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch
from torch import nn

from rerokit.experiments.audit import AuditConfig, GradientAttack, RunOptions, run_audit, run_prior_aware_audit
from rerokit.training import make_mlp

TINY = dict(n_known=9, steps=3, clip=0.1, lr=2.0, prior_size=4)


class TinyConvNet(nn.Module):
    """Not an nn.Sequential: conv -> tanh -> linear, with a parameter outside reset_parameters."""

    def __init__(self, shape, classes):
        super().__init__()
        self.conv = nn.Conv2d(shape[0], 2, 3, padding=1)
        self.scale = nn.Parameter(torch.randn(1))  # built under a fixed seed: the same in every process
        self.fc = nn.Linear(2 * shape[1] * shape[2], classes)

    def forward(self, x):
        return self.fc(torch.tanh(self.scale * self.conv(x)).flatten(1))


def tiny_conv(shape, classes):
    return TinyConvNet(shape, classes)


def test_user_module_without_noise_finds_every_target():
    # sigma = 0: g-bar is the target's own clipped gradient, which Alg. 2 scores highest
    rep = run_prior_aware_audit(AuditConfig(noise_multiplier=0.0, model_fn=tiny_conv, **TINY), 6, 1, attacks=("alg2",), options=RunOptions(progress=False))
    assert rep.results["alg2"].value == 1.0
    assert rep.settings["model"] == "custom"
    assert rep.settings["model_factory"] == f"{__name__}:tiny_conv"
    # model=<callable> is the same as model_fn=<callable>
    assert AuditConfig(noise_multiplier=0.0, model=tiny_conv, **TINY) == AuditConfig(noise_multiplier=0.0,
                                                                                    model_fn=tiny_conv, **TINY)


def test_user_sequential_mlp_equals_the_built_in_mlp():
    def mlp(shape, classes):
        return make_mlp(int(np.prod(shape)), [10], classes)

    kw = dict(attacks=("alg2", "loglik"), options=RunOptions(chunk_size=3, progress=False))
    a = run_prior_aware_audit(AuditConfig(noise_multiplier=1.0, **TINY), 5, 2, **kw)
    b = run_prior_aware_audit(AuditConfig(noise_multiplier=1.0, model_fn=mlp, **TINY), 5, 2, **kw)
    assert a.records == b.records  # same initialisations and the same MLP engine


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_audit_models.py").write_text(
        "import torch\nfrom torch import nn\n\n"
        "def net(shape, classes):\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(int(torch.tensor(shape).prod()), 6), nn.Tanh(),"
        " nn.Linear(6, classes))\n\n"
        "def with_bn(shape, classes):\n"
        "    return nn.Sequential(nn.Flatten(), nn.BatchNorm1d(64), nn.Linear(64, classes))\n\n"
        "def not_a_module(shape, classes):\n    return 3\n\n"
        "def broken(shape, classes):\n    raise RuntimeError('layer sizes do not fit')\n\n"
        "NOT_CALLABLE = 5\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the import may add the current folder
    yield "my_audit_models"
    sys.modules.pop("my_audit_models", None)


def test_cli_model_factory(cli, user_module):
    d = cli.json(["audit", "prior-aware", "--noise-multiplier", "0", "--trials", "3", "--steps", "3", "--n-known", "9",
                  "--prior-size", "4", "--no-progress", "--model-factory", f"{user_module}:net"])
    assert d["settings"]["model"] == "custom" and d["settings"]["model_factory"] == f"{user_module}:net"
    assert d["success"] == 1.0


@pytest.mark.parametrize("spec, opts, words", [
    ("nodots", [], ["model_factory", "package.module:function"]),
    ("no_such_module_xyz:f", [], ["cannot import no_such_module_xyz"]),
    ("{m}:missing", [], ["has no missing"]),
    ("{m}:NOT_CALLABLE", [], ["must be a function"]),
    ("{m}:not_a_module", [], ["must return a torch.nn.Module"]),
    ("{m}:broken", [], ["model_fn", "broken", "sample_shape=(1, 8, 8)", "RuntimeError: layer sizes do not fit"]),
    ("{m}:with_bn", [], ["buffers"]),
    ("{m}:net", ["--model", "cnn"], ["--model or --model-factory"]),
])
def test_cli_model_factory_errors_are_one_line(cli, user_module, spec, opts, words):
    line = cli.error(["audit", "prior-aware", "--noise-multiplier", "1", "--no-progress", *opts,
                      "--model-factory", spec.format(m=user_module)])
    assert all(w in line for w in words), line


def _npz(path, X, y):
    np.savez(path, x_train=X, y_train=y)
    return str(path)


@pytest.mark.parametrize("dataset, shape", [("digits", None), ("mnist", (28, 28)), ("cifar10", (32, 32, 3))])
def test_built_in_cnn_on_every_input_shape(cli, tmp_path, dataset, shape):
    extra = []
    if shape is not None:
        rng = np.random.default_rng(0)
        path = _npz(tmp_path / f"{dataset}.npz", rng.integers(0, 256, size=(40, *shape), dtype=np.uint8),
                    rng.integers(0, 10, size=40))
        extra = ["--dataset", dataset, "--data-path", path]
    d = cli.json(["audit", "prior-aware", "--noise-multiplier", "0", "--trials", "2", "--steps", "2", "--n-known", "9",
                  "--prior-size", "4", "--model", "cnn", "--hidden", "4", "--no-progress", *extra])
    assert d["settings"]["model"] == "cnn" and d["settings"]["dataset"] == dataset
    assert d["success"] == 1.0  # no noise: the target's own gradient scores highest


def test_gradient_audit_of_a_user_module(tmp_path):
    rep = run_audit("gradient", noise_multiplier=0.0, model_fn=tiny_conv, trials=1, **TINY, attack=GradientAttack(iterations=3, restarts=1), options=RunOptions(out=str(tmp_path / "g.jsonl"), progress=False))
    header = json.loads((tmp_path / "g.jsonl").read_text().splitlines()[0])["settings"]
    assert header["model_factory"] == f"{__name__}:tiny_conv" and rep.summary().trials == 1
    assert np.isfinite(rep.summary().mse.value)
