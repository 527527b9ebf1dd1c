"""The checks ``fit`` runs on its arguments before it builds a graph or takes a step.

Every mistake is a ``TrainingError`` headed ``cannot fit: <argument> ...`` with what the
argument allows beside what it received, and one fix.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

from ..errors import TrainingError, message, received
from ..layers.protocol import Layer
from ..model.optim import Optimizer
from ..tags import DeviceTag
from .arrays import ArrayDataset
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

__all__ = ["FitCounts", "NonFinite", "check_fit", "check_input_shape", "check_model"]

DOING = "cannot fit"
METRICS = ("train_loss", "train_acc", "test_acc")
REGRESSION_METRICS = ("train_loss", "test_loss")
NonFinite = Literal["raise", "continue"]
"""What ``fit`` does when a batch's loss is NaN or Inf: stop with an error, or train on."""


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


def _check_stopping(stopping: object, test: object, regression: bool = False) -> None:
    if stopping is None:
        return
    if not isinstance(stopping, EarlyStopping):
        hint = "pass early_stopping=EarlyStopping('train_loss', patience=5)."
        raise bad_argument(DOING, "early_stopping", "an EarlyStopping or None", stopping, hint)
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
    check_int(DOING, "early_stopping.patience", stopping.patience, 1, 5, fix)
    check_real(DOING, "early_stopping.min_delta", stopping.min_delta, 0.0, fix)


def _check_hooks(
    progress: object, stream: object, on_epoch: object, device: object, on_nonfinite: object
) -> None:
    check_choice(DOING, "progress", progress, (None, True, False))
    if stream is not None and not callable(getattr(stream, "write", None)):
        hint = "pass a text stream such as sys.stdout or io.StringIO(), or None (stderr)."
        raise bad_argument(DOING, "stream", "a text stream or None", stream, hint)
    if on_epoch is not None and not callable(on_epoch):
        hint = "pass a function on_epoch(epoch, history), or None."
        raise bad_argument(DOING, "on_epoch", "a callable or None", on_epoch, hint)
    if not (isinstance(device, type) and issubclass(device, DeviceTag)):
        hint = "pass device=tn.CPU or device=tn.GPU (the device tag, not an instance)."
        raise bad_argument(DOING, "device", "a device tag (CPU or GPU)", device, hint)
    check_choice(DOING, "on_nonfinite", on_nonfinite, ("raise", "continue"))


def check_fit(
    train: object,
    optimizer: object,
    *,
    test: object,
    epochs: object,
    batch_size: object,
    seed: object,
    progress: object,
    early_stopping: object,
    stream: object,
    on_epoch: object,
    device: object,
    on_nonfinite: object,
    loss: object = None,
) -> FitCounts:
    """Check every argument of ``fit`` (the model is checked when its graph is built);
    returns ``(epochs, batch_size, seed)`` as ints."""
    if not isinstance(optimizer, Optimizer):
        hint = "pass e.g. SGD(0.1), or make_optimizer('adam')."
        raise bad_argument(DOING, "optimizer", "a typed_nn.model Optimizer", optimizer, hint)
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
    _check_stopping(early_stopping, test, regression)
    _check_hooks(progress, stream, on_epoch, device, on_nonfinite)
    return counts


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
    one walk finds (``model_state``). ``doing``: the message's headline."""
    lacking = [m for m in MODEL_METHODS if not callable(getattr(model, m, None))]
    if lacking:
        hint = "pass a training layer, e.g. the MLP build_mlp returns, or make_train_layer(...)."
        raise bad_argument(
            doing, "model", "a training layer (" + ", ".join(MODEL_METHODS) + ")", model, hint
        )
    if reads_state is not None and not isinstance(model, Layer):
        raise declared_mismatch(
            f"{DOING}: {reads_state} needs the model's whole state, which only a typed_nn "
            "layer reports.",
            "a typed_nn layer (typed_nn.layers.Layer)",
            type(model).__name__,
            "build the model from typed_nn layers, or train without "
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
