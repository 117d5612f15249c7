"""Parameter objects of the training functions: each field checked when the object is made, the
error naming the field (rerokit.training.settings; issue 20, part 3)."""

import dataclasses

import pytest
import torch

from rerokit.training import DPSGDSettings, EngineOptions, MLPSpec
from rerokit.training.fil import FILOptions

BASE = dict(noise_multiplier=1.0, clip=1.0, steps=3, lr=0.1)


@pytest.mark.parametrize("name,value,err", [
    ("noise_multiplier", -1.0, ValueError), ("noise_multiplier", float("nan"), ValueError),
    ("noise_multiplier", "1", TypeError), ("clip", 0.0, ValueError), ("clip", None, ValueError),
    ("steps", 0, ValueError), ("steps", 2.5, TypeError), ("lr", float("inf"), ValueError),
    ("sample_rate", 0.0, ValueError), ("sample_rate", 1.5, ValueError), ("momentum", 1.0, ValueError),
    ("momentum", -0.1, ValueError),
])
def test_dpsgd_settings_name_the_bad_field(name, value, err):
    with pytest.raises(err, match=name):
        DPSGDSettings(**{**BASE, name: value})


def test_dpsgd_settings_values_and_copies():
    s = DPSGDSettings(noise_multiplier=1, clip=2, steps=3, lr=1, sample_rate=1)
    assert s.to_dict() == dict(noise_multiplier=1.0, clip=2.0, steps=3, lr=1.0, sample_rate=1.0, momentum=0.0)
    assert all(isinstance(s.to_dict()[k], float) for k in ("noise_multiplier", "clip", "lr", "sample_rate"))
    assert s.private and not DPSGDSettings(noise_multiplier=0.0, clip=None, steps=1, lr=1.0).private
    assert DPSGDSettings(noise_multiplier=0.0, clip=1.0, steps=1, lr=1.0).private  # clipped GD
    with pytest.raises(ValueError, match="steps"):
        s.replace(steps=0)  # copies are checked again
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.steps = 5  # type: ignore[misc]


@pytest.mark.parametrize("kw,name,err", [
    (dict(method="fast"), "method", ValueError), (dict(chunk_size=0), "chunk_size", ValueError),
    (dict(num_threads=0), "num_threads", ValueError), (dict(progress=1), "progress", TypeError),
    (dict(compile="yes"), "compile", TypeError), (dict(device=3), "device", TypeError),
])
def test_engine_options_name_the_bad_field(kw, name, err):
    with pytest.raises(err, match=name):
        EngineOptions(**kw)


def test_engine_options_accept_devices():
    assert EngineOptions(device="cpu").device == "cpu"
    assert EngineOptions(device=torch.device("cpu")).device == torch.device("cpu")
    assert EngineOptions().replace(chunk_size=4).chunk_size == 4


def test_mlp_spec_and_fil_options():
    assert MLPSpec([8, 4], "tanh", 3).hidden == (8, 4)
    for kw, name in [(dict(hidden=(0,)), "hidden"), (dict(activation="swish"), "activation"),
                     (dict(num_classes=0), "num_classes")]:
        with pytest.raises(ValueError, match=name):
            MLPSpec(**kw)
    with pytest.raises(TypeError, match="hidden"):
        MLPSpec(hidden=10)
    for kw, name in [(dict(coords=0), "coords"), (dict(subsampling="poisson"), "subsampling"),
                     (dict(delta=1.0), "delta"), (dict(repeats=0), "repeats")]:
        with pytest.raises(ValueError, match=name):
            FILOptions(**kw)


def test_functions_refuse_settings_they_cannot_honour():
    from rerokit.training import make_mlp
    from rerokit.training.fil import dpsgd_fil
    from rerokit.training.opacus_adapter import record_opacus_transcript

    m, X, Y = make_mlp(4, [3], 2), torch.rand(5, 4), torch.randint(0, 2, (5,))
    with pytest.raises(ValueError, match="momentum"):  # Alg. 1 of Guo et al. has none
        dpsgd_fil(m, X, Y, DPSGDSettings(**BASE, momentum=0.5))
    with pytest.raises(ValueError, match="noise_multiplier"):  # the FIL divides by sigma
        dpsgd_fil(m, X, Y, DPSGDSettings(**{**BASE, "noise_multiplier": 0.0}))
    with pytest.raises(TypeError, match="settings"):
        dpsgd_fil(m, X, Y, BASE)
    with pytest.raises(TypeError, match="fil"):
        dpsgd_fil(m, X, Y, DPSGDSettings(**BASE), fil={"coords": 2})
    with pytest.raises(ValueError, match="clip"):  # Opacus clips every per-sample gradient
        record_opacus_transcript(m, X, Y, 0, DPSGDSettings(noise_multiplier=0.0, clip=None, steps=1, lr=0.1))
