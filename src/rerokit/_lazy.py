"""Lazy re-exports for a package's ``__init__`` (PEP 562): a name is imported on first use, so
importing the package stays cheap (``import rerokit`` loads no torch, scipy or matplotlib)."""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["lazy_getattr"]


def lazy_getattr(namespace: dict[str, Any], exports: dict[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a package that re-exports ``exports`` lazily.

    On first access of ``name`` it imports ``exports[name]`` and stores the value in
    ``namespace``, so later accesses are plain attribute lookups.

    Args:
      namespace: the package's ``globals()``.
      exports: name -> the module that defines it.

    Returns:
      The ``__getattr__`` function; it raises ``AttributeError`` for any other name.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if name in exports:
            import importlib

            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
