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

from collections.abc import Callable
from typing import TextIO

import numpy as np
import numpy.typing as npt

from ..data.tensor import Tensor
from ..distributed.data_parallel import check_batch, check_device
from ..distributed.world import World
from ..distributed.world import world as current_world
from ..model.optim import Optimizer
from ..tags import CPU, DeviceTag, Dim2, Float32
from .arrays import ArrayDataset
from .data import Dataset
from .fit_checks import NonFinite, check_fit, check_input_shape
from .fit_loop import FitLoop, build_setup
from .history import History
from .model import TrainableModel
from .progress import Progress
from .regression import check_arrays
from .resume import PathLike, check_checkpointing
from .step import Loss, PredictGraph
from .stopping import EarlyStopping

__all__ = ["accuracy", "fit", "predict"]


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
    setup = build_setup(
        model,
        train,
        optimizer,
        test,
        batch_size=batch_size,
        device=device,
        world=world,
        loss=loss,
        input_shape=input_shape,
        check=on_nonfinite == "raise",
    )
    report = Progress(progress if world.is_root else False, epochs, stream)
    loop = FitLoop(
        setup,
        optimizer,
        world,
        test,
        n=len(train),
        epochs=epochs,
        batch_size=batch_size,
        rng=rng,
        report=report,
        early_stopping=early_stopping,
        on_epoch=on_epoch,
        checkpoint_path=target,
        checkpoint_every=every,
    )
    return loop.run(loop.resume(source) if source is not None else 0)
