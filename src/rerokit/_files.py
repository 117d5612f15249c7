"""Checks of input and output paths, done before any work, and a safe array loader.

Every problem is one ``ValueError`` naming the parameter (the CLI option's dest name, e.g.
``samples``, ``out_dir``) and the path: an empty string, a folder where a file is expected (or the
reverse), a missing file, a device such as ``/dev/null``, a folder that cannot be written, a file
that is not what it should be. The CLI prints it as its one line on stderr (exit code 2).

Arrays are read with ``numpy.load(..., allow_pickle=False)`` only: no code in a crafted file runs.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Sequence

__all__ = ["check_input_file", "check_output_file", "check_output_dir", "check_data_path", "check_data_args",
           "check_regular_file", "check_not_an_input", "load_array", "check_zip_members"]


def _path(name: str, path: Any, kind: str) -> Path:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"{name} must be a {kind} path (a string), got {type(path).__name__}")
    if path.strip() == "":
        raise ValueError(f"{name} must be a {kind} path, got an empty string")
    if "\0" in path:
        raise ValueError(f"{name} must be a {kind} path without NUL characters, got {path!r}")
    return Path(path)


def _writable_ancestor(name: str, p: Path) -> None:
    """The nearest existing ancestor of ``p`` must be a folder this process can write into."""
    a = p.parent if str(p.parent) else Path(".")
    while not a.exists():
        if a.parent == a:
            break
        a = a.parent
    if not a.is_dir():
        raise ValueError(f"{name}: cannot create {p}: {a} is not a folder")
    if not os.access(a, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: cannot write into the folder {a} (permission denied)")


def check_data_path(path: Any) -> None:
    """Check ``--data-path``: None (not given), or an existing readable regular file or folder.

    What it holds is checked by the loader (:func:`rerokit.data.load_dataset`); this check needs
    no heavy import, so a command refuses a bad path before it imports torch.

    Args:
      path: the path (str or ``os.PathLike``), or None.

    Raises:
      TypeError: if ``path`` is neither None, a string nor a path-like.
      ValueError: if it is empty, contains a NUL character, does not exist, cannot be read, or is
        neither a regular file nor a folder (a pipe, a device, a socket: reading one could block).
    """
    if path is None:
        return
    p = _path("data_path", path, "file or folder")
    try:
        st = p.stat()
    except FileNotFoundError:
        raise ValueError(f"data_path: {p} does not exist (No such file or directory; data are read from local files only)") from None
    except OSError as exc:
        raise ValueError(f"data_path: cannot read {p} ({exc.strerror or type(exc).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        if not os.access(p, os.R_OK | os.X_OK):
            raise ValueError(f"data_path: cannot read the folder {p} (permission denied)")
        return
    check_regular_file("data_path", p)


def check_data_args(dataset: Any, data_path: Any) -> None:
    """``--dataset`` and ``--data-path`` checked together, without importing torch or reading the data.

    Args:
      dataset: the dataset name (one of :data:`rerokit.data.DATASETS`).
      data_path: its local file or folder, or None.

    Raises:
      ValueError: for an unknown name (a file name given as ``--dataset`` is pointed to
        ``--data-path``), a local dataset without a path, or a bad path (:func:`check_data_path`).
      TypeError: if ``dataset`` is not a string.
    """
    from rerokit._validate import printable
    from rerokit.data import DATASETS

    if not isinstance(dataset, str):
        raise TypeError(f"dataset must be a string (one of {', '.join(DATASETS)}), got {type(dataset).__name__}")
    if dataset not in DATASETS:
        hint = (f"; a file of your own goes to --data-path with --dataset mnist or cifar10"
                if any(c in dataset for c in "./\\") else "")
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}; got {printable(dataset)!r}{hint}")
    if dataset in ("mnist", "cifar10") and data_path is None:
        raise ValueError(f"dataset {dataset} needs a local path (--data-path); nothing is downloaded")
    if dataset in ("digits", "synthetic") and data_path is not None:  # it would be ignored, not read
        raise ValueError(f"--data-path is for --dataset mnist or cifar10; {dataset} is "
                         f"{'bundled with scikit-learn' if dataset == 'digits' else 'generated'} and reads no file")
    check_data_path(data_path)


def check_regular_file(name: str, path: Any) -> Path:
    """An existing, readable regular file: not a folder, pipe, device or socket (opening a FIFO blocks).

    Args:
      name: the parameter's name, used in the error message.
      path: the path (str or ``os.PathLike``).

    Returns:
      The path as a :class:`~pathlib.Path`.

    Raises:
      TypeError: if ``path`` is not a string or path-like.
      ValueError: if it is missing, not a regular file, or cannot be read.
    """
    p = _path(name, path, "file")
    try:
        st = p.stat()
    except FileNotFoundError:
        raise ValueError(f"{name}: No such file or directory: {p}") from None
    except OSError as exc:
        raise ValueError(f"{name}: cannot read {p} ({exc.strerror or type(exc).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{name} must be a file, got the directory {p}")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{name} must be a regular file, got {p} (a pipe, device or socket)")
    if not os.access(p, os.R_OK):
        raise ValueError(f"{name}: cannot read {p} (permission denied)")
    return p


def check_not_an_input(name: str, path: Any, inputs: dict[str, Any]) -> None:
    """Refuse an output path that is one of the command's input files (it would be overwritten).

    Compared as files (``os.path.samefile``: symlinks, hard links and other spellings of a path
    included), not as strings.

    Args:
      name: the output option, for the message.
      path: the output path (it may not exist yet).
      inputs: option name -> input path (None entries are skipped).

    Raises:
      ValueError: naming both options, if ``path`` is one of the inputs.
    """
    if path is None:
        return
    for opt, src in inputs.items():
        if src is None:
            continue
        try:
            same = os.path.samefile(path, src)
        except OSError:  # one of them does not exist (yet): not the same file
            same = False
        if same:
            raise ValueError(f"{name} {path} is the {opt} input file; it would be overwritten: write to another path")


def check_input_file(name: str, path: Any) -> Path:
    """An existing regular file that can be read (:func:`check_regular_file`; a pipe or device is refused).

    Args:
      name: the parameter's name, used in the error message.
      path: the path (str or ``os.PathLike``).

    Returns:
      The path as a :class:`~pathlib.Path`.

    Raises:
      TypeError: if ``path`` is not a string or path-like.
      ValueError: if it is empty, contains NUL, does not exist, is a folder, pipe, device or socket,
        or cannot be read.
    """
    return check_regular_file(name, path)


def check_output_file(name: str, path: Any) -> Path:
    """A path where a regular file can be written: not a folder, not a device, in a writable folder.

    Missing folders are created later by the writer.

    Args:
      name, path: as in :func:`check_input_file`.

    Returns:
      The path as a :class:`~pathlib.Path`.

    Raises:
      TypeError: as :func:`check_input_file`.
      ValueError: if it is empty, contains NUL, is a folder, an existing non-regular or unwritable
        file, or its nearest existing ancestor is not a writable folder.
    """
    p = _path(name, path, "file")
    if p.is_dir():
        raise ValueError(f"{name} must be a file path, got the directory {p}")
    if p.exists():
        if not p.is_file():
            raise ValueError(f"{name} must be a regular file, got {p} (a device, pipe or socket)")
        if not os.access(p, os.W_OK):
            raise ValueError(f"{name}: cannot write {p} (permission denied)")
    _writable_ancestor(name, p)
    return p


def check_output_dir(name: str, path: Any, files: Sequence[str] = ()) -> Path:
    """A folder that exists and is writable, or can be created.

    Args:
      name, path: as in :func:`check_input_file`.
      files: names of the files the command will write inside it; each must not be a folder or
        unwritable (default none).

    Returns:
      The path as a :class:`~pathlib.Path`.

    Raises:
      TypeError: as :func:`check_input_file`.
      ValueError: if it is empty, contains NUL, is an existing file, cannot be written or created,
        or one of ``files`` is a folder or cannot be written.
    """
    p = _path(name, path, "folder")
    if p.exists():
        if not p.is_dir():
            raise ValueError(f"{name} must be a folder, got the file {p}")
        if not os.access(p, os.W_OK | os.X_OK):
            raise ValueError(f"{name}: cannot write into the folder {p} (permission denied)")
        for f in files:
            q = p / f
            if q.is_dir():
                raise ValueError(f"{name}: {q} is a folder, but this command writes a file of that name there; "
                                 "remove or rename it, or use another folder")
            check_output_file(name, q)
    else:
        _writable_ancestor(name, p)
    return p


def load_array(name: str, path: Any):
    """The array in a ``.npy`` file, or in an ``.npz`` archive holding exactly one array.

    Read with ``allow_pickle=False``.

    Args:
      name, path: as in :func:`check_input_file` (the path of the file).

    Returns:
      The numpy array.

    Raises:
      TypeError: as :func:`check_input_file`.
      ValueError: for anything else than such an array - a missing or unreadable file, an empty
        file, text, a truncated or damaged file, an archive with several arrays, pickled Python
        objects; the message names ``name`` and the file.
    """
    import zipfile

    import numpy as np

    p = check_input_file(name, path)
    try:
        with open(p, "rb") as f:
            magic = f.read(6)
    except OSError as exc:
        raise ValueError(f"{name}: cannot read {p} ({exc.strerror or type(exc).__name__})") from None
    what = "an array saved with numpy.save (.npy) or numpy.savez (.npz with one array)"
    if not magic:
        raise ValueError(f"{name}: {p} is empty; expected {what}")

    def bad(exc: BaseException) -> ValueError:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "allow_pickle" in msg or "pickle" in msg.lower():
            return ValueError(f"{name}: {p} holds Python objects (pickled data), which rerokit does not load; "
                              "save a numeric array")
        return ValueError(f"{name}: {p} is damaged or truncated ({msg}); expected {what}")

    if magic == b"\x93NUMPY":
        with open(p, "rb") as f:
            check_npy_header(name, f, p.stat().st_size, str(p))
        try:
            arr = np.load(p, allow_pickle=False)
        except (ValueError, OSError, EOFError, TypeError) as exc:
            raise bad(exc) from None
        return arr
    if magic[:4] == b"PK\x03\x04":
        check_zip_members(name, p)
        try:
            with np.load(p, allow_pickle=False) as z:
                keys = list(z.files)
                if len(keys) != 1:
                    shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
                    raise ValueError(f"{name}: {p} is an .npz archive with {len(keys)} arrays"
                                     f"{' (' + shown + ')' if keys else ''}; give an .npy file or an .npz "
                                     "with exactly one array")
                arr = z[keys[0]]
        except ValueError as exc:
            if str(exc).startswith(f"{name}: "):
                raise
            raise bad(exc) from None
        except (OSError, EOFError, TypeError, zipfile.BadZipFile, KeyError) as exc:
            raise bad(exc) from None
        return arr
    raise ValueError(f"{name}: {p} is not a .npy or .npz file (no numpy header); expected {what}")


def check_zip_members(name: str, path: Any, factor: float = 3.0) -> None:
    """Refuse an ``.npz`` (zip) archive whose members would decompress to more than memory holds.

    The sizes are those the archive declares (``ZipInfo.file_size``: ``zipfile`` never reads more
    than that from a member), checked before anything is decompressed, so that a small crafted file
    (a compression bomb) is one error, not an out-of-memory kill.

    Args:
      name: the parameter's name, for the message.
      path: the archive.
      factor: copies of the decompressed data held at once by the reader (default 3: the data,
        a converted copy and a temporary).

    Raises:
      ValueError: if the archive cannot be read as a zip file, or its declared size times
        ``factor`` exceeds :func:`rerokit._resources.memory_limit`.
    """
    import zipfile

    from rerokit._resources import check_memory, format_bytes

    try:
        with zipfile.ZipFile(path) as z:
            total = sum(i.file_size for i in z.infolist())
            for info in z.infolist():  # each array's header: the shape it declares must be the data it holds
                if info.filename.endswith(".npy"):
                    with z.open(info) as f:
                        check_npy_header(name, f, info.file_size, f"{path} ({info.filename})")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        msg = " ".join(str(exc).split()) or type(exc).__name__
        if msg.startswith(f"{name}: "):
            raise
        raise ValueError(f"{name}: {path} is damaged or truncated ({msg})") from None
    check_memory(name, factor * total, f"{path} (its arrays decompress to {format_bytes(total)})",
                 hint="give a smaller file")


def check_npy_header(name: str, f: Any, size: int, where: str) -> None:
    """Refuse a ``.npy`` stream whose header declares more data than the stream holds.

    A crafted header (shape (1e11, 1e5) over 64 bytes of data) made numpy allocate for the declared
    shape: a MemoryError naming no file, or petabytes asked of the kernel. Only the header is read.

    Args:
      name: the parameter's name, for the message.
      f: a binary file object at the start of the ``.npy`` data.
      size: bytes of the whole ``.npy`` stream (file size, or the zip member's declared size).
      where: the file (and member) for the message.

    Raises:
      ValueError: if the header cannot be read, or declares more bytes than ``size`` minus the header.
    """
    import math

    import numpy as np

    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, _, dtype = fmt.read_array_header_2_0(f)
        else:
            raise ValueError(f"unknown .npy format version {version}")
    except (ValueError, OSError, EOFError, TypeError, SyntaxError) as exc:
        msg = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{name}: {where} has a damaged .npy header ({msg[:200]})") from None
    if dtype.hasobject:
        return  # refused by the reader (allow_pickle=False) with its own message
    declared = math.prod(int(d) for d in shape) * dtype.itemsize
    held = size - f.tell() if hasattr(f, "tell") else size
    if declared > held:
        raise ValueError(f"{name}: {where} is damaged or truncated: its header declares shape {tuple(shape)} of "
                         f"{dtype} ({declared:.3g} bytes) but it holds {held} bytes of data")
