"""Datasets as numpy arrays (no torch): embedded digits, local MNIST / CIFAR-10 files, synthetic.

Every loader returns a :class:`Dataset` with images channel-first, ``X`` of shape
``(n, channels, height, width)`` (or ``(n, d)`` for tabular synthetic data), float32 in
``[0, data_range]`` with ``data_range = 1``, and integer labels ``y``.

Nothing is downloaded: MNIST and CIFAR-10 are read from files the user provides, in their
original formats (IDX, optionally gzipped; CIFAR-10 python pickles) or as ``.npz``/``.npy``.
"""

from __future__ import annotations

import gzip
import os
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rerokit._validate import check_choice, check_int

__all__ = ["Dataset", "load_dataset", "load_digits", "load_mnist", "load_cifar10", "synthetic_uniform", "DATASETS",
           "DATASET_SHAPES"]

DATASETS = ("digits", "mnist", "cifar10", "synthetic")

DATASET_SHAPES = {"digits": (1, 8, 8), "mnist": (1, 28, 28), "cifar10": (3, 32, 32)}
"""Shape (channels, height, width) of one image of each image dataset (the one home of these sizes)."""


@dataclass(frozen=True)
class Dataset:
    """An in-memory dataset; ``X`` in ``[0, data_range]``, ``y`` integer labels.

    Attributes:
      name: the dataset's name ("digits", "mnist", "cifar10" or "synthetic").
      X: float32 array of shape (n, channels, height, width), or (n, d) for tabular data.
      y: int64 labels of shape (n,), in [0, num_classes).
      num_classes: number of classes.
      data_range: upper end R of the values (default 1).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    num_classes: int
    data_range: float = 1.0

    @property
    def n(self) -> int:
        """Number of examples."""
        return int(self.X.shape[0])

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """Shape of one example, ``X.shape[1:]``."""
        return tuple(self.X.shape[1:])

    @property
    def dim(self) -> int:
        """Number of values per example (the product of ``sample_shape``)."""
        return int(np.prod(self.X.shape[1:]))

    @property
    def flat(self) -> np.ndarray:
        """``X`` reshaped to ``(n, d)``."""
        return self.X.reshape(self.n, -1)

    def subset(self, idx: np.ndarray | list[int]) -> "Dataset":
        """The examples at ``idx`` as a new :class:`Dataset` (same name, classes and range).

        Args:
          idx: integer indices (or a boolean mask) into the examples.

        Returns:
          The :class:`Dataset` of the selected examples (copies, by numpy fancy indexing).
        """
        idx = np.asarray(idx)
        return Dataset(self.name, self.X[idx], self.y[idx], self.num_classes, self.data_range)


def load_digits() -> Dataset:
    """scikit-learn's bundled 8x8 handwritten digits (1797 images), scaled from 0..16 to [0, 1].

    Reads the CSV that ships inside scikit-learn directly (the same bytes
    ``sklearn.datasets.load_digits`` parses) without importing scikit-learn, whose import costs
    about a second; falls back to the scikit-learn API if the file is not where expected.
    """
    import importlib.util

    spec = importlib.util.find_spec("sklearn")
    csv = None
    if spec is not None and spec.origin is not None:
        csv = Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz"
    if csv is not None and csv.exists():
        raw = np.loadtxt(csv, delimiter=",", dtype=np.float32)
        images, target = raw[:, :-1].reshape(-1, 8, 8), raw[:, -1]
    else:  # pragma: no cover - depends on scikit-learn's layout
        from sklearn.datasets import load_digits as _ld

        b = _ld()
        images, target = b.images, b.target
    X = (images.astype(np.float32) / 16.0)[:, None, :, :]
    return Dataset("digits", np.ascontiguousarray(X), target.astype(np.int64), 10)


# bytes held per image value while a dataset is loaded and used: the raw uint8 values, their float32
# copy and the scaled float32 result (rerokit.data._finish), and the tensor a trainer makes of it
_BYTES_PER_VALUE = 13


def _check_regular(path: Path) -> None:
    """A data file must be a regular file: opening a FIFO or a device would block or never end."""
    from rerokit._files import check_regular_file

    check_regular_file("data_path", path)


def _read_idx(path: Path) -> np.ndarray:
    """An unsigned-byte IDX array (optionally gzipped), its declared size checked before it is read.

    The header (magic, dimensions) comes first; the values it declares are checked against the
    memory limit before the rest is read or decompressed, and at most that many bytes are read:
    a small gzip file that inflates to gigabytes (a compression bomb) is refused, not loaded.
    """
    from rerokit._resources import check_memory, format_bytes

    _check_regular(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            head = f.read(4)
            if len(head) < 4 or head[0:2] != b"\x00\x00" or head[2] != 0x08 or not 1 <= head[3] <= 4:
                raise ValueError(f"data_path file {path} is not an unsigned-byte IDX file (bad header)")
            ndim = head[3]
            raw_dims = f.read(4 * ndim)
            if len(raw_dims) < 4 * ndim:
                raise ValueError(f"data_path file {path} is truncated (IDX header cut short)")
            dims = struct.unpack(">" + "I" * ndim, raw_dims)
            count = int(np.prod(dims, dtype=object))
            check_memory("--data-path", _BYTES_PER_VALUE * count,
                         f"the IDX file {path} (its header declares {'x'.join(map(str, dims))} = {count} values, "
                         f"{format_bytes(count)} once decompressed)", hint="give the original MNIST files")
            data = f.read(count + 1)  # one byte more than declared: a longer file is an error
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(f"data_path file {path} is a damaged gzip file ({type(exc).__name__})") from None
    except OSError as exc:
        raise ValueError(f"data_path: cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    if len(data) != count:
        held = f"{len(data)}" if len(data) <= count else "more"
        raise ValueError(f"data_path file {path}: IDX header says {dims} but the file holds {held} values")
    return np.frombuffer(data, dtype=np.uint8).reshape(dims)


def _find(path: Path, stems: tuple[str, ...]) -> Path:
    for stem in stems:
        for suffix in ("", ".gz"):
            p = path / (stem + suffix)
            if p.exists():
                return p
    raise FileNotFoundError(f"data_path {path}: none of {', '.join(stems)} (optionally .gz) found")


def _load_npz(path: Path, name: str, num_classes: int, shape: tuple[int, ...], split: str) -> Dataset:
    """Arrays from an ``.npz`` (never with pickled objects: ``allow_pickle=False``)."""
    from rerokit._files import check_zip_members

    what = f"data_path {path} must be a readable .npz file (or a folder of the {name} files)"
    _check_regular(path)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:  # e.g. /proc/self/mem: EIO, a message without the path
        raise ValueError(f"{what}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    if magic[:2] != b"PK" and magic != b"\x93NUMPY":  # neither a zip (.npz) nor an .npy file
        raise ValueError(f"{what}: its content is not an .npz archive" + (" (the file is empty)" if not magic else ""))
    if magic == b"\x93NUMPY":  # refused before numpy reads (and allocates) the array its header declares
        raise ValueError(f"{what}: it holds a single array (an .npy file), not an .npz archive")
    try:
        if magic[:2] == b"PK":  # declared sizes checked before anything is decompressed
            check_zip_members("size", path, factor=_BYTES_PER_VALUE)
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError(f"{what}: it holds a single array, not an .npz archive")
        with z:
            keys = list(z.keys())
            for kx, ky in [(f"x_{split}", f"y_{split}"), ("X", "y"), ("x", "y"), ("images", "labels")]:
                if kx in keys and ky in keys:
                    X, y = z[kx], z[ky]  # members are read (and decompressed) here
                    break
            else:
                raise ValueError(f"{what}: expected arrays x_{split}/y_{split} or X/y, found {keys}")
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError) as exc:
        msg = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{what}: {msg}") from None
    except ValueError as exc:
        if str(exc).startswith(what):
            raise
        msg = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{what}: {msg}") from None
    return _finish(name, X, y, num_classes, shape)


def _finish(name: str, X: np.ndarray, y: np.ndarray, num_classes: int, shape: tuple[int, ...]) -> Dataset:
    """Validated images (n, *shape) in [0, 1] and labels (n,) in [0, num_classes)."""
    X, y = np.asarray(X), np.asarray(y)
    if X.dtype.kind not in "uif" or y.dtype.kind not in "ui" or X.ndim < 2 or X.shape[0] == 0:
        raise ValueError(f"{name}: images must be a non-empty numeric array and labels integers, got "
                         f"{X.dtype} {X.shape} and {y.dtype} {y.shape}")
    if X.dtype.kind == "f" and not np.all(np.isfinite(X)):
        raise ValueError(f"{name}: images contain NaN or infinite values")
    scale = 255.0 if X.dtype == np.uint8 or X.max() > 1.0 else 1.0
    X = X.astype(np.float32) / scale
    if X.ndim == 4 and X.shape[-1] == shape[0] and X.shape[1] != shape[0]:
        X = X.transpose(0, 3, 1, 2)  # NHWC -> NCHW
    if int(np.prod(X.shape[1:])) != int(np.prod(shape)):
        raise ValueError(f"{name}: each image must have {int(np.prod(shape))} values ({'x'.join(map(str, shape))}), "
                         f"got shape {X.shape[1:]}")
    X = X.reshape((X.shape[0],) + shape)
    y = y.astype(np.int64).reshape(-1)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{name}: {X.shape[0]} images but {y.shape[0]} labels")
    if y.min() < 0 or y.max() >= num_classes:
        raise ValueError(f"{name}: labels must lie in [0, {num_classes - 1}], got [{y.min()}, {y.max()}]")
    return Dataset(name, np.ascontiguousarray(X), y, num_classes)


def _local_path(path: str | os.PathLike, split: str, label: str) -> Path:
    """``path`` as a Path once ``split`` is checked and the file or folder exists (else FileNotFoundError)."""
    check_choice("split", split, ("train", "test"))
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data_path {p} does not exist ({label} is read from local files only)")
    return p


def load_mnist(path: str | os.PathLike, split: str = "train") -> Dataset:
    """MNIST from a local folder of IDX files (``train-images-idx3-ubyte[.gz]`` ...) or an ``.npz``.

    Args:
      path: a folder holding the IDX files (optionally gzipped, either spelling of the names) or an
        ``.npz`` file with arrays ``x_<split>``/``y_<split>``, ``X``/``y``, ``x``/``y`` or
        ``images``/``labels``.
      split: "train" (default) or "test" (the ``t10k`` files).

    Returns:
      A :class:`Dataset` with ``X`` of shape (n, 1, 28, 28) in [0, 1] and 10 classes.

    Raises:
      FileNotFoundError: if ``path`` or a needed IDX file does not exist.
      ValueError: if ``split`` is unknown, or a file is damaged, truncated, of the wrong format, or
        holds arrays of the wrong shape, type or label range.
      TypeError: if ``split`` is not a string.
    """
    p = _local_path(path, split, "MNIST")
    if p.is_file():
        return _load_npz(p, "mnist", 10, DATASET_SHAPES["mnist"], split)
    prefix = "train" if split == "train" else "t10k"
    X = _read_idx(_find(p, (f"{prefix}-images-idx3-ubyte", f"{prefix}-images.idx3-ubyte")))
    y = _read_idx(_find(p, (f"{prefix}-labels-idx1-ubyte", f"{prefix}-labels.idx1-ubyte")))
    return _finish("mnist", X, y, 10, DATASET_SHAPES["mnist"])


def load_cifar10(path: str | os.PathLike, split: str = "train") -> Dataset:
    """CIFAR-10 from the python-pickle folder (``data_batch_1..5``, ``test_batch``) or an ``.npz``.

    The batch files are unpickled without running code (:func:`rerokit.data.safe_pickle.safe_load`).

    Args:
      path: the folder of the python batch files, or an ``.npz`` file (keys as for
        :func:`load_mnist`; NHWC images are transposed).
      split: "train" (default, ``data_batch_1..5``) or "test" (``test_batch``).

    Returns:
      A :class:`Dataset` with ``X`` of shape (n, 3, 32, 32) in [0, 1] and 10 classes.

    Raises:
      FileNotFoundError: if ``path`` or a batch file does not exist.
      ValueError: if ``split`` is unknown, or a file is damaged, not a CIFAR-10 batch (including a
        pickle naming a global outside the allow-list), or holds arrays of the wrong shape, type or
        label range.
      TypeError: if ``split`` is not a string.
    """
    p = _local_path(path, split, "CIFAR-10")
    if p.is_file():
        return _load_npz(p, "cifar10", 10, DATASET_SHAPES["cifar10"], split)
    names = [f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]
    xs, ys = [], []
    for nm in names:
        f = p / nm
        if not f.exists():
            raise FileNotFoundError(f"path {p}: missing CIFAR-10 batch file {nm}")
        X, y = _read_cifar_batch(f)
        xs.append(X)
        ys.append(y)
    return _finish("cifar10", np.concatenate(xs), np.concatenate(ys), 10, DATASET_SHAPES["cifar10"])


def _read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(data (n, 3, 32, 32) uint8, labels (n,)) of one CIFAR-10 python batch file.

    Unpickled by :func:`rerokit.data.safe_pickle.safe_load`: a file that names any global other
    than numpy's array reconstruction is refused without running it. The structure is then
    checked: a dict with ``b"data"`` an (n, 3072) uint8 array and ``b"labels"`` n integers.
    """
    import pickle

    from rerokit.data.safe_pickle import UnsafePickleError, safe_load

    from rerokit._resources import check_memory

    bad = f"data_path file {path} is not a CIFAR-10 python batch file"
    _check_regular(path)
    # a pickle is not compressed: what it builds is bounded by the file's size (arrays by their bytes)
    check_memory("--data-path", _BYTES_PER_VALUE * path.stat().st_size, f"the CIFAR-10 batch file {path}",
                 hint="give the original CIFAR-10 files")
    try:
        with open(path, "rb") as fh:
            d = safe_load(fh)
    except UnsafePickleError as exc:
        raise ValueError(f"{bad}: {exc}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            MemoryError, UnicodeDecodeError, OverflowError, RecursionError, LookupError) as exc:
        raise ValueError(f"{bad} (damaged pickle: {type(exc).__name__})") from None
    if not isinstance(d, dict) or b"data" not in d or b"labels" not in d:
        raise ValueError(f"{bad}: expected a dict with keys b'data' and b'labels'")
    data, labels = d[b"data"], d[b"labels"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(f"{bad}: b'data' must be an (n, 3072) uint8 array")
    if not isinstance(labels, (list, np.ndarray)) or len(labels) != data.shape[0] or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in labels
    ):
        raise ValueError(f"{bad}: b'labels' must be {data.shape[0]} integers")
    return data.reshape(-1, 3, 32, 32), np.asarray(labels, dtype=np.int64)


def synthetic_uniform(n: int, dim: int, seed: int, num_classes: int = 2) -> Dataset:
    """``n`` points of dimension ``dim`` drawn i.i.d. from U(0, 1), random labels (seeded).

    Args:
      n: number of points, an integer >= 1.
      dim: dimension, an integer >= 1.
      seed: seed of numpy's ``default_rng``, an integer >= 0.
      num_classes: labels are drawn uniformly from [0, num_classes) (default 2).

    Returns:
      A :class:`Dataset` named "synthetic" with ``X`` float32 of shape (n, dim).

    Raises:
      ValueError: if ``n``/``dim`` < 1 or ``seed`` < 0.
      TypeError: if one of them is not an integer.
    """
    n = check_int("n", n, minimum=1)
    dim = check_int("dim", dim, minimum=1)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    X = rng.random((n, dim), dtype=np.float64).astype(np.float32)
    y = rng.integers(0, num_classes, size=n).astype(np.int64)
    return Dataset("synthetic", X, y, num_classes)


def load_dataset(
    name: str,
    path: str | os.PathLike | None = None,
    *,
    split: str = "train",
    limit: int | None = None,
    seed: int = 0,
    n: int = 100,
    dim: int = 4,
) -> Dataset:
    """Load ``name`` (``digits``, ``mnist``, ``cifar10`` or ``synthetic``).

    Nothing is downloaded.

    Args:
      name: one of :data:`DATASETS`.
      path: local file or folder, required for ``mnist`` and ``cifar10`` (ignored otherwise).
      split: "train" (default) or "test", for ``mnist`` and ``cifar10``.
      limit: keep the first ``limit`` examples (an integer >= 1); None (default) keeps all.
      seed: seed of ``synthetic`` (default 0).
      n: number of ``synthetic`` points (default 100).
      dim: dimension of ``synthetic`` points (default 4).

    Returns:
      The :class:`Dataset`.

    Raises:
      ValueError: if ``name`` is unknown, ``path`` is missing for ``mnist``/``cifar10``, ``limit`` < 1,
        or a loader rejects its input.
      FileNotFoundError: if a local file or folder is missing.
      TypeError: if an argument has the wrong type.
    """
    check_choice("dataset", name, DATASETS)
    if name in ("mnist", "cifar10") and path is None:
        raise ValueError(f"dataset {name} needs a local path (--data-path); nothing is downloaded")
    if name == "digits":
        ds = load_digits()
    elif name == "mnist":
        ds = load_mnist(path, split)  # type: ignore[arg-type]
    elif name == "cifar10":
        ds = load_cifar10(path, split)  # type: ignore[arg-type]
    else:
        ds = synthetic_uniform(n, dim, seed)
    if limit is not None:
        limit = check_int("limit", limit, minimum=1)
        ds = ds.subset(np.arange(min(limit, ds.n)))
    return ds
