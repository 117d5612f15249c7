"""Balle et al. (2022) Alg. 2, the informed membership-inference game, at tiny scale."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy import stats

from rerokit.experiments.balle_mia import MIAConfig, informed_mia_figure, run_informed_mia

TINY = dict(fixed_size=30, epochs=5, shadow_pairs=2)


def test_known_init_without_noise_is_won_every_time_by_the_trivial_strategy():
    # deterministic training: the adversary's own A(D- u {z_b}) is the released model (the paper's remark)
    res = run_informed_mia(MIAConfig(**TINY), 12, progress=False, chunk_size=5)
    assert res["results"]["shadow"].value == 1.0
    assert res["results"]["loss"].value == 1.0
    assert all(min(r["dist0"], r["dist1"]) < 1e-4 for r in res["records"])
    assert res["bound"] is None
    bits = [r["b"] for r in res["records"]]
    assert 0 < sum(bits) < len(bits)  # both candidates were used


def test_recorded_losses_are_the_cross_entropy_of_the_released_model():
    from rerokit.attacks.reconn import TABLE_V, ReconData, functional_mlp, split_dataset, train_models
    from rerokit.data import load_dataset

    cfg = MIAConfig(**TINY)
    rec = run_informed_mia(cfg, 3, progress=False)["records"][1]
    sp = split_dataset(load_dataset("digits"), cfg.fixed_size, 2, cfg.seed)
    # trial 1 of 3 alone, trained independently of the block
    X_t = np.repeat(sp.X_eval[rec["b"]][None], 3, axis=0)
    y_t = np.repeat(sp.y_eval[rec["b"]], 3)
    theta = train_models(ReconData(sp.X_fixed, sp.y_fixed, X_t, y_t),
                         settings=TABLE_V.replace(steps=cfg.epochs, momentum=cfg.momentum), init_seed=0,
                         models=(1, 2))[0]
    fm = functional_mlp(64, (10,), 10, "elu")
    for c in (0, 1):
        logits = fm.logits(theta, torch.as_tensor(sp.X_eval[c : c + 1]))
        want = float(torch.nn.functional.cross_entropy(logits, torch.as_tensor(sp.y_eval[c : c + 1])))
        assert rec[f"loss{c}"] == pytest.approx(want, rel=1e-5)


def test_dp_bound_is_the_gaussian_bayes_accuracy_and_caps_the_attacks(tmp_path):
    cfg = MIAConfig(**TINY, epsilon=2.0)
    sigma = cfg.noise_multiplier
    assert cfg.bound() == pytest.approx(stats.norm.cdf(math.sqrt(5) / sigma), rel=1e-12)
    res = informed_mia_figure(tmp_path, cfg, trials=40, inits=("known",), progress=False)
    for r in res["rows"]:
        assert r["ci_low"] <= r["bound"]  # the success never provably exceeds the certified ceiling
    lines = (tmp_path / "informed_mia_known.jsonl").read_text().splitlines()
    assert len(lines) == 41  # header + one line per trial
    header = json.loads(lines[0])["settings"]
    assert header["seed"] == 0 and header["epsilon"] == 2.0 and header["noise_multiplier"] == pytest.approx(sigma)
    assert (tmp_path / "informed_mia.png").stat().st_size > 0


def test_resume_appends_only_the_missing_trials(tmp_path):
    out = tmp_path / "mia.jsonl"
    cfg = MIAConfig(**TINY, init="random")
    first = run_informed_mia(cfg, 4, out=str(out), progress=False, chunk_size=2)
    text = out.read_text()
    more = run_informed_mia(cfg, 6, out=str(out), resume=True, progress=False, chunk_size=2)
    assert out.read_text().startswith(text)
    assert [r["b"] for r in more["records"][:4]] == [r["b"] for r in first["records"]]
    fresh = run_informed_mia(cfg, 6, progress=False, chunk_size=2)
    assert [r["loss0"] for r in fresh["records"]] == pytest.approx([r["loss0"] for r in more["records"]])


def test_bad_settings_are_refused_before_training():
    with pytest.raises(ValueError, match="init"):
        MIAConfig(init="maybe")
    with pytest.raises(ValueError, match="momentum"):
        MIAConfig(momentum=1.0)
    with pytest.raises(ValueError, match="trials"):
        run_informed_mia(MIAConfig(**TINY), 0, progress=False)


def test_cli_interrupted_run_keeps_finished_blocks_and_resume_repeats_none(cli, tmp_path, monkeypatch):
    import rerokit.attacks.reconn as R

    argv = ["experiment", "balle-mia", "--trials", "150", "--inits", "known", "--fixed-size", "20", "--epochs", "2",
            "--shadow-pairs", "1", "--seed", "4", "--workers", "1", "--no-progress"]
    straight, _ = cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "a")])
    ref = (tmp_path / "a" / "informed_mia_known.jsonl").read_text().splitlines()
    orig = R.train_models
    calls = []

    def interrupt_second_block(*a, **k):  # a block trains its released models, then the adversary's pair
        calls.append(1)
        if len(calls) > 2:
            raise KeyboardInterrupt
        return orig(*a, **k)

    monkeypatch.setattr(R, "train_models", interrupt_second_block)
    code, out, err = cli.run([*argv, "--out-dir", str(tmp_path / "b")])
    assert code == 130 and "resume" in err and out == ""
    part = (tmp_path / "b" / "informed_mia_known.jsonl").read_text().splitlines()
    assert len(part) == 101 and part == ref[:101]  # header + the finished block of 100 trials
    calls.clear()
    monkeypatch.setattr(R, "train_models", lambda *a, **k: (calls.append(1), orig(*a, **k))[1])
    resumed, _ = cli.json_and_stderr([*argv, "--out-dir", str(tmp_path / "b"), "--resume"])
    assert len(calls) == 2  # only the second block: its released models and the adversary's pair
    assert (tmp_path / "b" / "informed_mia_known.jsonl").read_text().splitlines() == ref
    assert resumed["rows"] == straight["rows"] and resumed["seed"] == 4
    # other settings on the same files: refused with one line
    assert "other settings" in cli.error([*argv[:-4], "5", "--no-progress", "--out-dir", str(tmp_path / "b"),
                                          "--resume"])
