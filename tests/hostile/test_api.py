"""Hostile values for every parameter of the public API re-exported from ``rerokit``: a generated
corpus (functions x parameters x values), each case held to the API contract.

The contract: a call returns a result holding no NaN, or raises ``ValueError`` / ``TypeError``;
never ``OverflowError``, ``ZeroDivisionError``, ``MemoryError``, ``RecursionError`` or numpy's
errors from the inside, and a wrong type (a bool, a string, a list where a number is expected) or
a NaN is refused with a message that names the parameter. Calibrations, whose valid extremes take
seconds each, get the values that are refused up front; the others get every value. Runs under
the corpus' memory cap (``rerokit._resources.memory_limit`` = 200 MB).
"""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import pytest

import rerokit

from .conftest import MEMORY_CAP

NUMBERS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0, "1e308": 1e308, "1e-320": 1e-320,
           "10**400": 10**400}
WRONG_TYPES = {"True": True, "'1'": "1", "[1.0]": [1.0], "nan": math.nan}
"""Values refused up front, whose message must name the parameter."""

BASE = {
    "rero_dpsgd": dict(noise_multiplier=1.0, sample_rate=0.01, steps=10, kappa=0.1),
    "epsilon_dpsgd": dict(noise_multiplier=1.0, sample_rate=0.01, steps=10, delta=1e-5),
    "dpsgd_tradeoff": dict(noise_multiplier=1.0, sample_rate=0.01, steps=10),
    "reconstruction_risk": dict(noise_multiplier=1.0, sample_rate=0.01, steps=10, kappa=0.1),
    "reconstruction_risks": dict(noise_multiplier=1.0, sample_rate=0.01, steps=10, priors=(10, 100)),
    "rero_laplace": dict(epsilon=1.0, kappa=0.1),
    "rero_finite_support": dict(epsilon=1.0, support_size=10, kappa=0.1),
    "one_run_bound": dict(canaries=100, guesses=50, correct=40),
    "UniformDiscretePrior": dict(n=10),
    "DiscretePrior": dict(weights=[0.5, 0.5]),
    "PixelTolerancePrior": dict(d=10, delta=0.1),
    "UniformBallPrior": dict(d=10),
    "GaussianPrior": dict(d=10, sigma=1.0),
    "Sampling": dict(sampler="poisson", examples_per_user=1),
    "Numerics": dict(),
    "MonteCarlo": dict(),
    "Comparisons": dict(),
    "RiskOptions": dict(),
    # calibrations: refused-up-front values only (their valid extremes are searched for seconds)
    "calibrate_noise_multiplier": dict(target_gamma=0.15, sample_rate=0.01, steps=10, kappa=0.1),
    "calibrate_steps": dict(target_gamma=0.15, noise_multiplier=1.0, sample_rate=0.01, kappa=0.1, max_steps=1000),
    "noise_multiplier_for_epsilon": dict(epsilon=1.0, delta=1e-5, sample_rate=0.01, steps=10),
}
SLOW = {"calibrate_noise_multiplier", "calibrate_steps", "noise_multiplier_for_epsilon"}
# parameters that take a flag, a name or an object (checked elsewhere) rather than a number
SKIP = {"mechanism", "prior", "priors", "segments", "sampler", "adjacency", "method", "strict", "dpsgd", "selection",
        "schedule", "options", "numerics", "comparisons"}


def _cases():
    out = []
    for name, base in BASE.items():
        sig = inspect.signature(getattr(rerokit, name))
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in SKIP:
                continue
            values = WRONG_TYPES if name in SLOW else {**NUMBERS, **WRONG_TYPES}
            out += [(name, p.name, v) for v in values]
    return out


CASES = _cases()


def _has_nan(x, depth: int = 0) -> bool:
    if depth > 6:
        return False
    if isinstance(x, (float, np.floating)):
        return bool(np.isnan(x))
    if isinstance(x, np.ndarray):
        return x.dtype.kind == "f" and bool(np.isnan(x).any())
    if isinstance(x, dict):
        return any(_has_nan(v, depth + 1) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(_has_nan(v, depth + 1) for v in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return any(_has_nan(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x))
    return False


def test_the_corpus_covers_every_public_function():
    public = {n for n in rerokit.__all__ if callable(getattr(rerokit, n)) and not inspect.isclass(getattr(rerokit, n))}
    assert public <= set(BASE), public - set(BASE)
    assert len(CASES) > 300


@pytest.mark.parametrize("name, param, value", CASES, ids=[f"{n}-{p}-{v}" for n, p, v in CASES])
def test_a_hostile_value_is_a_result_or_an_error_naming_the_parameter(monkeypatch, name, param, value):
    import rerokit._resources as res

    monkeypatch.setattr(res, "memory_limit", lambda: MEMORY_CAP)
    kw = {**BASE[name], param: (NUMBERS | WRONG_TYPES)[value]}
    try:
        result = getattr(rerokit, name)(**kw)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        assert msg and "\n" not in msg.strip()
        if value in WRONG_TYPES:
            flat = msg.replace("_", "").replace("-", "").lower()
            assert param.replace("_", "").lower() in flat, msg
        return
    assert not _has_nan(result), result
