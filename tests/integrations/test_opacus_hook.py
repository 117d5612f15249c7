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
