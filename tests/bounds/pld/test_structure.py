"""Structure of the bounds layer (issue 17): no private name crosses a module boundary inside
``rerokit.bounds``, and the trade-off curve and the practitioner's entry point use only the PLD
package's public methods."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "src" / "rerokit"
BOUNDS = ROOT / "bounds"


def _modules() -> list[Path]:
    return sorted(BOUNDS.rglob("*.py"))


def _private_crossings(path: Path) -> list[str]:
    """``from x import _y`` and ``module_alias._y`` for rerokit modules imported in ``path``."""
    tree = ast.parse(path.read_text())
    bad, module_aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rerokit") or (
            isinstance(node, ast.ImportFrom) and node.level > 0
        ):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    bad.append(f"{path.name}:{node.lineno}: from {node.module} import {a.name}")
                # "from rerokit.bounds import dpsgd as dp" binds a module
                if (ROOT / (node.module or "").replace("rerokit.", "", 1).replace(".", "/") / f"{a.name}.py").exists():
                    module_aliases.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("rerokit"):
                    module_aliases.add(a.asname or a.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in module_aliases:
                bad.append(f"{path.name}:{node.lineno}: {base.id}...{node.attr}")
    return bad


def test_no_private_name_crosses_a_module_boundary_in_bounds():
    assert len(_modules()) > 15  # the walk sees the package (pld/ included)
    bad = [b for p in _modules() for b in _private_crossings(p)]
    assert bad == []


def test_the_checker_catches_both_forms(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from rerokit.bounds.dpsgd import _x\nfrom rerokit.bounds import dpsgd as d\ny = d._z\n")
    assert len(_private_crossings(f)) == 2


def _private_reads_off_self(path: Path) -> list[str]:
    """Attribute reads ``obj._name`` where obj is not ``self``/``cls`` (private state of another object)."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                bad.append(f"{path.name}:{node.lineno}: .{node.attr}")
    return bad


def test_tradeoff_and_risk_use_only_public_pld_methods():
    assert _private_reads_off_self(BOUNDS / "tradeoff.py") == []
    risk = (ROOT / "risk.py").read_text()
    assert "._pld" not in risk
    assert _private_crossings(ROOT / "risk.py") == []
