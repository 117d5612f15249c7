"""Reading pickled data files without executing code.

``pickle.load`` runs whatever callable a file names (``os.system`` included) before the caller
can look at the result, so a crafted ``data_batch_1`` in a user-given folder is a code-execution
hole. :func:`safe_load` unpickles with an allow-list instead: the builtin containers, bytes, str
and numbers that the pickle opcodes build by themselves, plus exactly the globals that numpy
needs to rebuild an ``ndarray`` (``numpy.core.multiarray._reconstruct``, ``numpy.ndarray``,
``numpy.dtype``, ``numpy.core.multiarray.scalar``, ``numpy.core.numeric._frombuffer``) and ``_codecs.encode`` restricted to
latin-1 (Python 3 writes ``bytes`` in protocol-2 pickles through it). Any other global (a
function, a class) is refused *before* it is looked up, so nothing the file names can run.
"""

from __future__ import annotations

import codecs
import pickle
from typing import IO, Any

__all__ = ["UnsafePickleError", "safe_load"]


class UnsafePickleError(pickle.UnpicklingError):
    """The file names a global outside the allow-list (it was not imported or called)."""


def _latin1_encode(obj: Any, encoding: str = "latin1", errors: str = "strict") -> bytes:
    """``_codecs.encode`` as protocol-2 pickles of ``bytes`` use it: latin-1 text to bytes only."""
    try:
        latin1 = isinstance(encoding, str) and codecs.lookup(encoding).name == "iso8859-1"
    except LookupError:  # an unknown codec name: refused like any other codec
        latin1 = False
    if not isinstance(obj, str) or not latin1:
        raise UnsafePickleError(f"_codecs.encode is allowed only for latin-1 text, got encoding {encoding!r}")
    if errors != "strict":  # error handlers are looked up by name: only the default one
        raise UnsafePickleError(f"_codecs.encode is allowed only with errors='strict', got {errors!r}")
    return codecs.encode(obj, "latin1", "strict")


def _numpy_globals() -> dict[tuple[str, str], Any]:
    import numpy as np

    try:  # numpy >= 2 keeps these in numpy._core; pickles name either spelling
        from numpy._core import multiarray, numeric
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import multiarray, numeric  # type: ignore[no-redef]
    allowed: dict[tuple[str, str], Any] = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for pkg in ("numpy.core", "numpy._core"):
        allowed[(f"{pkg}.multiarray", "_reconstruct")] = multiarray._reconstruct
        allowed[(f"{pkg}.multiarray", "scalar")] = multiarray.scalar
        allowed[(f"{pkg}.numeric", "_frombuffer")] = numeric._frombuffer  # protocol 5 arrays
    return allowed


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, file: IO[bytes]):
        super().__init__(file, encoding="bytes")
        self._allowed = {("_codecs", "encode"): _latin1_encode, **_numpy_globals()}

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise UnsafePickleError(
                f"refusing to load the global {module}.{name}: only containers, numbers, strings and "
                "numpy arrays may appear in a data file"
            ) from None

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("persistent ids are not allowed in a data file")


def safe_load(file: IO[bytes]) -> Any:
    """Unpickle ``file`` (opened in binary mode) allowing only data, never code.

    Args:
      file: a binary file object positioned at the pickle.

    Returns:
      The object (bytes keys stay bytes, as ``pickle.load(f, encoding="bytes")`` gives for
      Python 2 pickles such as CIFAR-10's).

    Raises:
      UnsafePickleError: for any global outside the allow-list, or a persistent id (nothing it names
        is imported or called).
      pickle.UnpicklingError: for a damaged file (and ``EOFError`` for a truncated one), including
        one whose allowed callables raise on the arguments it gives them (a numpy reconstruction
        with a bad dtype, a nesting too deep to unpickle): one error type for every damaged file.
    """
    try:
        return _AllowListUnpickler(file).load()
    except (pickle.UnpicklingError, EOFError):
        raise
    except Exception as exc:  # noqa: BLE001 - an allowed callable raised on crafted arguments
        msg = " ".join(str(exc).split())[:120]
        raise pickle.UnpicklingError(f"damaged pickle ({type(exc).__name__}{': ' + msg if msg else ''})") from None
