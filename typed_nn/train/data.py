"""Classification data for training: the bundled digits, a stratified split and mini-batches.

``load_digits()`` reads scikit-learn's bundled handwritten digits (1797 images of 8x8 pixels,
10 classes; shipped inside scikit-learn, nothing is downloaded), scales the pixels from 0..16
to [0, 1] and splits them, per class, into train and test sets with a fixed seed::

    split = load_digits(test_fraction=0.2, seed=0)
    split.train.features.shape, split.test.features.shape   # (1437, 64), (360, 64)
    for batch in batches(split.train, 32, np.random.default_rng(0)):
        batch.x, batch.y      # Tensor[Float32, CPU, Dim2] (32, 64) and one-hot (32, 10)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..data.tensor import Tensor
from ..errors import TrainingError, message, missing_dependency
from ..tags import CPU, Dim2, Float32
from .checks import (
    bad_argument,
    check_finite_rows,
    check_generator,
    check_int,
    declared_mismatch,
    is_real,
)

__all__ = [
    "Batch",
    "Dataset",
    "Split",
    "batches",
    "check_parts",
    "load_digits",
    "n_batches",
    "one_hot",
]

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
Matrix32 = Tensor[Float32, CPU, Dim2]

EXAMPLES_INSTALL = "pip install -e '.[examples]'"
"""How the examples extra installs from a clone (the digits and the plots need it)."""


@dataclass(frozen=True)
class Dataset:
    """Samples of a classification problem: ``features`` (n, f) float32 and ``labels`` (n,)
    integer classes in ``0 .. n_classes - 1``.

    Checked when made (a ``TrainingError`` naming the part and what it holds): numpy arrays
    of those shapes, float32 finite features, integer labels in range (a label of -1 would
    otherwise train as the last class), ``n_classes`` an int >= 1.
    """

    features: FloatArray
    labels: IntArray
    n_classes: int

    def __post_init__(self) -> None:
        check_parts(self.features, self.labels, self.n_classes, "cannot make a Dataset")

    def __len__(self) -> int:
        return len(self.features)

    @property
    def n_features(self) -> int:
        """Width of one sample."""
        return int(self.features.shape[1])

    def x(self) -> Matrix32:
        """All features as a (n, f) tensor."""
        return Tensor(self.features, Float32, CPU, Dim2)

    def y(self) -> Matrix32:
        """All targets one-hot, (n, n_classes)."""
        return one_hot(self.labels, self.n_classes)


@dataclass(frozen=True)
class Split:
    """A train set and a test set of one problem."""

    train: Dataset
    test: Dataset


@dataclass(frozen=True)
class Batch:
    """One mini-batch: ``x`` (b, f), one-hot ``y`` (b, classes) and the integer ``labels``."""

    x: Matrix32
    y: Matrix32
    labels: IntArray


def one_hot(labels: IntArray, n_classes: int) -> Matrix32:
    """Rows of zeros with a one at each label: (n,) integers in ``0 .. n_classes - 1`` ->
    (n, n_classes) float32."""
    classes = _check_classes(n_classes, "cannot make one-hot targets", "")
    _check_labels(labels, classes, "cannot make one-hot targets", "")
    out = np.zeros((len(labels), n_classes), np.float32)
    out[np.arange(len(labels)), labels] = 1.0
    return Tensor(out, Float32, CPU, Dim2)


def _first(bad: npt.NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(bad)[0])


def _check_classes(n_classes: object, doing: str, owner: str) -> int:
    return check_int(doing, f"{owner}n_classes", n_classes, 1, 10)


def _check_labels(labels: object, n_classes: int, doing: str, owner: str) -> npt.NDArray[Any]:
    """``labels``, checked to be integers in ``0 .. n_classes - 1`` (a -1 would index the
    last class)."""
    name = f"{owner}labels"
    allowed = f"integer classes 0 .. {n_classes - 1} (n_classes {n_classes})"
    if not isinstance(labels, np.ndarray):
        raise declared_mismatch(
            f"{doing}: {name} must be a numpy array of integer classes.",
            allowed,
            type(labels).__name__,
            "convert them with np.asarray(labels, np.int64).",
        )
    if labels.dtype.kind not in "iu":
        raise declared_mismatch(
            f"{doing}: {name} must be integer classes.",
            allowed,
            f"{labels.dtype} labels",
            "convert whole-number labels with labels.astype(np.int64).",
        )
    bad = (labels < 0) | (labels >= n_classes)
    if bad.any():
        row = _first(bad.ravel())
        raise declared_mismatch(
            f"{doing}: {name} must be in 0 .. {n_classes - 1}.",
            allowed,
            f"{labels.ravel()[row]} at row {row} (labels range {labels.min()} .. {labels.max()})",
            "number the classes from 0 (a label of -1 would silently mean the last class), "
            "or raise n_classes to the number of classes.",
        )
    return labels


def check_parts(
    features: object, labels: object, n_classes: object, doing: str, owner: str = ""
) -> None:
    """Raise a ``TrainingError`` headed ``doing`` unless ``features`` is a finite float32
    (n, f) array, ``labels`` an (n,) integer array in ``0 .. n_classes - 1`` and
    ``n_classes`` an int >= 1; ``owner`` prefixes the names in the message (``"train."``)."""
    name = f"{owner}features"
    if not isinstance(features, np.ndarray):
        raise declared_mismatch(
            f"{doing}: {name} must be a numpy array.",
            "float32 array (n samples, f features)",
            type(features).__name__,
            "convert them with np.asarray(features, np.float32).",
        )
    classes = _check_classes(n_classes, doing, owner)
    labels = _check_labels(labels, classes, doing, owner)
    if features.ndim != 2 or labels.shape != (len(features),):
        raise declared_mismatch(
            f"{doing}: {name} must be (n, f) and {owner}labels (n,).",
            "features (n, f), labels (n,): one row and one label per sample",
            f"features {features.shape}, labels {labels.shape}",
            "reshape the features to one row per sample and give one label per row.",
        )
    if features.dtype != np.float32:
        raise declared_mismatch(
            f"{doing}: {name} must be float32.",
            "float32 array (n samples, f features)",
            f"{features.dtype} array {features.shape}",
            "convert them with features.astype(np.float32).",
        )
    check_finite_rows(f"{doing}: {name}", features)


def _sklearn() -> tuple[Any, Any]:
    """scikit-learn's ``load_digits`` and ``train_test_split``."""
    try:
        from sklearn.datasets import load_digits as sk_load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as err:
        raise missing_dependency(
            "the digits data", "scikit-learn", "examples", install=EXAMPLES_INSTALL
        ) from err
    return sk_load_digits, train_test_split


def load_digits(test_fraction: float = 0.2, seed: int = 0) -> Split:
    """scikit-learn's bundled 8x8 digits, pixels scaled to [0, 1], split per class.

    Returns train and test sets of 64 features and 10 classes (1437 / 360 samples at the
    default 0.2), split by scikit-learn's ``train_test_split(stratify=labels,
    random_state=seed)``: the same seed gives the same split.
    """
    seed = check_int("cannot split", "seed", seed, 0, 0)
    if not is_real(test_fraction) or not 0 < test_fraction < 1:
        raise TrainingError(
            message(
                "cannot split: test_fraction must be between 0 and 1.",
                [("received", repr(test_fraction))],
                hint="use e.g. test_fraction=0.2.",
            )
        )
    sk_load_digits, train_test_split = _sklearn()
    bunch = sk_load_digits()
    features = (np.asarray(bunch.data, np.float32) / np.float32(16.0)).astype(np.float32)
    labels = np.asarray(bunch.target, np.int64)
    train_idx, test_idx = train_test_split(
        np.arange(len(labels)), test_size=test_fraction, stratify=labels, random_state=seed
    )
    return Split(
        Dataset(features[train_idx], labels[train_idx], 10),
        Dataset(features[test_idx], labels[test_idx], 10),
    )


def batches(
    data: Dataset, batch_size: int, rng: np.random.Generator | None = None
) -> Iterator[Batch]:
    """Mini-batches of ``batch_size`` rows (the last one may be smaller).

    With ``rng`` the order is shuffled (a new permutation per call, so per epoch); without,
    the rows come in order.
    """
    doing = "cannot make mini-batches"
    given: object = data  # callers without a type checker may pass anything
    if not isinstance(given, Dataset):
        hint = "wrap the arrays: Dataset(features, labels, n_classes)."
        raise bad_argument(doing, "data", "a typed_nn.train.Dataset", given, hint)
    batch_size = check_int(doing, "batch_size", batch_size, 1, 32)
    check_generator(doing, rng)
    n = len(data)
    order = rng.permutation(n) if rng is not None else np.arange(n)
    targets = one_hot(data.labels, data.n_classes).array  # once, then rows are picked
    for start in range(0, n, batch_size):
        idx = order[start : start + batch_size]
        x = Tensor(data.features[idx], Float32, CPU, Dim2)
        yield Batch(x, Tensor(targets[idx], Float32, CPU, Dim2), data.labels[idx])


def n_batches(n: int, batch_size: int) -> int:
    """How many mini-batches ``batches`` yields for ``n`` samples."""
    return math.ceil(n / batch_size)
