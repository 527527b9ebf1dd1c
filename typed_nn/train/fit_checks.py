"""The checks ``fit`` runs on its arguments before it builds a graph or takes a step.

Every mistake is a ``TrainingError`` headed ``cannot fit: <argument> ...`` with what the
argument allows beside what it received, and one fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from ..data.module import Module
from ..errors import TrainingError, message, received
from ..layers.protocol import Layer
from .arrays import ArrayDataset
from .callbacks import Callback, ModelCheckpoint, NonFinite, OnNonFinite, ProgressBar
from .checks import (
    bad_argument,
    check_choice,
    check_int,
    check_real,
    declared_mismatch,
)
from .data import Dataset, check_parts
from .regression import check_arrays
from .stopping import EarlyStopping

__all__ = [
    "FitCounts",
    "Hooks",
    "NonFinite",
    "check_callbacks",
    "check_fit",
    "check_input_shape",
    "check_model",
]

DOING = "cannot fit"
METRICS = ("train_loss", "train_acc", "test_acc")
REGRESSION_METRICS = ("train_loss", "test_loss")


class FitCounts(NamedTuple):
    """fit's counts, checked and as Python ints."""

    epochs: int
    batch_size: int
    seed: int


def _check_data(name: str, data: object) -> Dataset:
    if not isinstance(data, Dataset):
        hint = "wrap the arrays: Dataset(features, labels, n_classes)."
        raise bad_argument(DOING, name, "a typed_nn.train.Dataset", data, hint)
    # Again here: a Dataset's arrays may have been changed in place since it was made.
    check_parts(data.features, data.labels, data.n_classes, DOING, f"{name}.")
    return data


def _check_test(train: Dataset, test: object) -> None:
    if test is None:
        return
    data = _check_data("test", test)
    want = (train.n_features, train.n_classes)
    if (data.n_features, data.n_classes) != want:
        raise declared_mismatch(
            f"{DOING}: the test set does not match the training set.",
            f"{want[0]} features, {want[1]} classes (train)",
            f"{data.n_features} features, {data.n_classes} classes (test)",
            "split one data set into train and test (e.g. load_digits()).",
        )


def _check_stopping(stopping: EarlyStopping | None, test: object, regression: bool = False) -> None:
    if stopping is None:
        return
    metrics = REGRESSION_METRICS if regression else METRICS
    if stopping.monitor not in metrics:
        hint = "monitor one of " + ", ".join(map(repr, metrics)) + "."
        task = " of a regression" if regression else ""
        raise TrainingError(
            message(
                f"{DOING}: unknown metric for early stopping{task}.",
                [("allowed", ", ".join(metrics)), ("received", received(stopping.monitor))],
                hint=hint,
            )
        )
    if stopping.monitor.startswith("test") and test is None:
        raise declared_mismatch(
            f"{DOING}: early stopping on {stopping.monitor} needs a test set.",
            f"EarlyStopping({stopping.monitor!r})",
            "test=None",
            "pass test=... or monitor 'train_loss'.",
        )
    fix = f"use e.g. EarlyStopping('{stopping.monitor}', patience=5, min_delta=0.0)."
    check_int(DOING, "EarlyStopping.patience", stopping.patience, 1, 5, fix)
    check_real(DOING, "EarlyStopping.min_delta", stopping.min_delta, 0.0, fix)


@dataclass(frozen=True)
class Hooks:
    """fit's callbacks, checked: the built-in ones by kind (each at most once) and all of
    them in the order given (whose hooks the loop calls)."""

    progress: ProgressBar | None
    early_stopping: EarlyStopping | None
    checkpoint: ModelCheckpoint | None
    on_nonfinite: NonFinite
    all: tuple[Callback, ...]


def check_callbacks(callbacks: object, test: object, regression: bool) -> Hooks:
    """``callbacks``: a list or tuple of ``Callback`` objects, each built-in kind once."""
    if not isinstance(callbacks, list | tuple) or not all(
        isinstance(c, Callback) for c in callbacks
    ):
        hint = "pass callbacks=[ProgressBar(), EarlyStopping('test_acc')] (Callback objects)."
        raise bad_argument(
            DOING, "callbacks", "a list of typed_nn.train Callbacks", callbacks, hint
        )
    found: dict[type, Callback] = {}
    for c in callbacks:
        kind = next((k for k in BUILT_IN if isinstance(c, k)), None)
        if kind is not None and kind in found:
            raise declared_mismatch(
                f"{DOING}: two {kind.__name__} callbacks.",
                f"at most one {kind.__name__}",
                f"{found[kind]!r} and {c!r}",
                f"keep one {kind.__name__} in callbacks.",
            )
        if kind is not None:
            found[kind] = c
    progress, stopping = found.get(ProgressBar), found.get(EarlyStopping)
    checkpoint, nonfinite = found.get(ModelCheckpoint), found.get(OnNonFinite)
    assert progress is None or isinstance(progress, ProgressBar)
    assert stopping is None or isinstance(stopping, EarlyStopping)
    assert checkpoint is None or isinstance(checkpoint, ModelCheckpoint)
    assert nonfinite is None or isinstance(nonfinite, OnNonFinite)
    _check_stopping(stopping, test, regression)
    if progress is not None:
        check_choice(DOING, "ProgressBar.bars", progress.bars, (None, True, False))
        if progress.stream is not None and not callable(getattr(progress.stream, "write", None)):
            hint = "pass a text stream such as sys.stdout or io.StringIO(), or None (stderr)."
            raise bad_argument(
                DOING, "ProgressBar.stream", "a text stream or None", progress.stream, hint
            )
    action = nonfinite.action if nonfinite is not None else "raise"
    check_choice(DOING, "OnNonFinite.action", action, ("raise", "continue"))
    return Hooks(progress, stopping, checkpoint, action, tuple(callbacks))


BUILT_IN: tuple[type[Callback], ...] = (ProgressBar, EarlyStopping, ModelCheckpoint, OnNonFinite)


def check_fit(
    train: object,
    optimizer: object,
    *,
    test: object,
    epochs: object,
    batch_size: object,
    seed: object,
    callbacks: object,
    loss: object = None,
) -> tuple[FitCounts, Hooks]:
    """Check every argument of ``fit`` but the model and the optimizer (``trainee_of``);
    returns ``(epochs, batch_size, seed)`` as ints and the callbacks."""
    regression = isinstance(train, ArrayDataset)
    data: Dataset | ArrayDataset
    if regression:
        data = _check_regression(train, test, loss)
    else:
        data = _check_data("train", train)
        _check_test(data, test)
        if loss is not None:
            raise declared_mismatch(
                f"{DOING}: loss= is for a regression on an ArrayDataset.",
                "a classifier: softmax + NLL on a Dataset",
                f"loss={loss!r}"[:80],
                "leave loss out for a Dataset, or train on ArrayDataset(features, targets).",
            )
    if len(data) == 0:
        raise declared_mismatch(
            f"{DOING}: the training set is empty.",
            "at least 1 sample",
            "0 samples",
            "give at least one sample.",
        )
    counts = FitCounts(
        check_int(DOING, "epochs", epochs, 1, 20),
        check_int(DOING, "batch_size", batch_size, 1, 32),
        check_int(DOING, "seed", seed, 0, 0),
    )
    return counts, check_callbacks(callbacks, test, regression)


def _check_regression(train: object, test: object, loss: object) -> ArrayDataset:
    """A regression's data (features and targets matrices, test set alike) and its loss."""
    widths = check_arrays("train", train)
    assert isinstance(train, ArrayDataset)
    if test is not None and check_arrays("test", test) != widths:
        assert isinstance(test, ArrayDataset)
        test_widths = check_arrays("test", test)
        raise declared_mismatch(
            f"{DOING}: the test set does not match the training set.",
            f"{widths[0]} features, {widths[1]} targets (train)",
            f"{test_widths[0]} features, {test_widths[1]} targets (test)",
            "split one data set into train and test.",
        )
    if loss is not None and not callable(loss):
        hint = "pass e.g. loss=typed_nn.ops.huber_loss, or None for mean squared error."
        raise bad_argument(DOING, "loss", "a function loss(truth, pred) -> Scalar", loss, hint)
    return train


MODEL_METHODS = ("input_cont", "output_cont", "feed_forward", "feed_backward", "grad_collect")
"""What ``fit`` calls on a model (``TrainableModel``)."""


def check_model(model: object, reads_state: str | None, doing: str = DOING) -> None:
    """``model`` must be a training layer (``TrainableModel``); ``reads_state`` (why fit
    reads the model's whole state: checkpoints, ranks) requires a typed_nn layer, whose state
    one walk finds (``model_state``); an ``nn.Module`` reports its whole state. ``doing``:
    the message's headline."""
    if isinstance(model, Module):
        return
    lacking = [m for m in MODEL_METHODS if not callable(getattr(model, m, None))]
    if lacking:
        hint = "pass an nn.Module, or a training layer such as the MLP build_mlp returns."
        allowed = "an nn.Module or a training layer (" + ", ".join(MODEL_METHODS) + ")"
        raise bad_argument(doing, "model", allowed, model, hint)
    if reads_state is not None and not isinstance(model, Layer):
        raise declared_mismatch(
            f"{DOING}: {reads_state} needs the model's whole state, which only a typed_nn "
            "layer reports.",
            "a typed_nn layer (typed_nn.layers.Layer)",
            type(model).__name__,
            "build the model as an nn.Module or from typed_nn layers, or train without "
            + reads_state.split(" (")[0]
            + ".",
        )


def check_input_shape(input_shape: object, features: int) -> tuple[int, ...] | None:
    """``input_shape`` (None, or a tuple of sizes whose product is ``features``), else a
    ``TrainingError`` naming it."""
    if input_shape is None:
        return None
    if (
        not isinstance(input_shape, tuple)
        or not input_shape
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in input_shape)
        or math.prod(input_shape) != features
    ):
        raise TrainingError(
            message(
                "cannot train: input_shape is not a shape of one sample's features.",
                [
                    ("declared", f"sizes whose product is {features}"),
                    ("received", repr(input_shape)),
                ],
                hint="e.g. input_shape=(1, 8, 8) for 64 features seen as 1-channel 8x8 images.",
            )
        )
    return input_shape
