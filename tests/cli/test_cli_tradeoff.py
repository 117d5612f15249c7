"""CLI `rerokit bound tradeoff` and the `membership` object of `rerokit bound dpsgd --json`:
values equal to the library (same composed PLD, same numbers), one-line errors with exit code 2,
and a light import path for `bound dpsgd` (no scipy / dp-accounting / torch)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.options import Comparisons
from rerokit.bounds.tradeoff import dpsgd_tradeoff, tradeoff_grid

BASE = ["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000"]


@pytest.mark.parametrize("adjacency", ["remove", "add-remove"])
def test_fpr_points_match_library(cli, adjacency):
    fprs = [0.0, 1e-6, 0.001, 0.01, 0.5, 1.0]
    d = cli.json(BASE + ["--fpr", *map(str, fprs), "--adjacency", adjacency])
    c = dpsgd_tradeoff(1.0, 0.01, 1000, adjacency=adjacency.replace("-", "_"))
    t, b = c.tpr_at_fpr(fprs), c.beta(fprs)
    assert d["settings"]["adjacency"] == adjacency.replace("-", "_") and d["method"] == "exact"
    assert [p["fpr"] for p in d["points"]] == fprs
    for i, p in enumerate(d["points"]):
        assert p["tpr"] == [t.lower[i], t.upper[i]] and p["beta"] == [b.lower[i], b.upper[i]]
        assert p["error"] == pytest.approx(t.upper[i] - t.lower[i])
    adv, acc = c.advantage(), c.bayes_accuracy(0.5)
    assert d["advantage"] == adv.value and d["advantage_interval"] == list(adv.interval)
    assert d["bayes_accuracy"] == acc.value and d["bayes_accuracy_interval"] == list(acc.interval)
    assert d["max_error"] == pytest.approx(max(t.upper - t.lower))


def test_grid_matches_library(cli):
    d = cli.json(BASE + ["--grid", "20", "--alpha-min", "1e-8", "--prior-membership", "0.2"])
    c = dpsgd_tradeoff(1.0, 0.01, 1000)
    a = tradeoff_grid(20, 1e-8)
    assert d["curve"]["alpha"] == a.tolist()
    b = c.beta(a)
    assert d["curve"]["beta_lower"] == b.lower.tolist() and d["curve"]["beta_upper"] == b.upper.tolist()
    assert d["bayes_accuracy"] == c.bayes_accuracy(0.2).value and d["prior_membership"] == 0.2


def test_table_output(cli):
    code, out, _ = cli.run(BASE + ["--fpr", "0.01"])
    # a verdict first, then one row per FPR with its certified bracket, then the derived risks
    assert code == 0 and out.startswith("\u2022 Membership inference:")
    assert "TPR at FPR 0.01" in out and "advantage (TPR \u2212 FPR)" in out and "certified" in out


def test_bound_dpsgd_membership_from_the_same_pld(cli):
    d = cli.json(["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000",
                          "--kappa", "0.01"])
    m = d["membership"]
    for k in ("advantage", "advantage_interval", "tpr_at_fpr", "bayes_accuracy"):
        assert k in m
    assert not [k for k in m if "." in k]  # keys without dots (jq-friendly)
    c = dpsgd_tradeoff(1.0, 0.01, 1000)
    assert m["advantage"] == c.advantage().value and m["advantage_interval"] == list(c.advantage().interval)
    t = c.tpr_at_fpr(np.array([0.001, 0.01, 0.1]))
    assert [p["fpr"] for p in m["tpr_at_fpr"]] == [0.001, 0.01, 0.1]
    assert [p["tpr"] for p in m["tpr_at_fpr"]] == t.upper.tolist()
    assert [p["interval"] for p in m["tpr_at_fpr"]] == [[lo, hi] for lo, hi in zip(t.lower.tolist(), t.upper.tolist())]
    assert m["bayes_accuracy"] == c.bayes_accuracy(0.5).value
    # TPR at FPR = kappa is gamma itself (same computation)
    p01 = m["tpr_at_fpr"][1]
    assert p01["tpr"] == d["gamma"] and p01["interval"] == d["interval"]
    # every pre-existing key is still there
    for k in ("gamma", "kappa", "advantage", "method", "direction", "error", "interval", "log10_gamma",
              "log10_kappa", "settings", "details", "comparisons"):
        assert k in d


@pytest.mark.parametrize("q,extra", [("0.5", ["--method", "mc", "--mc-samples", "2000", "--seed", "0"]),
                                     ("1", ["--method", "closed-form"])])
def test_bound_dpsgd_membership_for_other_methods(cli, q, extra):
    """Whatever --method, the membership object is the certified PLD bracket."""
    d = cli.json(["bound", "dpsgd", "--noise-multiplier", "2", "--sample-rate", q, "--steps", "5",
                          "--kappa", "0.1", *extra])
    c = dpsgd_tradeoff(2.0, float(q), 5)
    assert d["membership"]["advantage_interval"] == list(c.advantage().interval)


def test_bound_dpsgd_membership_envelope(cli):
    d = cli.json(["bound", "dpsgd", "--noise-multiplier", "1e-6", "--sample-rate", "0.01", "--steps", "10",
                          "--kappa", "0.1"])
    m = d["membership"]
    assert d["method"] == "envelope" and m["method"] == "envelope"
    assert m["advantage"] == pytest.approx(1 - 0.99**10, rel=1e-9)  # never-sampled bound 1 - (1-q)^T
    assert m["tpr_at_fpr"][2]["fpr"] == 0.1 and m["tpr_at_fpr"][2]["tpr"] == pytest.approx(d["gamma"], rel=1e-12)


def test_library_membership_flag_equals_cli():
    b = rero_dpsgd(1.0, 0.01, 1000, 0.01, comparisons=Comparisons(membership=True))
    assert b.extras["membership"] == dpsgd_tradeoff(1.0, 0.01, 1000).membership_summary()
    assert "membership" not in rero_dpsgd(1.0, 0.01, 1000, 0.01).extras  # off by default


@pytest.mark.parametrize(
    "argv,name",
    [
        (BASE + ["--fpr", "nan"], "fpr"),
        (BASE + ["--fpr", "-1"], "fpr"),
        (BASE + ["--fpr", "0.1", "1.5"], "fpr"),
        (BASE + ["--fpr", "abc"], "--fpr"),
        (BASE + ["--grid", "3"], "grid"),
        (BASE + ["--grid", "1e400"], "--grid"),
        (BASE + ["--grid", "10", "--alpha-min", "0.5"], "alpha_min"),
        (BASE + ["--fpr", "0.1", "--grid", "10"], "not allowed"),
        (BASE, "--fpr"),
        (BASE + ["--fpr", "0.1", "--adjacency", "add"], "adjacency"),
        (BASE + ["--fpr", "0.1", "--prior-membership", "1"], "prior_membership"),
        (["bound", "tradeoff", "--noise-multiplier", "inf", "--sample-rate", "0.1", "--steps", "10", "--fpr", "0.1"],
         "noise_multiplier"),
        (["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "0", "--steps", "10", "--fpr", "0.1"],
         "sample_rate"),
        (["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "0.1", "--fpr", "0.1"], "--steps"),
    ],
)
def test_bad_arguments_one_line_exit_2(cli, argv, name):
    assert name in cli.error(argv)


def test_bound_dpsgd_path_stays_light_with_membership():
    code = (
        "import sys, io, contextlib\n"
        "from rerokit.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['bound', 'dpsgd', '--noise-multiplier', '1', '--sample-rate', '0.01', '--steps', '100',"
        " '--kappa', '0.01', '--json'])\n"
        "print(rc, 'torch' in sys.modules, 'dp_accounting' in sys.modules, 'scipy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False", "False", "False"]
