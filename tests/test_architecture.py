"""The layer contracts of pyproject.toml ([tool.importlinter]) hold: imports only point down
(cli > report > experiments > attacks > training | opacus > risk > accounting | data > bounds),
and the pure-math layers never import torch or opacus. Checked with import-linter, the tool CI
also runs as ``lint-imports``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    out = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "BROKEN" not in out.stdout and "KEPT" in out.stdout


def test_import_rerokit_is_cheap_and_torch_free():
    """``import rerokit`` and the practitioner's entry point load no torch (issue 8's check)."""
    code = ("import rerokit, sys; rerokit.reconstruction_risk(noise_multiplier=1, sample_rate=0.01, steps=1000, "
            "prior=10); print('torch' in sys.modules, 'opacus' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False False"
