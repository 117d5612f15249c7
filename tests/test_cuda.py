"""The CUDA paths, compared with the CPU on the same seeds (skipped where no GPU is visible; CI has none).

Every engine draws its random numbers on the CPU and moves them (``rerokit.training.devices``), so a
run on the GPU sees the same data, masks, noise and restarts as on the CPU; only the kernels differ,
so floating-point results agree to rounding and discrete decisions agree except at near-ties. Each
test runs one small job on both devices and checks that: the same records (seeds, priors, targets),
the recorded device, and results within a tolerance set by rounding (stated per test).

``REROKIT_TEST_DEVICE=cpu python -m pytest tests/test_cuda.py`` runs the same comparisons with the CPU
on both sides (a dry run of this file without a GPU: everything must then agree to the bit or the
tolerance).
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

DEV = os.environ.get("REROKIT_TEST_DEVICE", "cuda")
pytestmark = [pytest.mark.torch,
              pytest.mark.skipif(DEV.startswith("cuda") and not torch.cuda.is_available(), reason="no CUDA device")]


def _both(cli, argv, tmp_path=None):
    """The command's --json result on the CPU and on DEV (and the JSONL records when ``--out`` is used)."""
    out = []
    for dev in ("cpu", DEV):
        extra = ["--out", str(tmp_path / f"{dev}.jsonl")] if tmp_path is not None else []
        d = cli.json([*argv, "--device", dev, *extra])
        recs = None
        if tmp_path is not None:
            lines = [json.loads(s) for s in (tmp_path / f"{dev}.jsonl").read_text().splitlines()]
            recs = [r for r in lines if r.get("kind") == "trial"]
        out.append((d, recs))
    return out


def test_prior_aware_audit_same_trials_and_decisions(cli, tmp_path):
    """Hayes et al. 2023 prior-aware audit (64 trials, 20 full-batch steps): the same trials on both
    devices, >= 95% of the guesses equal (a guess is an argmax over 10 candidates; float32 kernels
    may flip a near-tie)."""
    (c, rc), (g, rg) = _both(cli, ["audit", "prior-aware", "--noise-multiplier", "1", "--trials", "64",
                                   "--steps", "20", "--n-known", "99", "--seed", "0", "--no-progress"], tmp_path)
    assert g["settings"]["device"] == DEV and c["settings"]["device"] == "cpu"
    assert [(r["seed"], r["prior"], r["target"]) for r in rc] == [(r["seed"], r["prior"], r["target"]) for r in rg]
    agree = np.mean([a["guess"]["alg2"] == b["guess"]["alg2"] for a, b in zip(rc, rg)])
    assert agree >= 0.95, agree
    assert abs(c["success"] - g["success"]) <= 0.05
    assert c["gamma"] == g["gamma"]  # the certified bound does not depend on the device


def test_gradient_audit_mse_agrees(cli, tmp_path):
    """The gradient-based reconstruction attack (Hayes et al. 2023 Sec. 5): the same trials, and the
    mean squared error within 5% relative (40 optimiser iterations in float32 on both devices)."""
    (c, rc), (g, rg) = _both(cli, ["audit", "gradient", "--noise-multiplier", "1", "--trials", "4", "--steps", "4",
                                   "--n-known", "29", "--iterations", "40", "--restarts", "2", "--seed", "0",
                                   "--no-progress"], tmp_path)
    assert g["settings"]["device"] == DEV
    assert [r["seed"] for r in rc] == [r["seed"] for r in rg]
    assert g["mse"] == pytest.approx(c["mse"], rel=0.05)


def test_reconstructor_network_attack_agrees(cli):
    """RecoNN (Balle et al. 2022): 64 shadow models trained on each device; the reconstruction MSE of
    the 4 targets within 10% relative (two epochs of Adam on the reconstructor amplify rounding) and the
    non-private release identical up to rounding (its accuracy equal)."""
    c, g = (cli.json(["attack", "reconn", "--shadow-models", "64", "--fixed-size", "50", "--targets", "4",
                      "--epochs", "2", "--reconstructor-epochs", "2", "--quiet", "--no-png", "--device", d])
            for d in ("cpu", DEV))
    assert g["settings"]["device"] == DEV
    assert g["released_model_accuracy"] == pytest.approx(c["released_model_accuracy"], abs=0.01)
    assert g["shadow_train_mse"] == pytest.approx(c["shadow_train_mse"], rel=0.1)
    assert g["mse"] == pytest.approx(c["mse"], rel=0.1)


def test_one_run_audit_agrees(cli):
    """One-run white-box canary audit (Nasr et al. 2023; Steinke et al. 2023): the certified side is
    device-free (equal), the canary accuracy within 0.03 and both empirical epsilons below it."""
    c, g = (cli.json(["audit", "one-run", "--noise-multiplier", "1", "--canaries", "200", "--steps", "50",
                      "--sample-rate", "0.1", "--seed", "0", "--no-progress", "--device", d]) for d in ("cpu", DEV))
    assert g["certified_epsilon"] == c["certified_epsilon"] and g["certified_mu"] == c["certified_mu"]
    assert abs(g["accuracy_all"] - c["accuracy_all"]) <= 0.03
    assert not g["claim_rejected"] and g["epsilon_lower"] <= g["certified_epsilon"]


def test_fisher_information_bound_agrees(cli):
    """Guo et al. 2022's dFIL of output perturbation on the digits (logistic regression): the per-sample
    Jacobians on each device give the same dFIL and MSE bounds to 1e-4 relative."""
    c, g = (cli.json(["bound", "fil", "--noise-std", "1", "--device", d]) for d in ("cpu", DEV))
    for k in ("dfil_min", "dfil_median", "dfil_max", "mse_lower_bound_median"):
        assert g[k] == pytest.approx(c[k], rel=1e-4), k


def test_fil_glm_experiment_agrees(cli, tmp_path):
    """`experiment fil-glm` (Guo et al. 2022, output perturbation of a GLM): 200 draws per device,
    the summary numbers within 1e-3 relative."""
    c, g = (cli.json(["experiment", "fil-glm", "--draws", "200", "--seed", "0", "--no-progress",
                      "--out-dir", str(tmp_path / d), "--device", d]) for d in ("cpu", DEV))

    def numbers(d, prefix=""):
        for k, v in d.items():
            if isinstance(v, dict):
                yield from numbers(v, f"{prefix}{k}.")
            elif isinstance(v, float) and "time" not in k and "seconds" not in k:
                yield f"{prefix}{k}", v

    cn, gn = dict(numbers(c)), dict(numbers(g))
    assert cn and cn.keys() == gn.keys()
    for k in cn:
        assert gn[k] == pytest.approx(cn[k], rel=1e-3, abs=1e-9), k


def _opacus_run(device: str, steps: int = 10):
    pytest.importorskip("opacus")
    from opacus import PrivacyEngine
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from rerokit.opacus import GradientCanaryAudit

    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(64, 16, generator=g), torch.randint(0, 4, (64,), generator=g)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 24), nn.ELU(), nn.Linear(24, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(X, y), batch_size=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = PrivacyEngine(accountant="rdp").make_private(
            module=model, optimizer=opt, data_loader=loader, noise_multiplier=1.0, max_grad_norm=1.0,
            poisson_sampling=False)
    audit = GradientCanaryAudit(opt, canaries=400, sample_rate=1.0, seed=1)
    for _ in range(steps):
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb.to(device)), yb.to(device)).backward()
            opt.step()
    return audit.result().bound


@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_opacus_canary_audit_on_the_gpu():
    """A one-run canary audit inside a real Opacus run whose model lives on the GPU: the canaries are
    written and read on the parameters' device; honest noise is not rejected and the empirical epsilon
    stays below the certified one, as on the CPU."""
    c, g = _opacus_run("cpu"), _opacus_run(DEV)
    assert g.claim.epsilon == c.claim.epsilon
    assert not g.claim.rejected and 0 < g.epsilon_lower <= g.claim.epsilon
