"""RecoNN against weaker adversaries (Balle et al. 2022, Sec. VI-B) at tiny scale: what each
adversary sees, how batches are seeded, resume."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rerokit.experiments import reconn_weaker as W
from rerokit.experiments.reconn_weaker import ReconnCell, WeakConfig, run_weaker_cells

TINY = WeakConfig(fixed_size=20, shadow_models=6, targets=3, epochs=2, reconstructor_epochs=1)


def _setup():
    from rerokit.attacks import reconn as R
    from rerokit.data import load_dataset

    split = R.split_dataset(load_dataset("digits"), TINY.fixed_size, TINY.targets, TINY.seed)
    fm = R.functional_mlp(64, TINY.hidden, 10, "elu")
    return split, fm


def test_known_seed_gives_every_model_the_same_batches_and_unknown_does_not():
    split, fm = _setup()
    X = np.repeat(split.X_eval[:1], 3, axis=0)  # three models on the same target
    y = np.repeat(split.y_eval[:1], 3)
    known = W._train(TINY, ReconnCell(4, "known"), fm, split, X, y, 0)
    unknown = W._train(TINY, ReconnCell(4, "unknown"), fm, split, X, y, 0)
    # the same batches: equal up to float round-off of the batched engine
    assert torch.allclose(known[0], known[1], atol=1e-6) and torch.allclose(known[1], known[2], atol=1e-6)
    assert (unknown[0] - unknown[1]).abs().max() > 1e-3
    # a full batch draws no batches: the seed is irrelevant
    full = [W._train(TINY, ReconnCell(21, s), fm, split, X, y, 1) for s in ("known", "unknown")]
    assert torch.allclose(full[0], full[1], atol=1e-6)


def test_face_shadow_targets_are_8x8_images_in_the_unit_range():
    X, y = W._faces((1, 8, 8), 10, 0)
    assert X.shape == (200, 64) and 0 <= X.min() and X.max() <= 1 and X.std() > 0.05
    assert set(np.unique(y)) <= set(range(10))


def test_features_are_what_each_adversary_sees():
    split, fm = _setup()
    theta = torch.stack([fm.init_flat(s) for s in (1, 2)])
    probe = split.X_pool[:64]
    assert torch.equal(W._features(ReconnCell(8), fm, theta, probe), theta)
    logits = W._features(ReconnCell(8, access="logits"), fm, theta, probe)
    assert torch.allclose(logits[1], fm.logits(theta[1], torch.as_tensor(probe)).reshape(-1))
    last = W._features(ReconnCell(8, access="last_layer"), fm, theta, probe)
    p = fm.unflatten(theta[0])
    names = [k for k in p if k.endswith("weight")]
    out_w, out_b = p[names[-1]], p[names[-1].replace("weight", "bias")]
    assert torch.equal(last[0], torch.cat([out_w.reshape(-1), out_b.reshape(-1)]))


def test_cells_run_resume_and_report_against_the_oracle(tmp_path):
    cells = [ReconnCell(21), ReconnCell(4, "unknown"), ReconnCell(21, shadow_data="faces"),
             ReconnCell(21, shadow_data="shifted")]
    res = run_weaker_cells(tmp_path, cells, TINY, progress=False)
    rows = res["rows"]
    assert [r["batch_size"] for r in rows] == [21, 4, 21, 21] and rows[2]["shadow_data"] == "faces"
    assert rows[0]["steps"] == 2 and rows[1]["steps"] == 2 * 6  # T = epochs * ceil(21 / 4)
    assert rows[1]["sample_rate"] == pytest.approx(4 / 21)
    for r in rows:
        assert 0 <= r["success_rate"] <= 1 and r["mse"] > 0 and r["nn_oracle_mse"] >= 0
    before = (tmp_path / "reconn_weaker.jsonl").read_text()
    again = run_weaker_cells(tmp_path, cells, TINY, resume=True, progress=False)
    assert (tmp_path / "reconn_weaker.jsonl").read_text() == before  # nothing retrained or appended
    assert again["rows"] == rows
    assert (tmp_path / "reconn_weaker.png").stat().st_size > 0


def test_bad_cells_are_refused():
    with pytest.raises(ValueError, match="access"):
        ReconnCell(8, access="gradients")
    with pytest.raises(ValueError, match="distinct"):
        run_weaker_cells("unused", [ReconnCell(8), ReconnCell(8)], TINY, progress=False)
    with pytest.raises(ValueError, match="momentum"):
        WeakConfig(momentum=1.5)
