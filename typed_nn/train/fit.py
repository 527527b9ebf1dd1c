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
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt

from ..data.tensor import Tensor
from ..distributed.data_parallel import (
    check_batch,
    check_device,
    check_same_run,
    sync_parameters,
)
from ..distributed.world import World
from ..distributed.world import world as current_world
from ..layers.state import model_state
from ..model.optim import Optimizer
from ..tags import CPU, DeviceTag, Dim2, Float32
from .arrays import ArrayDataset
from .checks import bad_argument
from .data import Dataset
from .fit_checks import NonFinite, check_fit, check_input_shape, check_model
from .fit_loop import FitLoop, build_setup
from .history import History
from .model import TrainableModel
from .progress import Progress
from .regression import check_arrays
from .resume import PathLike, check_checkpointing
from .same_run import run_settings
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
    _check_predict(model, data, (Dataset, ArrayDataset))
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
    _check_predict(model, data, (Dataset,))
    probs = predict(model, data, device=device, input_shape=input_shape)
    return float(np.mean(probs.argmax(axis=1) == data.labels))


def _check_predict(model: object, data: object, kinds: tuple[type, ...]) -> None:
    """predict's and accuracy's model and data."""
    check_model(model, None, "cannot predict")
    if not isinstance(data, kinds):
        allowed = " or ".join(f"a typed_nn.train.{k.__name__}" for k in kinds)
        hint = "pass the data set the model was trained for, e.g. split.test."
        raise bad_argument("cannot predict", "data", allowed, data, hint)


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
    """Train ``model`` on ``train`` for ``epochs`` passes of shuffled mini-batches and return
    the per-epoch history (docs/training.md says more about each argument).

    The model's parameters must already be initialised (``layer_init``); the shuffling is
    drawn from ``numpy.random.default_rng(seed)``. Every argument is checked before the first
    step (a ``TrainingError`` naming it), and a NaN or Inf loss stops training unless
    ``on_nonfinite="continue"``. ``train``: a classification ``Dataset`` (softmax + NLL on
    the logits), or an ``ArrayDataset`` for a regression on ``loss`` of the outputs.
    ``device``: where the parameters live and the steps run. ``checkpoint_path`` /
    ``resume_from``: write checkpoints / continue a run bit for bit. ``world``: with several
    ranks (``mpiexec -n N``) training is data-parallel, ``batch_size`` the global batch.
    ``input_shape``: one sample's shape as the model takes it (e.g. ``(1, 8, 8)``).
    """
    # fmt: off
    return run_fit(FitArguments(
        model, train, optimizer, test, epochs, batch_size, seed, progress, early_stopping, stream,
        on_epoch, device, on_nonfinite, checkpoint_path, checkpoint_every, resume_from, loss,
        world, input_shape,
    ))
    # fmt: on


@dataclass(frozen=True, slots=True)
class FitArguments:
    """:func:`fit`'s arguments as given (in its order); :func:`run_fit` checks them."""

    model: TrainableModel
    train: Dataset | ArrayDataset
    optimizer: Optimizer
    test: Dataset | ArrayDataset | None
    epochs: int
    batch_size: int
    seed: int
    progress: bool | None
    early_stopping: EarlyStopping | None
    stream: TextIO | None
    on_epoch: Callable[[int, History], None] | None
    device: type[DeviceTag]
    on_nonfinite: NonFinite
    checkpoint_path: PathLike | None
    checkpoint_every: int
    resume_from: PathLike | None
    loss: Loss | None
    world: World | None
    input_shape: tuple[int, ...] | None


def run_fit(a: FitArguments) -> History:
    """:func:`fit`: check every argument, build the step and the data, run the epochs."""
    epochs, batch_size, seed = check_fit(
        a.train,
        a.optimizer,
        test=a.test,
        epochs=a.epochs,
        batch_size=a.batch_size,
        seed=a.seed,
        progress=a.progress,
        early_stopping=a.early_stopping,
        stream=a.stream,
        on_epoch=a.on_epoch,
        device=a.device,
        on_nonfinite=a.on_nonfinite,
        loss=a.loss,
    )
    target, every, source = check_checkpointing(
        a.checkpoint_path, a.checkpoint_every, a.resume_from
    )
    world = _world(a.world)
    check_model(a.model, _reads_state(target, source, world))
    _check_world(a, world, (epochs, batch_size, seed), resuming=source is not None)
    setup = build_setup(
        a.model,
        a.train,
        a.optimizer,
        a.test,
        batch_size=batch_size,
        device=a.device,
        world=world,
        loss=a.loss,
        input_shape=a.input_shape,
        check=a.on_nonfinite == "raise",
    )
    loop = FitLoop(
        setup,
        a.optimizer,
        world,
        a.test,
        n=len(a.train),
        epochs=epochs,
        batch_size=batch_size,
        rng=np.random.default_rng(seed),  # one seed: the same order on every rank
        report=Progress(a.progress if world.is_root else False, epochs, a.stream),
        early_stopping=a.early_stopping,
        on_epoch=a.on_epoch,
        checkpoint_path=target,
        checkpoint_every=every,
    )
    first = loop.resume(source) if source is not None else 0
    if world.size > 1:  # the same model, from the same epoch; then rank 0's state everywhere
        sync_parameters(world, model_state(a.model), a.optimizer, first)
    return loop.run(first)


def _check_world(
    a: FitArguments, world: World, counts: tuple[int, int, int], resuming: bool
) -> None:
    """What the ranks of a data-parallel run must agree on, checked on every rank before
    any rank can fail alone; then the batch rule and the device (alike on every rank)."""
    epochs, batch_size, seed = counts
    if world.size > 1:  # alone, nothing to compare (and no data to digest)
        settings = run_settings(
            a.train,
            a.test,
            a.optimizer,
            epochs=epochs,
            batch_size=batch_size,
            seed=seed,
            early_stopping=a.early_stopping,
            device=a.device,
            resuming=resuming,
        )
        check_same_run(world, settings)
    check_batch(world, batch_size)
    check_device(world, a.device)


def _world(given: object) -> World:
    """fit's ``world``: the one given, or this process's."""
    if given is None:
        return current_world()
    if not isinstance(given, World):
        hint = "leave world out (fit uses typed_nn.distributed.world()), or pass that World."
        raise bad_argument(
            "cannot fit", "world", "a typed_nn.distributed World or None", given, hint
        )
    return given


def _reads_state(target: Path | None, source: Path | None, world: World) -> str | None:
    """Why the run reads the model's whole state, if it does."""
    if target is not None:
        return "checkpoint_path (a checkpoint)"
    if source is not None:
        return "resume_from (resuming)"
    return "data-parallel training (several ranks)" if world.size > 1 else None
