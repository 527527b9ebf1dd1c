"""``fit``: mini-batch training of a classifier, with history, progress and early stopping.

::

    split = load_digits(seed=0)
    history = fit(mlp, split.train, Adam(1e-3), test=split.test, epochs=20, batch_size=32,
                  early_stopping=EarlyStopping("test_acc", patience=5))
    accuracy(mlp, split.test)

Each mini-batch runs one step: the model's forward, softmax, the backward of the NLL loss
and every gradient are one lazy graph (built once per batch size, see ``step.py``); SGD,
Momentum and Adam evaluate it with every parameter update in one pass (other optimizers
evaluate the gradients, then update). The batch's loss for the history is computed from the
probabilities the step returns and the batch's labels.

``device=tn.GPU`` trains a model built on the GPU (``build_mlp(..., device=tn.GPU)``): the
data are copied to the GPU once, each batch is gathered there, and the probabilities come
back to the host once per chunk of batches for the loss and accuracy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import numpy as np
import numpy.typing as npt

from .. import backends
from ..data.tensor import Tensor
from ..errors import TrainingError, message
from ..model.optim import Optimizer
from ..tags import CPU, DeviceTag, Float32, dim_of_rank
from .data import Dataset, n_batches
from .history import History
from .model import TrainableModel
from .progress import Progress
from .step import PredictGraph, StepGraph

__all__ = ["EarlyStopping", "Metric", "accuracy", "fit", "predict"]

Metric = Literal["train_loss", "train_acc", "test_acc"]
_sum = np.add.reduce  # ndarray.sum without its Python wrapper
Snapshot = list[tuple[Tensor[Float32, Any, Any], Any]]


@dataclass(frozen=True)
class EarlyStopping:
    """Stop when ``monitor`` has not improved by more than ``min_delta`` for ``patience``
    epochs, and give the model back the weights of its best epoch. Loss improves downwards,
    accuracies upwards."""

    monitor: Metric = "test_acc"
    patience: int = 5
    min_delta: float = 0.0

    def improved(self, value: float, best: float | None) -> bool:
        """Whether ``value`` beats ``best`` by more than ``min_delta``."""
        if best is None:
            return True
        if self.monitor == "train_loss":
            return value < best - self.min_delta
        return value > best + self.min_delta


def _fail(headline: str, received: object, hint: str) -> TrainingError:
    return TrainingError(message(headline, [("received", repr(received))], hint=hint))


def _check(
    train: Dataset, epochs: int, test: Dataset | None, stopping: EarlyStopping | None
) -> None:
    if epochs < 1:
        raise _fail("cannot fit: epochs must be at least 1.", epochs, "use e.g. epochs=20.")
    if len(train) == 0:
        raise _fail("cannot fit: the training set is empty.", 0, "give at least one sample.")
    if stopping is None:
        return
    if stopping.monitor not in ("train_loss", "train_acc", "test_acc"):
        hint = "monitor one of 'train_loss', 'train_acc', 'test_acc'."
        raise _fail("cannot fit: unknown metric for early stopping.", stopping.monitor, hint)
    if stopping.monitor == "test_acc" and test is None:
        hint = "pass test=... or monitor 'train_loss'."
        raise _fail("cannot fit: early stopping on test_acc needs a test set.", None, hint)
    if stopping.patience < 1:
        hint = "use e.g. patience=5."
        raise _fail("cannot fit: patience must be at least 1.", stopping.patience, hint)


def predict(
    model: TrainableModel, data: Dataset, *, device: type[DeviceTag] = CPU
) -> npt.NDArray[np.float32]:
    """Class probabilities (n, classes), on the host, of every sample of ``data``, computed
    on ``device`` (where the model's parameters live)."""
    graph = PredictGraph(model, len(data), data.n_features, data.n_classes, device)
    return graph.run(data.x())


def accuracy(model: TrainableModel, data: Dataset, *, device: type[DeviceTag] = CPU) -> float:
    """The fraction of ``data`` whose most probable class is its label."""
    return float(np.mean(predict(model, data, device=device).argmax(axis=1) == data.labels))


def _snapshot(step: StepGraph) -> Snapshot:
    return [(w, w.array.copy()) for _, w, _ in step.grads]


def _restore(snapshot: Snapshot) -> None:
    for weight, saved in snapshot:
        weight.assign(Tensor(saved, weight.elem, weight.device, dim_of_rank(weight.rank)))


class _EpochMetrics:
    """An epoch's training loss and accuracy from each batch's probabilities (computed
    before that batch's update): the mean NLL of the one-hot targets (``nll_loss``:
    -mean ln p[i, label i]) and the fraction of argmax hits.

    Batches are reduced in chunks of ``CHUNK``: one concatenate, gather and argmax per
    chunk instead of per batch (a training step's own numpy calls cost about as much).
    """

    CHUNK = 16

    def __init__(self, labels: npt.NDArray[np.int64], batch_size: int, classes: int) -> None:
        n = len(labels)
        self.labels = labels
        # A sample's offset in its chunk's flattened (rows, classes) probabilities: every
        # chunk but the last spans CHUNK full batches.
        self.offset = np.arange(n) % (batch_size * self.CHUNK) * classes
        self.picked = np.empty(n, np.float32)
        self.predicted = np.empty(n, np.intp)
        self.pending: list[npt.NDArray[np.float32]] = []
        self.done = 0
        self.order = np.arange(n)
        self.label_at = self.offset

    def begin(self, order: npt.NDArray[np.int64]) -> None:
        """Start an epoch that visits the samples in ``order``."""
        self.order = order
        self.label_at = self.labels[order] + self.offset
        self.pending.clear()
        self.done = 0

    def add(self, probs: Any) -> None:
        """The next batch's probabilities, on any device (kept until its chunk is reduced)."""
        self.pending.append(probs)
        if len(self.pending) == self.CHUNK:
            self._reduce()

    def batch_loss(self, probs: Any, rows: npt.NDArray[np.int64]) -> float:
        """One batch's mean NLL (for a progress bar)."""
        picked = backends.to_host(probs)[np.arange(len(rows)), self.labels[rows]]
        return -float(np.log(picked).mean())

    def _reduce(self) -> None:
        if not self.pending:
            return
        chunk = np.concatenate(self.pending) if len(self.pending) > 1 else self.pending[0]
        chunk = backends.to_host(chunk)  # on the GPU: one copy to the host per chunk
        start, stop = self.done, self.done + len(chunk)
        # mode "clip" writes straight into out; the indices are in range by construction
        chunk.ravel().take(self.label_at[start:stop], 0, self.picked[start:stop], "clip")
        chunk.argmax(1, self.predicted[start:stop])
        self.pending.clear()
        self.done = stop

    def end(self) -> tuple[float, float]:
        """The epoch's (loss, accuracy)."""
        self._reduce()
        n = len(self.labels)
        loss = -float(_sum(np.log(self.picked), axis=None)) / n
        hits = int(np.count_nonzero(self.predicted == self.labels[self.order]))
        return loss, hits / n


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
) -> History:
    """Train ``model`` on ``train`` for ``epochs`` passes of shuffled mini-batches.

    The model's parameters must already be initialised (``layer_init``). The shuffling is
    drawn from ``numpy.random.default_rng(seed)``. ``progress``: None shows a bar on a
    terminal and a line per epoch elsewhere, False nothing (``stream`` defaults to stderr).
    Returns the per-epoch history; with ``early_stopping`` the model ends with the weights
    of its best epoch (``history.best_epoch``). ``on_epoch(epoch, history)`` is called after
    each epoch (0-based), e.g. to log or to time it. ``device``: where the model's
    parameters live and the steps run (the data are copied there once).
    """
    _check(train, epochs, test, early_stopping)
    rng = np.random.default_rng(seed)
    steps: dict[int, StepGraph] = {}
    tester = None
    if test is not None:
        tester = PredictGraph(model, len(test), test.n_features, test.n_classes, device)
    history, report = History(), Progress(progress, epochs, stream)
    best: tuple[float, Snapshot] | None = None
    waited = 0
    on_device = backends.array_module(device).asarray  # numpy's: no copy on the CPU
    n, labels = len(train), train.labels
    features = on_device(train.features)
    targets = on_device(train.y().array)  # one-hot once; batches are gathered into the step
    metrics = _EpochMetrics(labels, batch_size, train.n_classes)
    for epoch in range(epochs):
        report.start_epoch(epoch, n_batches(n, batch_size))
        order = rng.permutation(n)  # the order ``batches(train, batch_size, rng)`` gives
        rows = on_device(order)
        metrics.begin(order)
        for start in range(0, n, batch_size):
            stop = min(start + batch_size, n)
            step = steps.get(stop - start)
            if step is None:
                step = StepGraph(model, stop - start, train.n_features, train.n_classes, device)
                steps[stop - start] = step
            probs = step.run_rows(features, targets, rows[start:stop], optimizer)
            metrics.add(probs)
            if report.shows_batches:
                report.batch(metrics.batch_loss(probs, order[start:stop]))
        loss, acc = metrics.end()
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
            params = _snapshot(next(iter(steps.values())))
            best, waited, history.best_epoch = (value, params), 0, epoch
            continue
        waited += 1
        if waited >= early_stopping.patience:
            history.stopped_early = epoch + 1 < epochs
            break
    if best is not None:
        _restore(best[1])
    return history
