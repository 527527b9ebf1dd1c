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


@pytest.mark.parametrize("size", [0, -2, 2.5])
def test_batch_size_must_be_positive(size: object) -> None:
    match = (
        r"^cannot make mini-batches: batch_size must be an integer >= 1\.\n"
        rf"  allowed  : an integer >= 1\n  received : {size!r} \({type(size).__name__}\)"
    )
    with pytest.raises(tn.TrainingError, match=match):
        next(batches(_tiny(), size))  # type: ignore[arg-type]


def test_test_fraction_must_be_a_fraction() -> None:
    with pytest.raises(tn.TrainingError, match="test_fraction must be between 0 and 1"):
        load_digits(test_fraction=1.5)


def test_dataset_shapes_are_checked() -> None:
    match = (
        r"^cannot make a Dataset: features must be \(n, f\) and labels \(n,\)\.\n.*\n"
        r"  received : features \(4, 2\), labels \(3,\)"
    )
    with pytest.raises(tn.TrainingError, match=match):
        Dataset(np.zeros((4, 2), np.float32), np.zeros(3, np.int64), 2)


FEATURES = np.zeros((4, 2), np.float32)
LABELS = np.array([0, 1, 2, 1], np.int64)


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        (  # trained as the last class through negative indexing
            np.array([0, -1, 2, 1]),
            r"labels must be in 0 \.\. 2\.\n"
            r"  declared : integer classes 0 \.\. 2 \(n_classes 3\)\n"
            r"  received : -1 at row 1 \(labels range -1 \.\. 2\)\n"
            r"hint: number the classes from 0",
        ),
        (  # an IndexError inside one_hot
            np.array([0, 1, 3, 1]),
            r"labels must be in 0 \.\. 2\.\n.*\n  received : 3 at row 2 ",
        ),
        (  # an IndexError ("arrays used as indices must be of integer type") inside one_hot
            np.array([0.0, 1.0, 2.0, 1.0]),
            r"labels must be integer classes\.\n.*\n  received : float64 labels\n"
            r"hint: convert whole-number labels with labels\.astype\(np\.int64\)\.",
        ),
        (
            [0, 1, 2, 1],
            r"labels must be a numpy array of integer classes\.\n.*\n  received : list\n",
        ),
    ],
)
def test_dataset_labels_are_checked_when_made(labels: object, match: str) -> None:
    with pytest.raises(tn.TrainingError, match=r"^cannot make a Dataset: " + match):
        Dataset(FEATURES, labels, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("features", "match"),
    [
        (  # AttributeError: 'list' object has no attribute 'ndim'
            FEATURES.tolist(),
            r"features must be a numpy array\.\n.*\n  received : list\n"
            r"hint: convert them with np\.asarray\(features, np\.float32\)\.",
        ),
        (3, r"features must be a numpy array\.\n.*\n  received : int\n"),  # TypeError: len()
        (  # trained, then failed in predict / test accuracy (an ElemTypeError)
            FEATURES.astype(np.float64),
            r"features must be float32\.\n.*\n  received : float64 array \(4, 2\)\n"
            r"hint: convert them with features\.astype\(np\.float32\)\.",
        ),
        (
            np.array([[0, 1], [2, np.nan], [0, 0], [0, 0]], np.float32),
            r"features must be finite \(no NaN or Inf\)\.\n.*\n  received : nan at row 1, column 1",
        ),
    ],
)
def test_dataset_features_are_checked_when_made(features: object, match: str) -> None:
    with pytest.raises(tn.TrainingError, match=r"^cannot make a Dataset: " + match):
        Dataset(features, LABELS, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("n_classes", [0, 2.5, True])
def test_dataset_n_classes_is_checked_when_made(n_classes: object) -> None:
    match = r"^cannot make a Dataset: n_classes must be an integer >= 1\.\n  allowed  : "
    with pytest.raises(tn.TrainingError, match=match):
        Dataset(FEATURES, LABELS, n_classes)  # type: ignore[arg-type]


def test_one_hot_checks_its_labels() -> None:
    with pytest.raises(tn.TrainingError, match=r"^cannot make one-hot targets: labels must be in"):
        one_hot(np.array([0, 3], np.int64), 3)
    with pytest.raises(tn.TrainingError, match=r"^cannot make one-hot targets: labels must be in"):
        one_hot(np.array([-1, 0], np.int64), 3)


def test_missing_scikit_learn_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(tn.MissingDependencyError, match=r"pip install -e '\.\[examples\]'"):
        load_digits()
