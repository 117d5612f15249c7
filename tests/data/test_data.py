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
