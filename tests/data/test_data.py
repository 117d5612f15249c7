"""Loaders read the original formats from local files the test writes."""

import gzip
import pickle
import struct

import numpy as np
import pytest

from rerokit.data import load_dataset


def test_digits_shape_and_range():
    ds = load_dataset("digits")
    assert ds.X.shape == (1797, 1, 8, 8) and ds.y.shape == (1797,)
    assert ds.X.min() == 0.0 and ds.X.max() == 1.0 and ds.num_classes == 10


def _write_idx(path, arr):
    header = b"\x00\x00\x08" + bytes([arr.ndim]) + struct.pack(">" + "I" * arr.ndim, *arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + arr.astype(np.uint8).tobytes())


def test_mnist_idx_files(tmp_path):
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 256, size=(5, 28, 28))
    labels = np.arange(5)
    _write_idx(tmp_path / "train-images-idx3-ubyte.gz", imgs)
    _write_idx(tmp_path / "train-labels-idx1-ubyte.gz", labels)
    ds = load_dataset("mnist", tmp_path)
    assert ds.X.shape == (5, 1, 28, 28)
    np.testing.assert_allclose(ds.X[:, 0] * 255, imgs, atol=1e-4)
    np.testing.assert_array_equal(ds.y, labels)


def test_cifar_pickles(tmp_path):
    rng = np.random.default_rng(1)
    for i in range(1, 6):
        d = {b"data": rng.integers(0, 256, size=(2, 3072), dtype=np.uint8), b"labels": [i % 10, 0]}
        with open(tmp_path / f"data_batch_{i}", "wb") as f:
            pickle.dump(d, f)
    ds = load_dataset("cifar10", tmp_path)
    assert ds.X.shape == (10, 3, 32, 32) and ds.y[0] == 1


def test_npz(tmp_path):
    np.savez(tmp_path / "m.npz", x_train=np.zeros((3, 28, 28), np.uint8), y_train=np.array([1, 2, 3]))
    assert load_dataset("mnist", tmp_path / "m.npz").X.shape == (3, 1, 28, 28)


def test_missing_path_is_clear_error():
    with pytest.raises(ValueError, match="needs a local path"):
        load_dataset("mnist")
    with pytest.raises(FileNotFoundError):
        load_dataset("cifar10", "/nonexistent/dir")
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_dataset("imagenet")


def test_synthetic_is_seeded():
    a = load_dataset("synthetic", n=100, dim=4, seed=3)
    b = load_dataset("synthetic", n=100, dim=4, seed=3)
    np.testing.assert_array_equal(a.X, b.X)
    assert a.X.shape == (100, 4) and 0 <= a.X.min() and a.X.max() < 1


def test_digits_equal_sklearn_loader():
    # The fast CSV path must give exactly what scikit-learn's own loader gives.
    from sklearn.datasets import load_digits as sk_load

    ds = load_dataset("digits")
    b = sk_load()
    np.testing.assert_array_equal(ds.X[:, 0] * 16.0, b.images.astype(np.float32))
    np.testing.assert_array_equal(ds.y, b.target)


# --------------------------------------------------------------------------- hostile files


class _Payload:
    """Unpickling this runs ``marker.touch()`` via ``pathlib.Path.touch`` (a classic pickle RCE)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import pathlib

        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


@pytest.mark.parametrize("where", ["top", "inside_dict"])
def test_malicious_cifar_pickle_runs_nothing(tmp_path, where):
    """A crafted data_batch_1 naming a callable is refused before that callable is looked up."""
    marker = tmp_path / "pwned"
    payload = _Payload(str(marker))
    obj = payload if where == "top" else {b"data": payload, b"labels": [0]}
    with open(tmp_path / "data_batch_1", "wb") as f:
        pickle.dump(obj, f, protocol=2)
    with pytest.raises(ValueError, match="data_batch_1 is not a CIFAR-10 python batch file: refusing to load the global"):
        load_dataset("cifar10", tmp_path)
    assert not marker.exists()


def test_malicious_pickle_os_system_refused(tmp_path):
    """The textbook payload (os.system via GLOBAL + REDUCE), hand-assembled: refused, nothing runs."""
    from rerokit.data.safe_pickle import UnsafePickleError, safe_load

    marker = tmp_path / "pwned"
    raw = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."
    import io

    with pytest.raises(UnsafePickleError, match="os.system"):
        safe_load(io.BytesIO(raw))
    assert not marker.exists()


def test_safe_load_reads_numpy_arrays_from_protocols_2_to_5(tmp_path):
    from rerokit.data.safe_pickle import safe_load
    import io

    rng = np.random.default_rng(3)
    d = {b"data": rng.integers(0, 256, size=(3, 3072), dtype=np.uint8), b"labels": [1, 2, 3],
         b"filenames": [b"a.png", b"b.png", b"c.png"], b"batch_label": b"training batch 1 of 5",
         "floats": np.linspace(0, 1, 4), "scalar": np.float64(2.5)}
    for proto in (2, 3, 4, 5):
        out = safe_load(io.BytesIO(pickle.dumps(d, protocol=proto)))
        np.testing.assert_array_equal(out[b"data"], d[b"data"])
        np.testing.assert_array_equal(out["floats"], d["floats"])
        assert out[b"labels"] == [1, 2, 3] and out["scalar"] == 2.5


@pytest.mark.parametrize("content", [b"", b"garbage", b"\x80\x02}q\x00."])
def test_damaged_cifar_batch_is_one_clear_error(tmp_path, content):
    (tmp_path / "data_batch_1").write_bytes(content)
    with pytest.raises(ValueError, match="data_batch_1 is not a CIFAR-10 python batch file"):
        load_dataset("cifar10", tmp_path)


def test_cifar_batch_with_wrong_structure(tmp_path):
    with open(tmp_path / "data_batch_1", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 10), dtype=np.uint8), b"labels": [0, 1]}, f, protocol=2)
    with pytest.raises(ValueError, match=r"\(n, 3072\) uint8"):
        load_dataset("cifar10", tmp_path)


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04garbage", b"not a zip at all"])
def test_garbage_npz_is_one_clear_error(tmp_path, content):
    p = tmp_path / "bad.npz"
    p.write_bytes(content)
    with pytest.raises(ValueError, match="bad.npz must be a readable .npz"):
        load_dataset("mnist", p)


def test_truncated_npz_is_one_clear_error(tmp_path):
    p = tmp_path / "mnist.npz"
    np.savez_compressed(p, x_train=np.zeros((50, 28, 28), np.uint8), y_train=np.zeros(50, np.int64))
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="mnist.npz must be a readable .npz"):
        load_dataset("mnist", p)


def test_npz_with_object_arrays_is_refused(tmp_path):
    p = tmp_path / "obj.npz"
    np.savez(p, X=np.array([{"a": 1}], dtype=object), y=np.array([0]))
    with pytest.raises(ValueError, match="obj.npz must be a readable .npz"):
        load_dataset("mnist", p)


def test_npy_instead_of_npz_and_bad_labels(tmp_path):
    p = tmp_path / "single.npy"
    np.save(p, np.zeros((2, 28, 28)))
    with pytest.raises(ValueError, match="single array"):
        load_dataset("mnist", p)
    q = tmp_path / "labels.npz"
    np.savez(q, X=np.zeros((2, 28, 28), np.uint8), y=np.array([0, 11]))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 9\]"):
        load_dataset("mnist", q)


@pytest.mark.parametrize("content", [b"", b"\x00\x00", b"\x00\x00\x08\x03\x00"])
def test_truncated_idx_is_one_clear_error(tmp_path, content):
    (tmp_path / "train-images-idx3-ubyte").write_bytes(content)
    _write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.arange(2))
    with pytest.raises(ValueError, match="train-images-idx3-ubyte"):
        load_dataset("mnist", tmp_path)
