"""``PrivacyEngine(accountant="rerokit")`` after a bare ``import rerokit``, without importing torch.

Opacus looks accountants up by name in ``opacus.accountants.registry._ACCOUNTANTS`` and calls the
entry to build one. ``import rerokit`` must stay cheap and torch-free, so it cannot import
``rerokit.opacus`` (which needs opacus, hence torch). Instead :func:`install` puts a small finder on
``sys.meta_path`` that waits for Opacus' registry module to be imported (by the user's own ``import
opacus``) and then registers a factory under ``"rerokit"``; the factory imports
:mod:`rerokit.opacus` on first use, which replaces it with the real :class:`~rerokit.opacus.RiskAccountant`
class. If Opacus was imported before rerokit, the factory is registered at once. The finder
removes itself once it has fired. The trade-off: one entry on ``sys.meta_path`` until Opacus is
imported (it answers only for that one module name).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["install", "REGISTRY_MODULE"]

REGISTRY_MODULE = "opacus.accountants.registry"
_NAME = "rerokit"


def _risk_accountant() -> Any:
    """Build a :class:`rerokit.opacus.RiskAccountant` (importing rerokit.opacus registers the class itself)."""
    import importlib

    # by name: this runs only when Opacus asks for the accountant (so opacus and torch are loaded);
    # a static import here would make every module that imports `rerokit` depend on opacus
    return importlib.import_module("rerokit.opacus").RiskAccountant()


def _register(registry: Any) -> None:
    table = getattr(registry, "_ACCOUNTANTS", None)
    if isinstance(table, dict) and _NAME not in table:
        table[_NAME] = _risk_accountant


class _Loader:
    """Wraps the registry module's own loader; registers the factory once the module has run."""

    def __init__(self, loader: Any):
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        _register(module)

    def __getattr__(self, name: str) -> Any:  # get_code, get_source, ... of the wrapped loader
        return getattr(self.loader, name)


class _Finder:
    """A meta-path finder that answers only for Opacus' accountant registry."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != REGISTRY_MODULE:
            return None
        uninstall()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


def uninstall() -> None:
    """Remove the finder (done by itself once it fires)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]


def install() -> None:
    """Make ``"rerokit"`` an Opacus accountant name now (Opacus loaded) or when Opacus is imported."""
    registry = sys.modules.get(REGISTRY_MODULE)
    if registry is not None:
        _register(registry)
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
