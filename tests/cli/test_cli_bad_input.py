"""Bad input on every numeric option of every CLI command: one line on stderr, exit code 2.

The project standard: bad input gets a clear error, never a traceback or a silent NaN. This test
introspects ``rerokit.cli.build_parser()`` for every sub-command and every option parsed as a
number (``type=int``/``float``), builds a minimal valid command line for it (``BASES``, written
by hand below: tiny trials/targets/steps, temporary output folders) and replaces the option's
value with each of ``nan``, ``inf``, ``-1``, ``0``, ``1e400`` and ``abc``. The value must either
be rejected (exit code 2, stderr exactly one line starting with ``error:``, no traceback) or be
genuinely valid for that option (listed in ``VALID``; then the exit code is 0 and the result
handed to the printer contains no NaN).

Validation comes first: the work of the commands that train, fit or attack (``WORK``) is wrapped
by a spy, and a rejected value must be rejected before the spy is called. For the figure
commands whose valid run calibrates and trains for seconds, ``EXPENSIVE`` work is replaced by a
sentinel that raises: a valid value that reaches it is skipped with the reason, not run. Every
other valid value is run in full (each such run takes well under 2 s).
"""

from __future__ import annotations

import argparse
import math
import numbers
from typing import Any

import pytest

import rerokit.cli as cli
from rerokit.cli import build_parser, main

BAD_VALUES = ("nan", "inf", "-1", "0", "1e400", "abc")

# ---------------------------------------------------------------------------------------------
# Minimal valid command lines, per command. "{out}" is replaced by a fresh temporary path and
# "{npy}" by a small .npy file of prior samples. For an option under test the first base that
# contains it is used; an option in no base is appended to the first one.
# ---------------------------------------------------------------------------------------------
_KAPPA = ["--prior-size", "10"]
BASES: dict[tuple[str, str], list[list[str]]] = {
    ("bound", "dpsgd"): [
        ["--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1", *_KAPPA, "--delta", "1e-5"],
        ["--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1", "--kappa", "0.1"],
        ["--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1", "--log10-kappa", "-1"],
        ["--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "2", *_KAPPA, "--method", "mc",
         "--mc-samples", "1000", "--seed", "0"],
    ],
    ("bound", "tradeoff"): [
        ["--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "2", "--fpr", "0.01", "0.1",
         "--prior-membership", "0.5"],
        ["--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "2", "--grid", "10", "--alpha-min", "1e-4",
         "--adjacency", "add-remove"],
    ],
    ("bound", "dp"): [["--epsilon", "1", "--kappa", "0.1"], ["--epsilon", "1", "--log10-kappa", "-1"]],
    ("bound", "rdp"): [["--alpha", "2", "--epsilon", "1", "--kappa", "0.1"],
                       ["--alpha", "2", "--epsilon", "1", "--log10-kappa", "-1"]],
    ("bound", "zcdp"): [["--rho", "1", "--kappa", "0.1"], ["--rho", "1", "--log10-kappa", "-1"]],
    ("bound", "gdp"): [["--mu", "1", "--kappa", "0.1"], ["--mu", "1", "--log10-kappa", "-1"]],
    ("bound", "fano"): [
        ["--noise-multiplier", "1", "--prior-size", "10", "--sensitivity", "1"],
        ["--mutual-information", "0.5", "--prior-size", "10"],
        ["--rdp-epsilon", "0.5", "--prior-size", "10"],
    ],
    ("bound", "uninformed"): [
        ["--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--mse-threshold", "0.01", "--clip", "1"],
        ["--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--psnr-threshold", "20", "--data-range", "1"],
        ["--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--mse-threshold", "0.01", "--releases", "2",
         "--steps", "10", "--sample-rate", "0.1"],
    ],
    ("bound", "mse-rdp"): [
        ["--epsilon", "1", "--dim", "4"],
        ["--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10", "--dim", "4"],
        ["--n", "100", "--lam", "0.1", "--noise-std", "1", "--lipschitz", "1", "--dim", "4"],
    ],
    ("bound", "fil"): [
        ["--noise-std", "0.01", "--lam", "0.01"],
        ["--dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "1", "--clip", "1", "--lr", "0.5",
         "--coords", "5", "--repeats", "1", "--seed", "0", "--hidden", "4", "--json"],
        ["--dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "1", "--coords", "5",
         "--hidden", "4", "--subsampling", "amplified", "--delta", "1e-5", "--json"],
    ],
    ("kappa", "discrete"): [["--prior-size", "10"]],
    ("kappa", "ball"): [["--dim", "4", "--eta", "0.5"]],
    ("kappa", "gaussian"): [["--dim", "4", "--sigma", "1", "--eta", "1"]],
    ("kappa", "samples"): [["--samples", "{npy}", "--eta", "0.1", "--metric", "l2", "--confidence", "0.95"]],
    ("kappa", "pixels"): [["--dim", "4", "--delta", "0.1", "--rho", "1"],
                          ["--dim", "4", "--delta", "0.1", "--levels", "256"]],
    ("calibrate", "dpsgd"): [
        ["--target-gamma", "0.5", "--sample-rate", "1", "--steps", "10", *_KAPPA, "--delta", "1e-5"],
        ["--target-gamma", "0.5", "--sample-rate", "1", "--noise-multiplier", "5", *_KAPPA, "--max-steps", "100"],
        ["--target-gamma", "0.5", "--sample-rate", "1", "--steps", "10", "--kappa", "0.1"],
        ["--target-gamma", "0.5", "--sample-rate", "1", "--steps", "10", "--log10-kappa", "-1"],
    ],
    ("attack", "analytic"): [
        ["--noise-multiplier", "0.1", "--clip", "1", "--targets", "2", "--seed", "0", "--rows", "2",
         "--mse-threshold", "0.01", "--backend", "vmap", "--no-progress"],
    ],
    ("attack", "glm"): [["--lam", "0.01", "--noise", "0.1", "--draws", "2", "--seed", "0"]],
    ("attack", "reconn"): [
        ["--shadow-models", "4", "--fixed-size", "10", "--targets", "2", "--epochs", "1", "--reconstructor-epochs", "1",
         "--reconstructor-hidden", "8", "--lr", "0.2", "--momentum", "0.9", "--seed", "0", "--threads", "1",
         "--no-png", "--quiet"],
        ["--shadow-models", "4", "--fixed-size", "10", "--targets", "2", "--epochs", "1", "--reconstructor-epochs", "1",
         "--reconstructor-hidden", "8", "--epsilon", "10", "--delta", "1e-5", "--clip", "1", "--no-png", "--quiet"],
    ],
    ("audit", "prior-aware"): [
        ["--noise-multiplier", "1", "--trials", "1", "--steps", "1", "--n-known", "10", "--chunk-size", "1",
         "--seed", "0", "--sample-rate", "1", "--clip", "0.1", "--lr", "10", "--hidden", "4", "--prior-size", "2",
         "--no-progress"],
        ["--epsilon", "4", "--delta", "1e-5", "--trials", "1", "--steps", "1", "--n-known", "10", "--no-progress"],
        ["--noise-multiplier", "1", "--trials", "1", "--steps", "1", "--n-known", "10", "--prior-size", "2",
         "--prior-weights", "0.5", "0.5", "--no-progress"],
    ],
    ("audit", "gradient"): [
        ["--noise-multiplier", "1", "--trials", "1", "--steps", "1", "--n-known", "10", "--chunk-size", "1",
         "--seed", "0", "--sample-rate", "1", "--clip", "0.1", "--lr", "10", "--hidden", "4", "--prior-size", "2",
         "--iterations", "1", "--restarts", "1", "--attack-lr", "0.05", "--no-progress"],
        ["--epsilon", "4", "--delta", "1e-5", "--trials", "1", "--steps", "1", "--n-known", "10", "--iterations", "1",
         "--restarts", "1", "--no-progress"],
        ["--noise-multiplier", "1", "--trials", "1", "--steps", "1", "--n-known", "10", "--prior-size", "2",
         "--prior-weights", "0.5", "0.5", "--iterations", "1", "--restarts", "1", "--no-progress"],
    ],
    ("audit", "one-run-bound"): [
        ["--canaries", "100", "--guesses", "10", "--correct", "8", "--options", "2", "--delta", "1e-5",
         "--confidence", "0.95", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1",
         "--thresholds-tried", "1"],
    ],
    ("audit", "one-run"): [
        ["--noise-multiplier", "1", "--canaries", "20", "--hidden", "4", "--steps", "1", "--n-known", "10",
         "--seed", "0", "--sample-rate", "1", "--clip", "0.1", "--lr", "10", "--options", "2", "--guess-counts", "5",
         "--confidence", "0.95", "--actual-noise-multiplier", "1", "--no-progress"],
        ["--epsilon", "4", "--delta", "1e-5", "--canaries", "20", "--hidden", "4", "--steps", "1", "--n-known", "10",
         "--no-progress"],
    ],
    ("experiment", "uninformed-fig2"): [
        ["--out-dir", "{out}", "--sigmas", "0.1", "--points", "4", "--dim", "2", "--rows", "2", "--seed", "0",
         "--datasets", "synthetic", "--no-progress"],
        ["--out-dir", "{out}", "--sigmas", "0.1", "--digits-targets", "2", "--datasets", "digits", "--no-progress"],
    ],
    ("experiment", "hayes-fig3"): [
        ["--out-dir", "{out}", "--trials", "1", "--seed", "0", "--delta", "1e-5", "--steps", "1", "--lr", "10",
         "--n-known", "10", "--epsilons", "4", "--prior-size", "2", "--clip", "0.1", "--no-progress"],
    ],
    ("experiment", "hayes-fig5"): [
        ["--out-dir", "{out}", "--trials", "1", "--seed", "0", "--delta", "1e-5", "--steps", "1", "--lr", "10",
         "--n-known", "10", "--sample-rates", "1", "--epsilon", "4", "--prior-size", "2", "--clip", "1",
         "--no-progress"],
    ],
    ("experiment", "hayes-fig8"): [
        ["--out-dir", "{out}", "--trials", "1", "--seed", "0", "--delta", "1e-5", "--steps", "1", "--lr", "10",
         "--n-known", "10", "--gradient-trials", "1", "--epsilons", "4", "--prior-sizes", "2", "--clip", "0.1",
         "--iterations", "1", "--restarts", "1", "--no-progress"],
    ],
    ("experiment", "hayes-fig3-sizes"): [
        ["--out-dir", "{out}", "--trials", "1", "--seed", "0", "--delta", "1e-5", "--steps", "1", "--lr", "10",
         "--n-known", "10", "--epsilons", "4", "--prior-sizes", "2", "--clip", "0.1", "--no-progress"],
    ],
    ("experiment", "hayes-fig9"): [
        ["--out-dir", "{out}", "--trials", "1", "--seed", "0", "--delta", "1e-5", "--steps", "1", "--lr", "10",
         "--n-known", "10", "--epsilons", "4", "--prior-size", "2", "--clip", "0.1", "--no-progress"],
    ],
    ("experiment", "hayes-fig13"): [
        ["--out-dir", "{out}", "--trials", "1", "--seed", "0", "--delta", "1e-5", "--steps", "1", "--lr", "10",
         "--n-known", "10", "--epsilons", "4", "--prior-size", "2", "--clips", "0.1", "--no-progress"],
    ],
    ("experiment", "hayes-fig12"): [
        ["--out-dir", "{out}", "--trials", "1", "--seed", "0", "--delta", "1e-5", "--steps", "1", "--lr", "10",
         "--n-known", "10", "--epsilons", "4", "--rhos", "0.5", "--clip", "0.1", "--iterations", "1",
         "--restarts", "1", "--no-progress"],
    ],
    ("experiment", "balle-mia"): [
        ["--out-dir", "{out}", "--trials", "2", "--seed", "0", "--fixed-size", "20", "--epochs", "2", "--lr", "0.2",
         "--momentum", "0.5", "--clip", "1", "--delta", "1e-5", "--shadow-pairs", "1", "--inits", "known",
         "--no-progress"],
        ["--out-dir", "{out}", "--trials", "2", "--fixed-size", "20", "--epochs", "2", "--epsilon", "10",
         "--shadow-pairs", "1", "--inits", "known", "--no-progress"],
    ],
    ("experiment", "reconn-seeds"): [
        ["--out-dir", "{out}", "--seed", "0", "--fixed-size", "20", "--shadow-models", "4", "--targets", "2",
         "--epochs", "1", "--lr", "0.01", "--momentum", "0", "--reconstructor-epochs", "1", "--batch-sizes", "8",
         "--seeds", "known", "--no-progress"],
    ],
    ("experiment", "reconn-weaker"): [
        ["--out-dir", "{out}", "--seed", "0", "--fixed-size", "20", "--shadow-models", "4", "--targets", "2",
         "--epochs", "1", "--lr", "0.2", "--momentum", "0.5", "--reconstructor-epochs", "1", "--variants", "logits",
         "--no-progress"],
    ],
    ("experiment", "resolution-sweep"): [
        ["--out-dir", "{out}", "--images", "camera", "--resolutions", "4", "--sigmas", "0.01", "--samples", "2",
         "--seed", "0"],
    ],
    ("experiment", "fil-glm"): [
        ["--out-dir", "{out}", "--lam", "0.01", "--noise-std", "1e-4", "--draws", "2", "--seed", "0", "--no-progress"],
    ],
    ("experiment", "reconn-dpgd"): [
        ["--out-dir", "{out}", "--epsilons", "10", "--no-nonprivate", "--shadow-models", "4", "--fixed-size", "10",
         "--epochs", "1", "--targets", "2", "--reconstructor-epochs", "1", "--delta", "1e-5", "--clip", "1",
         "--seed", "0", "--threads", "1", "--quiet"],
    ],
}

# Values (among BAD_VALUES) that are genuinely valid for an option; every other value must be
# rejected with exit code 2. Keyed by (group, command, option).
VALID: dict[tuple[str, str, str], set[str]] = {}


def _valid(group: str, command: str, values: str, *options: str) -> None:
    for o in options:
        VALID[(group, command, o)] = set(values.split())


for _c in ("dpsgd",):
    _valid("bound", _c, "0", "--seed")
for _c in ("dp", "rdp"):
    _valid("bound", _c, "0", "--epsilon")
_valid("bound", "zcdp", "0", "--rho")
_valid("bound", "gdp", "0", "--mu")
for _c in ("dp", "rdp", "zcdp", "gdp"):
    _valid("bound", _c, "-1 0", "--log10-kappa")
_valid("bound", "dpsgd", "-1 0", "--log10-kappa")
_valid("bound", "tradeoff", "0", "--fpr")  # FPR 0: TPR 0 exactly
_valid("calibrate", "dpsgd", "-1", "--log10-kappa")  # kappa = 1 (log10 0) leaves no target gamma in (kappa, 1)
_valid("bound", "fano", "0", "--mutual-information", "--rdp-epsilon", "--sensitivity")
_valid("bound", "uninformed", "0", "--mse-threshold")
_valid("bound", "uninformed", "-1 0", "--psnr-threshold")
_valid("bound", "fil", "0", "--seed")
_valid("bound", "mse-rdp", "0", "--epsilon")  # (2, 0)-RDP: no unbiased attack, the bound is +inf
_valid("kappa", "samples", "0", "--eta")
_valid("kappa", "pixels", "0", "--rho")
_valid("attack", "analytic", "0", "--seed")
_valid("attack", "glm", "0", "--noise", "--seed")
_valid("attack", "reconn", "0", "--momentum", "--threads", "--seed")
for _c in ("prior-aware", "gradient"):
    _valid("audit", _c, "0", "--noise-multiplier", "--seed", "--n-known")
_valid("audit", "one-run-bound", "0", "--correct")
_valid("audit", "one-run", "0", "--seed", "--n-known")
for _c in ("uninformed-fig2", "hayes-fig3", "hayes-fig5", "hayes-fig8", "fil-glm"):
    _valid("experiment", _c, "0", "--seed")
for _c in ("hayes-fig3", "hayes-fig5", "hayes-fig8"):
    _valid("experiment", _c, "0", "--n-known")
_valid("experiment", "reconn-dpgd", "0", "--seed", "--threads")
for _c in ("hayes-fig3-sizes", "hayes-fig9", "hayes-fig13", "hayes-fig12"):
    _valid("experiment", _c, "0", "--seed", "--n-known")
_valid("experiment", "hayes-fig12", "0", "--rhos")
_valid("experiment", "balle-mia", "0", "--seed", "--momentum")
_valid("experiment", "resolution-sweep", "0", "--seed")
for _c in ("reconn-seeds", "reconn-weaker"):
    _valid("experiment", _c, "0", "--seed", "--momentum", "--threads")

# Pure-DP bounds, the uninformed calibration and the closed-form figures (branch seedsb).
BASES.update({
    ("bound", "laplace"): [["--epsilon", "1", "--prior-size", "10"],
                           ["--scale", "1", "--sensitivity", "1", "--kappa", "0.1"],
                           ["--epsilon", "1", "--log10-kappa", "-1"]],
    ("bound", "finite-support"): [["--epsilon", "1", "--prior-size", "10"],
                                  ["--epsilon", "1", "--kappa", "0.1", "--support-size", "10"],
                                  ["--epsilon", "1", "--log10-kappa", "-1", "--support-size", "10"]],
    ("experiment", "hayes-fig15"): [["--out-dir", "{out}", "--epsilons", "4", "--sample-rates", "1", "--prior-sizes", "2",
                                     "--steps", "1", "--delta", "1e-5", "--no-progress"]],
    ("experiment", "hayes-table2"): [["--out-dir", "{out}", "--prior-sizes", "2", "--sigmas", "1", "--samples", "100",
                                      "--seed", "0", "--no-progress"]],
    ("calibrate", "uninformed"): [["--target-gamma", "0.05", "--dim", "4", "--min-norm", "1", "--mse-threshold", "0.01"],
                                  ["--target-gamma", "0.05", "--dim", "4", "--clip", "1", "--psnr-threshold", "20",
                                   "--data-range", "1", "--releases", "2"]],
    ("experiment", "uninformed-metrics"): [["--out-dir", "{out}", "--sigmas", "0.1", "--repeats", "2", "--target-index",
                                            "0", "--seed", "0", "--no-progress"]],
    ("experiment", "pure-dp"): [["--out-dir", "{out}", "--epsilons", "1", "--prior-sizes", "2", "--trials", "10",
                                 "--seed", "0"]],
})
_valid("bound", "laplace", "0", "--epsilon", "--sensitivity")
_valid("bound", "laplace", "-1 0", "--log10-kappa")
_valid("bound", "finite-support", "0", "--epsilon")
_valid("bound", "finite-support", "-1 0", "--log10-kappa")
_valid("experiment", "hayes-table2", "0", "--seed")
_valid("calibrate", "uninformed", "-1 0", "--psnr-threshold")
_valid("experiment", "uninformed-metrics", "0", "--seed", "--target-index")
_valid("experiment", "pure-dp", "0", "--seed")

# Guo et al. 2022 Figs. 5 and 2 (branch guo).
BASES.update({
    ("experiment", "guo-fig5"): [["--out-dir", "{out}", "--noise-multipliers", "1", "--steps", "1", "--hidden", "0",
                                  "--train-size", "10", "--coords", "1", "--clip", "1", "--lr", "1", "--seed", "0",
                                  "--no-progress"]],
    ("experiment", "guo-dfil-hist"): [["--out-dir", "{out}", "--lam", "0.1", "--noise-std", "0.25", "--bins", "5"]],
})
_valid("experiment", "guo-fig5", "0", "--seed", "--coords")  # --coords 0: every coordinate (exact trace)

# Commands that train models: (module, attribute) of the expensive work, replaced by a sentinel.
# Calibrating sigma for (epsilon, delta) comes before the figures' audits; every check must come
# before it.
EXPENSIVE: dict[tuple[str, str], list[tuple[str, str]]] = {
    ("experiment", f): [("rerokit.experiments.hayes_figures", "sigma_for_epsilon")] for f in ("hayes-fig3", "hayes-fig5", "hayes-fig8")
}
EXPENSIVE.update({("experiment", f): [("rerokit.experiments.hayes_more", "sigma_for_epsilon")]
                  for f in ("hayes-fig3-sizes", "hayes-fig9", "hayes-fig13", "hayes-fig12")})


# The work (training, fitting, attacking) of the other commands is wrapped by a spy: a rejected
# value must be rejected before the work starts (the spy was not called); a valid one runs.
_TRAIN_AUDIT = [("rerokit.experiments.audit", "train_chunk")]
_TRAIN_RECONN = [("rerokit.attacks.reconn", "train_models")]
_FIT_GLM = [("rerokit.attacks.glm", "fit_glm")]
WORK: dict[tuple[str, str], list[tuple[str, str]]] = {
    ("audit", "prior-aware"): _TRAIN_AUDIT,
    ("audit", "gradient"): _TRAIN_AUDIT,
    ("audit", "one-run"): [("rerokit.experiments.onerun", "_whitebox")],
    ("attack", "reconn"): _TRAIN_RECONN,
    ("experiment", "reconn-dpgd"): _TRAIN_RECONN,
    ("experiment", "balle-mia"): _TRAIN_RECONN,
    ("experiment", "reconn-seeds"): [("rerokit.training", "train_dpsgd_many")],
    ("experiment", "reconn-weaker"): [("rerokit.training", "train_dpsgd_many")],
    ("attack", "glm"): _FIT_GLM,
    ("experiment", "fil-glm"): _FIT_GLM,
    ("attack", "analytic"): [("rerokit.attacks.analytic", "vectorized_analytic_attack")],
    ("experiment", "uninformed-fig2"): [("rerokit.attacks.analytic", "vectorized_analytic_attack")],
}
WORK[("experiment", "guo-fig5")] = [("rerokit.training.fil", "dpsgd_fil")]
WORK[("experiment", "guo-dfil-hist")] = _FIT_GLM
WORK[("experiment", "uninformed-metrics")] = [("rerokit.attacks.analytic", "vectorized_analytic_attack")]


# ---------------------------------------------------------------------------------------------
def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def commands() -> list[tuple[str, str]]:
    return [(g, c) for g, gp in _subparsers(build_parser()).items() for c in _subparsers(gp)]


def _command_parser(cmd: tuple[str, str]) -> argparse.ArgumentParser:
    return _subparsers(_subparsers(build_parser())[cmd[0]])[cmd[1]]


def numeric_options(cmd: tuple[str, str]) -> list[tuple[str, Any]]:
    # hidden deprecated spellings (help=SUPPRESS) share the dest of the option they alias, which is tested
    return [(a.option_strings[-1], a.type) for a in _command_parser(cmd)._actions
            if a.option_strings and a.type in (int, float) and a.help != argparse.SUPPRESS]


def _replace(tokens: list[str], opt: str, value: str) -> list[str]:
    if opt not in tokens:
        return [*tokens, opt, value]
    i = tokens.index(opt)
    j = i + 1
    while j < len(tokens) and not tokens[j].startswith("--"):
        j += 1
    return [*tokens[: i + 1], value, *tokens[j:]]


def argv_with(cmd: tuple[str, str], opt: str, value: str, subst: dict[str, str]) -> list[str]:
    bases = BASES[cmd]
    base = next((b for b in bases if opt in b), bases[0])
    tokens = [subst.get(t, t) for t in _replace(base, opt, value)]
    return [*cmd, *tokens]


def _has_nan(x: Any) -> bool:
    if isinstance(x, dict):
        return any(_has_nan(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(_has_nan(v) for v in x)
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        return math.isnan(float(x))
    if hasattr(x, "dtype") and hasattr(x, "tolist"):
        return _has_nan(x.tolist())
    return False


CASES = [(cmd, opt, v) for cmd in commands() for opt, _ in numeric_options(cmd) for v in BAD_VALUES]


def test_every_command_has_a_base():
    assert sorted(BASES) == sorted(commands())


@pytest.fixture
def subst(tmp_path):
    import numpy as np

    npy = tmp_path / "prior.npy"
    np.save(npy, np.random.default_rng(0).uniform(size=(50, 3)))
    return {"{out}": str(tmp_path / "out"), "{npy}": str(npy)}


class _Reached(Exception):
    """Raised by the sentinel that replaces a command's expensive work."""


@pytest.mark.parametrize("cmd, opt, value", CASES, ids=[f"{c[0]}-{c[1]}-{o}={v}" for c, o, v in CASES])
def test_numeric_option(cmd, opt, value, subst, capsys, monkeypatch):
    results: list[Any] = []
    orig_emit = cli.emit

    def spy(result, **kw):
        results.append(result)
        orig_emit(result, **kw)

    monkeypatch.setattr(cli, "emit", spy)
    for mod, attr in EXPENSIVE.get(cmd, []):
        def sentinel(*a, _n=f"{mod}.{attr}", **k):
            raise _Reached(_n)

        monkeypatch.setattr(f"{mod}.{attr}", sentinel)
    work: list[str] = []
    for mod, attr in WORK.get(cmd, []):
        import importlib

        real = getattr(importlib.import_module(mod), attr)

        def spy_work(*a, _real=real, _n=f"{mod}.{attr}", **k):
            work.append(_n)
            return _real(*a, **k)

        monkeypatch.setattr(f"{mod}.{attr}", spy_work)
    argv = argv_with(cmd, opt, value, subst)
    ok = value in VALID.get((*cmd, opt), set())
    try:
        code = main(argv)
    except _Reached as r:
        assert ok, f"{' '.join(argv)}: {opt}={value} reached {r} before being rejected"
        pytest.skip(f"{opt}={value} is valid and the full run trains models ({r}); not run here")
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if ok:
        assert code == 0, f"{' '.join(argv)}: exit {code}: {err}"
        assert results and not any(_has_nan(r) for r in results), f"{' '.join(argv)}: NaN in the result"
        assert work or cmd not in WORK, f"{' '.join(argv)}: the spy on {WORK[cmd]} was never called"
    else:
        assert code == 2, f"{' '.join(argv)}: expected exit 2, got {code}; stderr {err!r}"
        assert not work, f"{' '.join(argv)}: {opt}={value} rejected only after {work[0]} ran (validate first)"
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), f"{' '.join(argv)}: stderr {err!r}"
        # the message names the parameter (argparse: the option; the library: its dest name)
        assert opt in lines[0] or opt[2:].replace("-", "_") in lines[0], f"{' '.join(argv)}: {lines[0]!r}"


# ---------------------------------------------------------------------------------------------
# Help, missing arguments, mutually exclusive options
# ---------------------------------------------------------------------------------------------
HELP_CASES = [[], *[[g] for g in dict.fromkeys(c[0] for c in commands())], *[list(c) for c in commands()]]


@pytest.mark.parametrize("prefix", HELP_CASES, ids=[" ".join(p) or "rerokit" for p in HELP_CASES])
def test_help_exits_0(prefix, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*prefix, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr()
    assert out.out.startswith("usage: rerokit") and "Traceback" not in out.err


@pytest.mark.parametrize("argv", [[], ["bound"], ["kappa"], ["attack"], ["experiment"]])
def test_command_missing_prints_usage_and_exits_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: rerokit") and "Traceback" not in err


def test_python_dash_m_without_arguments():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "rerokit.cli"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("usage: rerokit") and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "rerokit.cli", "bound"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("usage: rerokit bound") and "dpsgd" in r.stderr


def _required(cmd: tuple[str, str]) -> list[str]:
    return [a.option_strings[-1] for a in _command_parser(cmd)._actions if a.option_strings and a.required]


def _drop(tokens: list[str], opt: str) -> list[str]:
    i = tokens.index(opt)
    j = i + 1
    while j < len(tokens) and not tokens[j].startswith("--"):
        j += 1
    return [*tokens[:i], *tokens[j:]]


REQUIRED_CASES = [(cmd, opt) for cmd in commands() for opt in _required(cmd)]


@pytest.mark.parametrize("cmd, opt", REQUIRED_CASES, ids=[f"{c[0]}-{c[1]}-{o}" for c, o in REQUIRED_CASES])
def test_missing_required_option_exits_2(cmd, opt, subst, capsys):
    base = next(b for b in BASES[cmd] if opt in b)
    argv = [*cmd, *(subst.get(t, t) for t in _drop(base, opt))]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and opt in lines[0], lines


def _exclusive_groups(cmd: tuple[str, str]) -> list[list[str]]:
    return [[a.option_strings[-1] for a in g._group_actions] for g in _command_parser(cmd)._mutually_exclusive_groups]


EXCLUSIVE_CASES = [(cmd, g) for cmd in commands() for g in _exclusive_groups(cmd)]


@pytest.mark.parametrize("cmd, group", EXCLUSIVE_CASES, ids=[f"{c[0]}-{c[1]}-{'|'.join(g)}" for c, g in EXCLUSIVE_CASES])
def test_mutually_exclusive_options_exit_2(cmd, group, subst, capsys):
    a, b = group[:2]
    flag = next(x for x in _command_parser(cmd)._actions if b in x.option_strings).nargs == 0  # store_true
    if flag and a not in next(iter(BASES[cmd])):
        a, b = b, a  # a flag pair (--resume | --overwrite): give both flags on top of the base
    base = next((x for x in BASES[cmd] if a in x), next(iter(BASES[cmd])))
    extra = next((x for x in BASES[cmd] if b in x), None)
    if flag:
        argv = [*cmd, *(subst.get(t, t) for t in base), *[o for o in (a, b) if o not in base]]
    else:
        value = extra[extra.index(b) + 1] if extra else {"--dataset": "digits", "--weights": "1,1"}[b]
        argv = [*cmd, *(subst.get(t, t) for t in base), b, value]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "not allowed" in lines[0], lines


# Combinations checked by the handlers (not by argparse), and required groups left empty.
COMBO_CASES = [
    (["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1", "--prior-size", "10",
      "--kappa", "0.1"], "exactly one"),
    (["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "1", "--prior-size", "10"], "exactly one"),
    (["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "1", "--prior-size", "10", "--steps", "10",
      "--noise-multiplier", "1"], "exactly one"),
    (["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "1", "--steps", "10"], "exactly one"),
    (["bound", "mse-rdp", "--dim", "4"], "exactly one"),
    (["bound", "mse-rdp", "--epsilon", "1", "--n", "100", "--dim", "4"], "exactly one"),
    (["bound", "mse-rdp", "--noise-multiplier", "1", "--dim", "4"], "--sample-rate"),
    (["bound", "mse-rdp", "--n", "100", "--dim", "4"], "--lam"),
    (["bound", "mse-rdp", "--orders", "2,3", "--dim", "4"], "--rdp"),
    (["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1"], "required"),
    (["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "1", "--fpr", "0.1",
      "--adjacency", "both"], "adjacency"),
    (["bound", "dp", "--epsilon", "1"], "required"),
    (["bound", "fano", "--prior-size", "10"], "required"),
    (["bound", "uninformed", "--noise-multiplier", "1", "--dim", "4", "--mse-threshold", "0.1"], "required"),
    (["bound", "uninformed", "--noise-multiplier", "1", "--dim", "4", "--min-norm", "1"], "required"),
    (["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1", "--mse-threshold", "0.1"], "dim"),
    (["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--psnr-threshold", "20"],
     "data_range"),
    (["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1", "--dim", "4", "--mse-threshold", "0.1",
      "--steps", "10"], "sample_rate"),
    (["bound", "fil", "--dpsgd", "--noise-multiplier", "1"], "--sample-rate"),
    (["bound", "fil"], "--noise-std"),
    (["kappa", "discrete"], "required"),
    (["kappa", "discrete", "--prior-size", "2", "--weights", "1,1"], "not allowed"),
    (["audit", "prior-aware", "--trials", "1", "--no-progress"], "epsilon"),
    (["audit", "gradient", "--trials", "1", "--no-progress"], "epsilon"),
]


@pytest.mark.parametrize("argv, word", COMBO_CASES, ids=[" ".join(a) for a, _ in COMBO_CASES])
def test_bad_combination_exits_2_with_one_line(argv, word, capsys):
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and word in lines[0], lines


# ---------------------------------------------------------------------------------------------
# Ctrl-C during a long command: one line on stderr, finished trials stay in the JSONL (resumable)
# ---------------------------------------------------------------------------------------------
def test_keyboard_interrupt_keeps_finished_targets(tmp_path, capsys, monkeypatch):
    import json

    from rerokit.experiments.records import TrialLog

    out = tmp_path / "analytic.jsonl"
    argv = ["attack", "analytic", "--noise-multiplier", "0.1", "--clip", "1", "--targets", "6", "--seed", "3",
            "--backend", "vmap", "--no-progress", "--out", str(out), "--json"]
    append = TrialLog.append
    calls = []

    def interrupted_append(self, trial, record):
        calls.append(trial)
        if len(calls) == 3:  # Ctrl-C while the third target is being written
            raise KeyboardInterrupt
        append(self, trial, record)

    monkeypatch.setattr(TrialLog, "append", interrupted_append)
    assert main(argv) == 130
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: interrupted") and "Traceback" not in cap.err
    assert cap.out == ""
    recs = [json.loads(s) for s in out.read_text().splitlines()]
    assert recs[0]["kind"] == "header" and [r["trial"] for r in recs[1:]] == [0, 1]
    kept = {r["trial"]: r for r in recs[1:]}

    monkeypatch.setattr(TrialLog, "append", append)
    assert main([*argv, "--resume"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["settings"]["targets"] == 6
    recs = [json.loads(s) for s in out.read_text().splitlines()][1:]
    assert sorted(r["trial"] for r in recs) == list(range(6))
    assert all(r == kept[r["trial"]] for r in recs if r["trial"] in kept)  # finished targets not redone
    # the resumed file equals an uninterrupted run with the same seed
    ref = tmp_path / "ref.jsonl"
    assert main([*argv[:-3], "--out", str(ref), "--json"]) == 0
    capsys.readouterr()
    assert sorted(map(json.dumps, recs)) == sorted(json.dumps(r) for r in map(json.loads, ref.read_text().splitlines()[1:]))


# ---------------------------------------------------------------------------------------------
# Bad paths and non-numeric values: one line naming the parameter (or path), exit 2
# ---------------------------------------------------------------------------------------------
_ANALYTIC = ["attack", "analytic", "--noise-multiplier", "0.1", "--clip", "1", "--targets", "2", "--seed", "0",
             "--backend", "vmap", "--no-progress"]
_RECONN = ["attack", "reconn", "--shadow-models", "4", "--fixed-size", "10", "--targets", "2", "--epochs", "1",
           "--reconstructor-epochs", "1", "--quiet"]
PATH_CASES = [
    ([*_ANALYTIC, "--out", "{dir}", "--resume"], "directory"),
    ([*_ANALYTIC, "--out", "{notjsonl}", "--resume"], "not a rerokit results file"),
    ([*_ANALYTIC, "--out", "{listjsonl}", "--resume"], "not a rerokit results file"),
    ([*_ANALYTIC, "--out", "{notjsonl}"], "--overwrite"),
    ([*_ANALYTIC, "--dataset", "mnist", "--data-path", "{notjsonl}"], "data_path"),
    ([*_ANALYTIC, "--dataset", "mnist", "--data-path", "{npy}"], "data_path"),
    ([*_ANALYTIC, "--dataset", "mnist", "--data-path", "{dir}/missing"], "No such file"),
    ([*_ANALYTIC, "--dataset", "cifar10", "--data-path", "{junkcifar}"], "data_path"),
    ([*_RECONN, "--png", "{dir}"], "png"),
    ([*_RECONN, "--png", "{notjsonl}/x.png"], "{notjsonl}"),  # parent is a file: fails before the attack
    (["kappa", "samples", "--samples", "{dir}/missing.npy"], "missing.npy"),
    (["kappa", "samples", "--samples", "{notjsonl}"], "samples"),
    (["kappa", "samples", "--samples", "{strnpy}", "--metric", "l2", "--eta", "0.1"], "samples"),
    (["experiment", "uninformed-fig2", "--out-dir", "{notjsonl}", "--sigmas", "0.1", "--points", "4", "--dim", "2",
      "--rows", "2", "--datasets", "synthetic", "--no-progress"], "{notjsonl}"),
    (["bound", "fil", "--dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "1", "--hidden", "a",
      "--json"], "hidden"),
    (["audit", "prior-aware", "--noise-multiplier", "1", "--trials", "1", "--steps", "1", "--prior-size", "2",
      "--prior-weights", "0.3", "0.3", "--no-progress"], "prior_weights must sum to 1, got 0.6"),
]


@pytest.mark.parametrize("argv, word", PATH_CASES, ids=[" ".join(a[:2] + a[-3:]) for a, _ in PATH_CASES])
def test_bad_path_or_value_exits_2_with_one_line(argv, word, tmp_path, capsys):
    import numpy as np

    (tmp_path / "d").mkdir()
    (tmp_path / "notjsonl").write_text("hello\n")
    (tmp_path / "list.jsonl").write_text("[1]\n")
    np.save(tmp_path / "a.npy", np.zeros(3))
    np.save(tmp_path / "s.npy", np.array(["a", "b"]))
    cif = tmp_path / "cifar"
    cif.mkdir()
    for i in range(1, 6):
        (cif / f"data_batch_{i}").write_bytes(b"junk")
    sub = {"{dir}": str(tmp_path / "d"), "{notjsonl}": str(tmp_path / "notjsonl"),
           "{listjsonl}": str(tmp_path / "list.jsonl"), "{npy}": str(tmp_path / "a.npy"),
           "{strnpy}": str(tmp_path / "s.npy"), "{junkcifar}": str(cif)}

    def fill(t: str) -> str:
        for k, v in sub.items():
            t = t.replace(k, v)
        return t

    assert main([fill(t) for t in argv]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and fill(word) in lines[0], err


# ---------------------------------------------------------------------------------------------
# Extreme values inside the valid range (1e-300, 1e300) of the closed-form commands: a number
# without NaN (exit 0) or one clear line (exit 2), never a traceback (OverflowError etc.)
# ---------------------------------------------------------------------------------------------
_EXTREME_GROUPS = {"bound", "kappa", "calibrate"}
_EXTREME_SLOW = {("calibrate", "dpsgd", "--kappa"), ("calibrate", "dpsgd", "--log10-kappa")}  # valid, > 20 s
# Known failures of this contract (none now; the former uninformed --clip 1e-300 NaN was fixed by
# computing C / beta_C as max(C, ||G||)).
_EXTREME_KNOWN: dict[tuple[str, ...], str] = {}
EXTREME_CASES = [(cmd, opt, v) for cmd in commands() if cmd[0] in _EXTREME_GROUPS or cmd == ("attack", "analytic")
                 for opt, typ in numeric_options(cmd) if typ is float and (*cmd, opt) not in _EXTREME_SLOW
                 for v in ("1e-300", "1e300")]


@pytest.mark.parametrize("cmd, opt, value", EXTREME_CASES, ids=[f"{c[0]}-{c[1]}-{o}={v}" for c, o, v in EXTREME_CASES])
def test_extreme_value_gives_number_or_one_line(cmd, opt, value, subst, capsys, monkeypatch, recwarn):
    if (*cmd, opt, value) in _EXTREME_KNOWN:
        pytest.xfail(_EXTREME_KNOWN[(*cmd, opt, value)])
    results: list[Any] = []
    orig_emit = cli.emit
    monkeypatch.setattr(cli, "emit", lambda r, **kw: (results.append(r), orig_emit(r, **kw)))
    code = main(argv_with(cmd, opt, value, subst))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code == 0:
        assert results and not any(_has_nan(r) for r in results), f"{opt}={value}: NaN in the result"
    else:
        assert code == 2
        lines = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
        assert len(lines) == 1, err
