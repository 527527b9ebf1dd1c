"""The phases of one ``fit`` call, after its arguments are checked.

``build_setup`` builds the training step (a regression's on the caller's loss, a
classifier's on softmax + NLL) and copies the data to the device once; ``FitLoop`` runs the
epochs: each epoch's batches, the divergence checks, the history and the progress line,
early stopping and the checkpoints, and restores early stopping's best weights at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import devices
from ..distributed.data_parallel import (
    check_single_process,
    epoch_totals,
    local_order,
    part_sizes,
    shard,
    sync_buffers,
)
from ..distributed.world import World
from ..errors import TrainingError, TypedNNError, message
from ..ops import mse_loss
from .arrays import ArrayDataset
from .callbacks import Callback
from .data import Dataset, n_batches
from .epoch_metrics import EpochMetrics, Where, diverged, weights_diverged
from .fit_checks import check_input_shape
from .history import History
from .progress import Progress
from .regression import LossGraph, LossMetrics, check_arrays
from .resume import Snapshot, Weights, restore, resume, save_progress, snapshot
from .step import Loss, PredictGraph, TrainStep
from .stopping import EarlyStopping
from .trainee import Trainee

__all__ = ["FitLoop", "TrainingSetup", "build_setup"]


@dataclass(frozen=True)
class TrainingSetup:
    """What a run trains with: the step, the training data on the device (features shaped
    as the step takes them, targets as integer labels or as given), the epoch's metrics and
    the graph that evaluates the test set (None without one)."""

    step: TrainStep
    features: Any
    targets: Any
    metrics: EpochMetrics | LossMetrics
    tester: PredictGraph | LossGraph | None
    on_device: Callable[[Any], Any]


def _part_refused(size: int, batch: int, n: int, ranks: int, exc: Exception) -> TrainingError:
    """A rank's part of a global batch that the step refuses (a training batch norm and a
    part of one sample): the split that made it, and batch sizes whose parts it takes."""
    text, _, hint = str(exc).partition("\nhint: ")
    last = n - (n - 1) // batch * batch
    return TrainingError(
        message(
            f"cannot train data-parallel: a rank's part of {size} sample(s) is refused.",
            [
                ("split", f"batches of {batch} over {ranks} ranks (the last one: {last})"),
                ("refused", text.split("\n", 1)[0]),
            ],
            hint="choose a batch size whose last batch gives every rank a part the model "
            "takes, or drop the last samples from the training set"
            + (f"; the step says: {hint}" if hint else "."),
        )
    )


def build_setup(
    trainee: Trainee,
    train: Dataset | ArrayDataset,
    test: Dataset | ArrayDataset | None,
    *,
    batch_size: int,
    world: World,
    loss: Loss | None,
    input_shape: tuple[int, ...] | None,
    check: bool,
) -> TrainingSetup:
    """The step and the data of a regression (``train`` an ``ArrayDataset``) or a classifier;
    ``check``: whether a non-finite loss stops the run."""
    on_device = devices.array_module(trainee.device).asarray  # numpy's: no copy on the CPU
    if isinstance(train, ArrayDataset):  # a regression, on the caller's loss
        check_single_process(world, "a regression (an ArrayDataset)")
        chosen = loss if loss is not None else mse_loss
        (width, outputs), (x_all, y_all) = check_arrays("train", train), train.arrays
        shape = check_input_shape(input_shape, width)
        step = TrainStep(trainee, width, outputs, loss=chosen, input_shape=shape)
        tester = LossGraph(trainee, chosen, test) if isinstance(test, ArrayDataset) else None
        return TrainingSetup(
            step,
            on_device(x_all.reshape(len(train), *step.sample_shape)),
            on_device(y_all),
            LossMetrics(len(train), batch_size, check),
            tester,
            on_device,
        )
    shape = check_input_shape(input_shape, train.n_features)
    step = TrainStep(trainee, train.n_features, train.n_classes, world=world, input_shape=shape)
    predicts = None
    if isinstance(test, Dataset):
        predicts = PredictGraph(
            trainee, len(test), test.n_features, test.n_classes, input_shape=shape
        )
    return TrainingSetup(
        step,
        on_device(train.features.reshape(len(train), *step.sample_shape)),
        on_device(train.labels.astype(np.int64)),  # gathered into the step's Int64 labels
        EpochMetrics(train.labels, batch_size // world.size, train.n_classes, check),
        predicts,
        on_device,
    )


@dataclass
class FitLoop:
    """The epochs of one run, and where it stands: the shuffling generator, the history,
    early stopping's best (value, weights) and the epochs waited since."""

    setup: TrainingSetup
    trainee: Trainee
    world: World
    test: Dataset | ArrayDataset | None
    n: int
    epochs: int
    batch_size: int
    rng: np.random.Generator
    report: Progress
    early_stopping: EarlyStopping | None
    callbacks: Sequence[Callback]
    checkpoint_path: Path | None
    checkpoint_every: int
    history: History = field(default_factory=History)
    best: tuple[float, Snapshot] | None = None
    waited: int = 0

    @property
    def per_epoch(self) -> int:
        return n_batches(self.n, self.batch_size)

    def resume(self, source: Path) -> int:
        """Load the checkpoint at ``source`` (the model's state, the optimizer, the shuffling
        generator, the history, early stopping's best); returns the epoch the run continues
        with."""
        first, self.best, self.waited = resume(
            source,
            self.trainee.model,
            self._weights(),
            self.trainee.optimizer,
            self.rng,
            self.history,
            self.early_stopping,
        )
        return first

    def _weights(self) -> Weights:
        """The model's parameters and buffers by name (a model that is no typed_nn layer:
        the weights its step trains)."""
        state = self.trainee.state().of("parameter", "buffer")
        return [(name, entry.read()) for name, entry in state.items()]

    def _trained(self) -> Weights:
        """The parameters the step trains, by name."""
        return [(n, e.read()) for n, e in self.trainee.state().parameters.items()]

    def run(self, first: int) -> History:
        """Train epochs ``first`` to ``epochs`` (fewer if early stopping stops the run): the
        model in training mode for the epochs, in evaluation mode for the test set, and back
        in the mode it had at the end."""
        training = self.trainee.training
        last = self._last_epoch(first)
        try:
            if first < last:
                self.trainee.set_training(True)  # the mode the steps are traced in
                self._prepare_steps()
            for callback in self.callbacks:
                callback.on_train_begin(self.history)
            for epoch in range(first, last):
                self.trainee.set_training(True)
                epoch_loss, acc = self._train_epoch(epoch)
                if self.world.size > 1:  # rank 0's statistics everywhere
                    sync_buffers(self.world, self.trainee.state())
                self._check_finite(epoch)
                self.trainee.set_training(False)
                self._record(epoch, epoch_loss, acc)
                for callback in self.callbacks:
                    callback.on_epoch_end(epoch, self.history)
                stop = self._stops_early(epoch)
                self._save_checkpoint(epoch, stop)
                if stop:
                    break
            if self.best is not None:
                restore(self.best[1])
        finally:  # an error too leaves the model in its mode
            self.trainee.set_training(training)
        for callback in self.callbacks:
            callback.on_train_end(self.history)
        return self.history

    def _last_epoch(self, first: int) -> int:
        """The end of the epochs to train: ``first`` for a resumed run whose early stopping
        had stopped it (the patience ran out at the checkpoint's epoch), else ``epochs``."""
        stopping = self.early_stopping
        if first > 0 and stopping is not None and self.waited >= stopping.patience:
            self.history.stopped_early = first < self.epochs
            return first
        return self.epochs

    def _prepare_steps(self) -> None:
        """Trace the step for every batch size of an epoch (the full batch and a shorter
        last one, or every rank's parts of them: a part one rank cannot take is an error on
        every rank, not one rank's error while the others wait) before the first step."""
        ranks, sizes = self.world.size, set()
        for start in range(0, self.n, self.batch_size):
            sizes |= part_sizes(ranks, min(start + self.batch_size, self.n) - start)
        largest, *smaller = sorted(sizes, reverse=True)
        self.setup.step.prepare(largest)  # an error at every size: the step's own
        for size in smaller:
            try:
                self.setup.step.prepare(size)
            except TypedNNError as exc:
                if ranks == 1:
                    raise
                raise _part_refused(size, self.batch_size, self.n, ranks, exc) from exc

    def _train_epoch(self, epoch: int) -> tuple[float, float | None]:
        """One pass of shuffled mini-batches; the epoch's loss and accuracy (None for a
        regression), summed over the ranks."""
        metrics, world = self.setup.metrics, self.world
        self.report.start_epoch(epoch, self.per_epoch)
        order = self.rng.permutation(self.n)  # the order ``batches(train, batch_size, rng)`` gives
        rows = self.setup.on_device(order)
        metrics.begin(local_order(world, order, self.batch_size))
        for start in range(0, self.n, self.batch_size):
            self._train_batch(epoch, start, order, rows)
        if world.size > 1 and isinstance(metrics, EpochMetrics):  # summed over the ranks
            return epoch_totals(world, *metrics.totals())
        return metrics.end()

    def _train_batch(self, epoch: int, start: int, order: Any, rows: Any) -> None:
        """One step on the batch at ``start`` of the epoch's ``order``."""
        step, metrics = self.setup.step, self.setup.metrics
        lo, hi, counted = start, min(start + self.batch_size, self.n), True
        if self.world.size > 1:  # this rank's part of the global batch
            lo, hi, weight, counted = shard(self.world, lo, hi)
            step.all_reduce.set_weight(weight)
        probs = step.run_rows(self.setup.features, self.setup.targets, rows[lo:hi])
        if counted:
            metrics.add(probs)
        if metrics.first_bad is not None:
            self.report.abort()
            batch = start // self.batch_size
            where = Where(epoch, self.epochs, batch, self.per_epoch, self.batch_size)
            raise diverged(metrics, self.trainee.rated, where)
        if self.report.shows_batches:
            self.report.batch(metrics.batch_loss(probs, order[lo:hi]))

    def _check_finite(self, epoch: int) -> None:
        """The epoch's losses, then its last update, which no loss shows."""
        metrics = self.setup.metrics
        if not metrics.check:
            return
        where = Where(epoch, self.epochs, self.per_epoch - 1, self.per_epoch, self.batch_size)
        error = (
            diverged(metrics, self.trainee.rated, where)
            if metrics.first_bad is not None
            else weights_diverged(self._trained(), self.trainee.rated, where)
        )
        if error is not None:
            self.report.abort()
            raise error

    def _record(self, epoch: int, epoch_loss: float, acc: float | None) -> None:
        """The epoch's losses and accuracies into the history, and its progress line."""
        history, tester, test = self.history, self.setup.tester, self.test
        history.train_loss.append(epoch_loss)
        line = f"epoch {epoch + 1:>3}/{self.epochs}  loss {epoch_loss:.4f}"
        if acc is not None:
            history.train_acc.append(acc)
            line += f"  train acc {acc:.4f}"
        if isinstance(tester, PredictGraph) and isinstance(test, Dataset):
            acc = float(np.mean(tester.run(test.x()).argmax(axis=1) == test.labels))
            history.test_acc.append(acc)
            line += f"  test acc {acc:.4f}"
        elif isinstance(tester, LossGraph):
            history.test_loss.append(tester.run())
            line += f"  test loss {history.test_loss[-1]:.4f}"
        self.report.end_epoch(line)

    def _stops_early(self, epoch: int) -> bool:
        """Early stopping's verdict after ``epoch`` (keeping the best epoch's weights)."""
        stopping = self.early_stopping
        if stopping is None:
            return False
        value = self.history.metric(stopping.monitor)[-1]
        if stopping.improved(value, self.best[0] if self.best else None):
            self.best, self.waited = (value, snapshot(self._weights())), 0
            self.history.best_epoch = epoch
            return False
        self.waited += 1
        stop = self.waited >= stopping.patience
        self.history.stopped_early = stop and epoch + 1 < self.epochs
        return stop

    def _save_checkpoint(self, epoch: int, stop: bool) -> None:
        """Every ``checkpoint_every`` epochs and after the last one, on rank 0."""
        done = epoch + 1
        last = done % self.checkpoint_every == 0 or stop or done == self.epochs
        if self.checkpoint_path is not None and self.world.is_root and last:
            save_progress(
                self.checkpoint_path,
                self.trainee.model,
                self.trainee.optimizer,
                done,
                self.rng,
                self.history,
                self.best,
            )
