"""``PrivacyEngine(accountant="rerokit")`` works after a bare ``import rerokit``, which imports no torch.

Each case runs in a fresh interpreter (the registration depends on import order).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("opacus", reason="needs the torch extra (opacus)")


def _run(code: str) -> str:
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_rerokit_first_then_opacus():
    out = _run("import sys, rerokit\n"
               "assert 'torch' not in sys.modules and 'opacus' not in sys.modules\n"
               "from opacus import PrivacyEngine\n"
               "a = PrivacyEngine(accountant='rerokit').accountant\n"
               "from rerokit.opacus import RiskAccountant\n"
               "assert isinstance(a, RiskAccountant)\n"
               "from opacus.accountants.registry import _ACCOUNTANTS\n"
               "assert _ACCOUNTANTS['rerokit'] is RiskAccountant\n"   # the factory replaced itself by the class
               "print(type(a).__name__, a.mechanism())")
    assert out == "RiskAccountant rerokit"


def test_opacus_first_then_rerokit():
    assert _run("from opacus import PrivacyEngine\nimport rerokit\n"
                "print(type(PrivacyEngine(accountant='rerokit').accountant).__name__)") == "RiskAccountant"


def test_the_finder_leaves_once_it_has_fired_and_other_accountants_still_work():
    out = _run("import sys, rerokit\n"
               "from rerokit._opacus_hook import _Finder\n"
               "assert any(isinstance(f, _Finder) for f in sys.meta_path)\n"
               "from opacus import PrivacyEngine\n"
               "assert not any(isinstance(f, _Finder) for f in sys.meta_path)\n"
               "print(type(PrivacyEngine(accountant='prv').accountant).__name__)")
    assert out == "PRVAccountant"


def test_the_accountant_is_found_behind_an_opacus_optimizer_and_its_wrappers():
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    from rerokit.integrations._monitor import find_accountant

    engine = PrivacyEngine(accountant="rerokit")
    model = torch.nn.Linear(3, 2)
    data = DataLoader(TensorDataset(torch.randn(20, 3), torch.zeros(20, dtype=torch.long)), batch_size=5)
    _, opt, _ = engine.make_private(module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                                    data_loader=data, noise_multiplier=1.0, max_grad_norm=1.0)

    class Wrapper:  # what accelerate / Lightning put around the optimizer
        def __init__(self, optimizer):
            self.optimizer = optimizer

    assert find_accountant(opt) is engine.accountant
    assert find_accountant(Wrapper(Wrapper(opt))) is engine.accountant
    assert find_accountant(torch.optim.SGD(model.parameters(), lr=0.1)) is None  # not an Opacus optimizer
