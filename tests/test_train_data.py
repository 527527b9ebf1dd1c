"""The digits data, its split and the mini-batch iterator (typed_nn.train.data)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import typed_nn as tn
from typed_nn.train import Dataset, batches, load_digits, one_hot


def test_digits_shapes_scale_and_classes() -> None:
    split = load_digits()
    assert split.train.features.shape == (1437, 64)
    assert split.test.features.shape == (360, 64)
    assert split.train.features.dtype == np.float32
    assert split.train.features.min() == 0.0
    assert split.train.features.max() == 1.0
    assert split.train.n_classes == split.test.n_classes == 10
    assert set(np.unique(split.test.labels)) == set(range(10))


def test_split_is_stratified_and_disjoint() -> None:
    split = load_digits(seed=0)
    train_counts = np.bincount(split.train.labels, minlength=10)
    test_counts = np.bincount(split.test.labels, minlength=10)
    fractions = test_counts / (train_counts + test_counts)
    assert np.all(np.abs(fractions - 0.2) < 0.01), fractions
    rows = {row.tobytes() for row in split.train.features}
    overlap = sum(row.tobytes() in rows for row in split.test.features)
    assert overlap < 5  # a few digits images occur twice in the data set itself


def test_split_is_deterministic_per_seed() -> None:
    a, b, c = load_digits(seed=3), load_digits(seed=3), load_digits(seed=4)
    assert np.array_equal(a.train.features, b.train.features)
    assert np.array_equal(a.test.labels, b.test.labels)
    assert not np.array_equal(a.test.labels, c.test.labels)


def test_one_hot_rows() -> None:
    y = one_hot(np.array([2, 0, 1], np.int64), 3)
    assert y.shape == (3, 3)
    assert y.elem is tn.Float32
    assert np.array_equal(y.numpy(), np.eye(3, dtype=np.float32)[[2, 0, 1]])


def _tiny(n: int = 10) -> Dataset:
    features = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    return Dataset(features, np.arange(n, dtype=np.int64) % 3, 3)


def test_batches_cover_every_row_once_with_a_short_last_batch() -> None:
    data = _tiny(10)
    got = list(batches(data, 4, np.random.default_rng(0)))
    assert [len(b.labels) for b in got] == [4, 4, 2]
    seen = np.concatenate([b.x.numpy()[:, 0] / 2 for b in got]).astype(int)
    assert sorted(seen.tolist()) == list(range(10))
    for b in got:
        assert np.array_equal(b.y.numpy().argmax(axis=1), b.labels)
        assert np.array_equal(b.labels, (b.x.numpy()[:, 0] / 2).astype(int) % 3)


def test_batches_shuffle_from_the_generator() -> None:
    data = _tiny(10)

    def order(rng: np.random.Generator | None) -> list[int]:
        return [int(v) // 2 for b in batches(data, 3, rng) for v in b.x.numpy()[:, 0]]

    assert order(None) == list(range(10))
    assert order(np.random.default_rng(5)) == order(np.random.default_rng(5))
    assert order(np.random.default_rng(5)) == np.random.default_rng(5).permutation(10).tolist()
    rng = np.random.default_rng(5)
    assert order(rng) != order(rng)  # a new permutation per epoch


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(tn.TrainingError, match="batch_size must be at least 1"):
        next(batches(_tiny(), 0))


def test_test_fraction_must_be_a_fraction() -> None:
    with pytest.raises(tn.TrainingError, match="test_fraction must be between 0 and 1"):
        load_digits(test_fraction=1.5)


def test_dataset_shapes_are_checked() -> None:
    with pytest.raises(tn.TrainingError, match=r"features must be \(n, f\) and labels \(n,\)"):
        Dataset(np.zeros((4, 2), np.float32), np.zeros(3, np.int64), 2)


def test_missing_scikit_learn_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(tn.MissingDependencyError, match=r"pip install -e '\.\[examples\]'"):
        load_digits()
