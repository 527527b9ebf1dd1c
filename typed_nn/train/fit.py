"""``fit``: mini-batch training of a classifier, with history, progress and early stopping.

::

    split = load_digits(seed=0)
    history = fit(mlp, split.train, Adam(1e-3), test=split.test, epochs=20, batch_size=32,
                  early_stopping=EarlyStopping("test_acc", patience=5))
    accuracy(mlp, split.test)

Each mini-batch runs one compiled step (``step.py``): the model's forward, softmax and NLL
loss, ``tn.grad`` and the optimizer's rule, traced once per batch size by ``tn.compile`` and
replayed for every batch, every update written in place after every read. The batch's loss
for the history is computed from the probabilities the step returns and the batch's labels.

``device=tn.GPU`` trains a model built on the GPU (``build_mlp(..., device=tn.GPU)``): the
data are copied to the GPU once, each batch is gathered there, and the probabilities come
back to the host once per chunk of batches for the loss and accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from .. import backends
from ..data.tensor import Tensor
from ..errors import TrainingError, message
from ..model.optim import Optimizer
from ..tags import CPU, DeviceTag, Float32, dim_of_rank
from .data import Dataset, n_batches
from .epoch_metrics import EpochMetrics, Where, diverged, weights_diverged
from .fit_checks import NonFinite, check_fit
from .history import History
from .model import TrainableModel
from .progress import Progress
from .step import PredictGraph, TrainStep
from .stopping import EarlyStopping

__all__ = ["accuracy", "fit", "predict"]

Snapshot = list[tuple[Tensor[Float32, Any, Any], Any]]


def predict(
    model: TrainableModel,
    data: Dataset,
    *,
    device: type[DeviceTag] = CPU,
    input_shape: tuple[int, ...] | None = None,
) -> npt.NDArray[np.float32]:
    """Class probabilities (n, classes), on the host, of every sample of ``data``, computed
    on ``device`` (where the model's parameters live); ``input_shape`` as for ``fit``."""
    shape = check_input_shape(input_shape, data.n_features)
    graph = PredictGraph(model, len(data), data.n_features, data.n_classes, device, shape)
    return graph.run(data.x())


def accuracy(
    model: TrainableModel,
    data: Dataset,
    *,
    device: type[DeviceTag] = CPU,
    input_shape: tuple[int, ...] | None = None,
) -> float:
    """The fraction of ``data`` whose most probable class is its label."""
    probs = predict(model, data, device=device, input_shape=input_shape)
    return float(np.mean(probs.argmax(axis=1) == data.labels))


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


def _snapshot(step: TrainStep) -> Snapshot:
    return [(w, w.array.copy()) for _, w in step.weights]


def _restore(snapshot: Snapshot) -> None:
    for weight, saved in snapshot:
        weight.assign(Tensor(saved, weight.elem, weight.device, dim_of_rank(weight.rank)))


def fit(
    model: TrainableModel,
    train: Dataset,
    optimizer: Optimizer,
    *,
    test: Dataset | None = None,
    epochs: int = 20,
    batch_size: int = 32,
    seed: int = 0,
    progress: bool | None = None,
    early_stopping: EarlyStopping | None = None,
    stream: TextIO | None = None,
    on_epoch: Callable[[int, History], None] | None = None,
    device: type[DeviceTag] = CPU,
    on_nonfinite: NonFinite = "raise",
    input_shape: tuple[int, ...] | None = None,
) -> History:
    """Train ``model`` on ``train`` for ``epochs`` passes of shuffled mini-batches.

    The model's parameters must already be initialised (``layer_init``). The shuffling is
    drawn from ``numpy.random.default_rng(seed)``. ``progress``: None shows a bar on a
    terminal and a line per epoch elsewhere, False nothing (``stream`` defaults to stderr).
    Returns the per-epoch history; with ``early_stopping`` the model ends with the weights
    of its best epoch (``history.best_epoch``). ``on_epoch(epoch, history)`` is called after
    each epoch (0-based), e.g. to log or to time it. ``device``: where the model's
    parameters live and the steps run (the data are copied there once).

    Every argument is checked before the first step (a ``TrainingError`` naming it). A
    batch whose loss is NaN or Inf (a diverging run, e.g. a learning rate far too high)
    stops training with a ``TrainingError`` naming the epoch, the batch and the learning
    rate (the weights may hold NaN or Inf by then); ``on_nonfinite="continue"`` trains on
    and records the non-finite losses instead. Losses are read in chunks of 16 batches, so
    up to 15 more batches may have run when the error is raised.

    ``input_shape``: the shape of one sample as the model takes it, e.g. ``(1, 8, 8)`` for a
    convolutional model of the 64-feature digits (the model gets (batch, 1, 8, 8) batches);
    None (the default) feeds (batch, features) rows.
    """
    epochs, batch_size, seed = check_fit(
        train,
        optimizer,
        test=test,
        epochs=epochs,
        batch_size=batch_size,
        seed=seed,
        progress=progress,
        early_stopping=early_stopping,
        stream=stream,
        on_epoch=on_epoch,
        device=device,
        on_nonfinite=on_nonfinite,
    )
    shape = check_input_shape(input_shape, train.n_features)
    rng = np.random.default_rng(seed)
    step = TrainStep(model, optimizer, train.n_features, train.n_classes, device, shape)
    tester = None
    if test is not None:
        tester = PredictGraph(model, len(test), test.n_features, test.n_classes, device, shape)
    history, report = History(), Progress(progress, epochs, stream)
    best: tuple[float, Snapshot] | None = None
    waited = 0
    on_device = backends.array_module(device).asarray  # numpy's: no copy on the CPU
    n, labels = len(train), train.labels
    features = on_device(train.features.reshape(n, *(shape or (train.n_features,))))
    targets = on_device(train.y().array)  # one-hot once; batches are gathered into the step
    metrics = EpochMetrics(labels, batch_size, train.n_classes, on_nonfinite == "raise")
    per_epoch = n_batches(n, batch_size)
    for epoch in range(epochs):
        report.start_epoch(epoch, per_epoch)
        order = rng.permutation(n)  # the order ``batches(train, batch_size, rng)`` gives
        rows = on_device(order)
        metrics.begin(order)
        for start in range(0, n, batch_size):
            stop = min(start + batch_size, n)
            probs = step.run_rows(features, targets, rows[start:stop])
            metrics.add(probs)
            if metrics.first_bad is not None:
                report.abort()
                where = Where(epoch, epochs, start // batch_size, per_epoch, batch_size)
                raise diverged(metrics, optimizer, where)
            if report.shows_batches:
                report.batch(metrics.batch_loss(probs, order[start:stop]))
        loss, acc = metrics.end()
        if metrics.check:  # the epoch's losses, then its last update, which no loss shows
            where = Where(epoch, epochs, per_epoch - 1, per_epoch, batch_size)
            weights = step.weights
            error = (
                diverged(metrics, optimizer, where)
                if metrics.first_bad is not None
                else weights_diverged(weights, optimizer, where)
            )
            if error is not None:
                report.abort()
                raise error
        history.train_loss.append(loss)
        history.train_acc.append(acc)
        line = f"epoch {epoch + 1:>3}/{epochs}  loss {history.train_loss[-1]:.4f}  "
        line += f"train acc {history.train_acc[-1]:.4f}"
        if tester is not None and test is not None:
            acc = float(np.mean(tester.run(test.x()).argmax(axis=1) == test.labels))
            history.test_acc.append(acc)
            line += f"  test acc {acc:.4f}"
        report.end_epoch(line)
        if on_epoch is not None:
            on_epoch(epoch, history)
        if early_stopping is None:
            continue
        value = history.metric(early_stopping.monitor)[-1]
        if early_stopping.improved(value, best[0] if best else None):
            params = _snapshot(step)
            best, waited, history.best_epoch = (value, params), 0, epoch
            continue
        waited += 1
        if waited >= early_stopping.patience:
            history.stopped_early = epoch + 1 < epochs
            break
    if best is not None:
        _restore(best[1])
    return history
