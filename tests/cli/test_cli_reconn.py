"""CLI: ``rerokit attack reconn`` (Balle et al. 2022 RecoNN attack)."""

import json

import pytest

from rerokit.cli import main


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Small tensors: one torch thread is faster (and much faster on a busy shared 2-core machine)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)

_SMALL = ["--dataset", "digits", "--shadow-models", "300", "--fixed-size", "100", "--epochs", "10", "--targets", "20",
          "--reconstructor-epochs", "5", "--reconstructor-hidden", "64,64", "--seed", "1", "--quiet"]


def test_reconn_json_keys_png_and_jsonl(capsys, tmp_path):
    png, out = tmp_path / "r.png", tmp_path / "r.jsonl"
    assert main(["attack", "reconn", *_SMALL, "--png", str(png), "--out", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    for k in ("mse", "nn_oracle_mse", "success", "success_rate", "kl", "nn_oracle_kl", "settings", "png"):
        assert k in d
    assert d["success"] == (d["mse"] < d["nn_oracle_mse"])
    assert 0 < d["mse"] < 1 and 0 < d["nn_oracle_mse"] < 1
    assert d["settings"]["seed"] == 1 and d["settings"]["shadow_models"] == 300 and d["settings"]["init"] == "known"
    assert png.stat().st_size > 1000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = out.read_text().splitlines()
    assert len(lines) == 21 and json.loads(lines[1])["kind"] == "trial"


def test_reconn_dp_random_init_table(capsys):
    assert main(["attack", "reconn", *_SMALL, "--epsilon", "10", "--random-init", "--no-png"]) == 0  # table output
    txt = capsys.readouterr().out
    # a verdict in words first, then the numbers with their intervals and whether they are estimates
    assert txt.startswith("\u2022 Reconstructor network")
    for k in ("mean MSE", "nearest-neighbour oracle MSE", "targets beaten the oracle on", "noise multiplier",
              "estimate"):
        assert k in txt


@pytest.mark.parametrize(
    "extra",
    [
        ["--shadow-models", "0"],
        ["--shadow-models", "x"],
        ["--epsilon", "nan"],
        ["--epsilon", "-1"],
        ["--delta", "1.5", "--epsilon", "1"],
        ["--fixed-size", "5000"],
        ["--targets", "0"],
        ["--epochs", "0"],
        ["--dataset", "bogus"],
        ["--hidden", "10,a"],
        ["--reconstructor-hidden", "0"],
        ["--momentum", "1"],
        ["--lr", "inf"],
        ["--shadow-models", "20000"],
        ["--threads", "-1"],
    ],
)
def test_reconn_bad_input_exit_2(capsys, extra):
    assert main(["attack", "reconn", "--quiet", "--no-png", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "Traceback" not in err[0]


def test_experiment_reconn_dpgd_files(capsys, tmp_path):
    argv = ["experiment", "reconn-dpgd", "--out-dir", str(tmp_path), "--epsilons", "2", "--shadow-models", "100",
            "--fixed-size", "50", "--epochs", "5", "--targets", "10", "--reconstructor-epochs", "3", "--quiet", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert [r["epsilon"] for r in d["rows"]] == ["inf", 2.0]  # non-private reference first
    assert d["rows"][0]["noise_multiplier"] == 0 and d["rows"][1]["noise_multiplier"] > 0
    assert (tmp_path / "reconn_dpgd.csv").exists() and (tmp_path / "reconn_dpgd.png").exists()
    assert main(argv) == 0  # the finished JSONL, same settings: reported again, nothing retrained
    assert json.loads(capsys.readouterr().out)["rows"] == d["rows"]
    assert main([*argv[:-3], "4", "--quiet", "--json"]) == 2  # other settings: refused, naming --resume
    assert "--resume" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [["--epsilons", "nan"], ["--epsilons", "0"], ["--clip", "-1"], ["--delta", "0"]])
def test_experiment_reconn_dpgd_bad_input(capsys, tmp_path, extra):
    assert main(["experiment", "reconn-dpgd", "--out-dir", str(tmp_path), "--quiet", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")
