"""Structure rules checked on the source: no private name crosses a module boundary, and no public
function takes more than 10 parameters (frozen dataclass parameter objects instead).

Both read the package's syntax trees (nothing is imported)."""

from __future__ import annotations

import ast
from pathlib import Path

import rerokit

PKG = Path(rerokit.__file__).resolve().parent

# Crossings that remain, listed exactly so that the list can only shrink (none today).
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str, str]] = set()

# Public functions with more than 10 parameters that are not yet converted to parameter objects
# (name -> parameter count): none. The test fails when one is added; parameter objects (frozen
# dataclasses such as DPSGDSettings, RiskOptions, Numerics, DataDescription) take their place.
KNOWN_LONG_SIGNATURES: dict[str, int] = {
}


def _modules():
    for p in sorted(PKG.rglob("*.py")):
        name = ".".join(p.relative_to(PKG.parent).with_suffix("").parts).removesuffix(".__init__")
        yield name, ast.parse(p.read_text(), str(p))


def _is_module(package: str, name: str) -> bool:
    """``from package import name`` names a module of rerokit (a package-internal module such as
    ``rerokit._lazy``), not a private function or constant of another module."""
    base = PKG.parent.joinpath(*package.split("."), name)
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _private_imports() -> set[tuple[str, str, str]]:
    found = set()
    for mod, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                top = node.module.split(".")[0]
                if top not in ("rerokit", "opacus"):
                    continue
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__") and not _is_module(node.module, a.name):
                        found.add((mod, node.module, a.name))
            elif isinstance(node, ast.Attribute) and node.attr in ("_get_flat_grad_sample", "_ACCOUNTANTS"):
                found.add((mod, "opacus", node.attr))  # Opacus' private API: use p.grad_sample, register_accountant
    return found


def _private_names(tree: ast.AST) -> set[str]:
    """The private names a module defines: functions, classes, assigned names and attributes."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            out.add(n.attr)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return {x for x in out if x.startswith("_") and not x.startswith("__")}


def _private_attribute_reads() -> set[tuple[str, str]]:
    """``obj._name`` where ``_name`` is a private name of another rerokit module and not of this one
    (``self``/``cls`` excluded): a private method or field used from outside its module, which the
    import check alone does not see (e.g. ``pld._parts(...)`` on another module's object)."""
    trees = dict(_modules())
    own = {m: _private_names(t) for m, t in trees.items()}
    anywhere = set().union(*own.values())
    found = set()
    for mod, tree in trees.items():
        for n in ast.walk(tree):
            if (isinstance(n, ast.Attribute) and n.attr in anywhere and n.attr not in own[mod]
                    and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"))):
                found.add((mod, n.attr))
    return found


# Private attributes read across modules that remain, listed exactly so the list can only shrink (none).
KNOWN_PRIVATE_ATTRIBUTE_READS: set[tuple[str, str]] = set()


def _assert_only_known(found: set, known: set, what: str, fix: str, known_name: str) -> None:
    """A ratchet: nothing beyond the ``known`` list, and the list shrinks as entries are fixed."""
    new = found - known
    assert not new, f"{what} ({fix}): {sorted(new)}"
    fixed = known - found
    assert not fixed, f"fixed: remove {sorted(fixed)} from {known_name}"


def test_no_private_attribute_is_read_across_modules():
    _assert_only_known(_private_attribute_reads(), KNOWN_PRIVATE_ATTRIBUTE_READS,
                       "private attributes read across modules", "add a public method instead",
                       "KNOWN_PRIVATE_ATTRIBUTE_READS")


def test_no_private_name_crosses_a_module():
    _assert_only_known(_private_imports(), KNOWN_PRIVATE_IMPORTS, "private names imported across modules",
                       "add a public helper instead", "KNOWN_PRIVATE_IMPORTS")


def _long_signatures() -> dict[str, int]:
    out: dict[str, int] = {}

    def visit(node, mod: str, prefix: str, public: bool) -> None:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = ch.args
                n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                if prefix and a.args and a.args[0].arg in ("self", "cls"):
                    n -= 1
                if public and not ch.name.startswith("_") and n > 10:
                    out[f"{mod}:{prefix}{ch.name}"] = n
            elif isinstance(ch, ast.ClassDef):
                visit(ch, mod, prefix + ch.name + ".", public and not ch.name.startswith("_"))

    for mod, tree in _modules():
        visit(tree, mod, "", True)
    return out


def test_public_functions_take_at_most_10_parameters():
    now = _long_signatures()
    grown = {k: v for k, v in now.items() if v > KNOWN_LONG_SIGNATURES.get(k, 10)}
    assert not grown, f"public functions with more than 10 parameters (use a parameter object): {grown}"
    shrunk = {k: v for k, v in KNOWN_LONG_SIGNATURES.items() if now.get(k, 0) < v}
    assert not shrunk, f"fewer parameters now: update KNOWN_LONG_SIGNATURES to {shrunk} -> {now}"
