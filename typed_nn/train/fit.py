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

from .. import devices
from ..data.tensor import Tensor
from ..distributed.data_parallel import (
    check_batch,
    check_device,
    check_single_process,
    epoch_totals,
    local_order,
    shard,
    sync_parameters,
)
from ..distributed.world import World
from ..distributed.world import world as current_world
from ..errors import TrainingError, message
from ..model.optim import Optimizer
from ..ops import mse_loss
from ..tags import CPU, DeviceTag, Dim2, Float32, dim_of_rank
from .arrays import ArrayDataset
from .data import Dataset, n_batches
from .epoch_metrics import EpochMetrics, Where, diverged, weights_diverged
from .fit_checks import NonFinite, check_fit
from .history import History
from .model import TrainableModel
from .progress import Progress
from .regression import LossGraph, LossMetrics, check_arrays
from .resume import PathLike, check_checkpointing, resume, save_progress
from .step import Loss, PredictGraph, TrainStep
from .stopping import EarlyStopping

__all__ = ["accuracy", "fit", "predict"]

Snapshot = list[tuple[Tensor[Float32, Any, Any], Any]]


def predict(
    model: TrainableModel,
    data: Dataset | ArrayDataset,
    *,
    device: type[DeviceTag] = CPU,
    input_shape: tuple[int, ...] | None = None,
) -> npt.NDArray[np.float32]:
    """Class probabilities (n, classes), on the host, of every sample of ``data``, computed
    on ``device`` (where the model's parameters live); for an ``ArrayDataset`` (features,
    targets), the model's outputs (n, k), shaped like the targets. ``input_shape`` as for
    ``fit``."""
    if isinstance(data, ArrayDataset):
        features, width = data.arrays[0], check_arrays("data", data)[1]
        shape = check_input_shape(input_shape, features.shape[1])
        graph = PredictGraph(
            model, len(data), features.shape[1], width, device, regression=True, input_shape=shape
        )
        return graph.run(Tensor(features, Float32, CPU, Dim2))
    shape = check_input_shape(input_shape, data.n_features)
    graph = PredictGraph(
        model, len(data), data.n_features, data.n_classes, device, input_shape=shape
    )
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
    train: Dataset | ArrayDataset,
    optimizer: Optimizer,
    *,
    test: Dataset | ArrayDataset | None = None,
    epochs: int = 20,
    batch_size: int = 32,
    seed: int = 0,
    progress: bool | None = None,
    early_stopping: EarlyStopping | None = None,
    stream: TextIO | None = None,
    on_epoch: Callable[[int, History], None] | None = None,
    device: type[DeviceTag] = CPU,
    on_nonfinite: NonFinite = "raise",
    checkpoint_path: PathLike | None = None,
    checkpoint_every: int = 1,
    resume_from: PathLike | None = None,
    loss: Loss | None = None,
    world: World | None = None,
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

    ``checkpoint_path``: write a checkpoint there (atomically, replacing the last one) every
    ``checkpoint_every`` epochs and after the last one: weights, optimizer state, epochs done,
    the shuffling generator, the history and early stopping's best weights.
    ``resume_from``: continue the run a checkpoint was written by, up to ``epochs`` in all —
    bit for bit as if it had not stopped (same model, optimizer and data; the checkpoint is
    checked against them before anything changes).

    ``train`` an ``ArrayDataset`` of (n, f) float32 features and (n, k) float32 targets
    trains a regression: the model's (batch, k) outputs go into ``loss(targets, outputs)``
    (``ops.mse_loss`` by default; ``l1_loss``, ``huber_loss``, ...); the history records the
    epochs' ``train_loss`` and, with a ``test`` set, ``test_loss`` (no accuracies).

    ``world`` (default: ``typed_nn.distributed.world()``, the launcher's): with several
    ranks (``mpiexec -n N``), training is data-parallel — ``batch_size`` is the global
    batch, split across the ranks (a multiple of their number), gradients are summed over
    the ranks inside each step, the history is the same on every rank and only rank 0
    shows progress and writes checkpoints (docs/distributed.md). Data-parallel training
    takes a classification ``Dataset``.

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
        loss=loss,
    )
    target, every, source = check_checkpointing(checkpoint_path, checkpoint_every, resume_from)
    world = world if world is not None else current_world()
    check_batch(world, batch_size)
    check_device(world, device)
    rng = np.random.default_rng(seed)  # one seed: the same order on every rank
    on_device = devices.array_module(device).asarray  # numpy's: no copy on the CPU
    check = on_nonfinite == "raise"
    n = len(train)
    tester: PredictGraph | LossGraph | None = None
    metrics: EpochMetrics | LossMetrics
    if isinstance(train, ArrayDataset):  # a regression, on the caller's loss
        check_single_process(world, "a regression (an ArrayDataset)")
        chosen = loss if loss is not None else mse_loss
        (width, outputs), (x_all, y_all) = check_arrays("train", train), train.arrays
        shape = check_input_shape(input_shape, width)
        step = TrainStep(model, optimizer, width, outputs, device, loss=chosen, input_shape=shape)
        if isinstance(test, ArrayDataset):
            tester = LossGraph(model, chosen, test, device)
        features, targets, metrics = (
            on_device(x_all.reshape(n, *step.sample_shape)),
            on_device(y_all),
            LossMetrics(n, batch_size, check),
        )
    else:
        shape = check_input_shape(input_shape, train.n_features)
        step = TrainStep(
            model,
            optimizer,
            train.n_features,
            train.n_classes,
            device,
            world=world,
            input_shape=shape,
        )
        if world.size > 1:
            sync_parameters(world, step.collect_weights(), optimizer)
        if isinstance(test, Dataset):
            tester = PredictGraph(
                model, len(test), test.n_features, test.n_classes, device, input_shape=shape
            )
        features = on_device(train.features.reshape(n, *step.sample_shape))
        targets = on_device(train.y().array)  # one-hot once; batches are gathered into the step
        metrics = EpochMetrics(train.labels, batch_size // world.size, train.n_classes, check)
    history = History()
    report = Progress(progress if world.is_root else False, epochs, stream)
    best: tuple[float, Snapshot] | None = None
    waited, first = 0, 0
    if source is not None:
        weights = step.collect_weights()
        first, best, waited = resume(source, weights, optimizer, rng, history, early_stopping)
    per_epoch = n_batches(n, batch_size)
    for epoch in range(first, epochs):
        report.start_epoch(epoch, per_epoch)
        order = rng.permutation(n)  # the order ``batches(train, batch_size, rng)`` gives
        rows = on_device(order)
        metrics.begin(local_order(world, order, batch_size))
        for start in range(0, n, batch_size):
            lo, hi, counted = start, min(start + batch_size, n), True
            if world.size > 1:  # this rank's part of the global batch
                lo, hi, weight, counted = shard(world, lo, hi)
                step.all_reduce.set_weight(weight)
            probs = step.run_rows(features, targets, rows[lo:hi])
            if counted:
                metrics.add(probs)
            if metrics.first_bad is not None:
                report.abort()
                where = Where(epoch, epochs, start // batch_size, per_epoch, batch_size)
                raise diverged(metrics, optimizer, where)
            if report.shows_batches:
                report.batch(metrics.batch_loss(probs, order[lo:hi]))
        acc: float | None
        if world.size > 1 and isinstance(metrics, EpochMetrics):  # summed over the ranks
            epoch_loss, acc = epoch_totals(world, *metrics.totals())
        else:
            epoch_loss, acc = metrics.end()
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
        history.train_loss.append(epoch_loss)
        line = f"epoch {epoch + 1:>3}/{epochs}  loss {epoch_loss:.4f}"
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
        report.end_epoch(line)
        if on_epoch is not None:
            on_epoch(epoch, history)
        stop = False
        if early_stopping is not None:
            value = history.metric(early_stopping.monitor)[-1]
            if early_stopping.improved(value, best[0] if best else None):
                best, waited, history.best_epoch = (value, _snapshot(step)), 0, epoch
            else:
                waited += 1
                stop = waited >= early_stopping.patience
                history.stopped_early = stop and epoch + 1 < epochs
        last = (epoch + 1) % every == 0 or stop or epoch + 1 == epochs
        if target is not None and world.is_root and last:
            save_progress(target, step.weights, optimizer, epoch + 1, rng, history, best)
        if stop:
            break
    if best is not None:
        _restore(best[1])
    return history
