"""``fit``: mini-batch training of a model, with history and callbacks.

::

    split = load_digits(seed=0)
    model = DigitsMLP()                                  # an nn.Module
    history = fit(model, split.train, optim.Adam(model, lr=1e-3), test=split.test,
                  epochs=20, callbacks=[ProgressBar(), EarlyStopping("test_acc", patience=5)])
    accuracy(model, split.test)

Each mini-batch runs one compiled step (``step.py``): the model's forward, the loss
(``ops.cross_entropy`` on the batch's integer labels), ``tn.grad(loss, model)`` and
``opt.step(grads)``, traced once per batch size by ``tn.compile`` and replayed for every
batch, every update written in place after every read. MetaNN layer models (``build_mlp``,
``build_cnn``: a ``TrainableModel``, or a ``LayerModel`` with its input shape) train with a
``typed_nn.model`` optimizer through the same loop (``trainee.py``).

The step runs where the model's parameters live (``build_mlp(..., device=tn.GPU)`` trains
on the GPU): the data are copied there once, each batch is gathered there, and the
probabilities come back to the host once per chunk of batches for the loss and accuracy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

from ..data.module import Module
from ..data.tensor import Tensor
from ..distributed.data_parallel import (
    check_batch,
    check_device,
    check_same_run,
    sync_parameters,
)
from ..distributed.world import World
from ..distributed.world import world as current_world
from ..errors import TrainingError, message
from ..model.optim import Optimizer as LayerOptimizer
from ..optim import Optimizer as ModuleOptimizer
from ..tags import CPU, DeviceTag, Dim2, Float32
from .arrays import ArrayDataset
from .callbacks import Callback
from .checks import bad_argument
from .data import Dataset
from .fit_checks import Hooks, check_fit, check_input_shape, check_model
from .fit_loop import FitLoop, build_setup
from .history import History
from .model import TrainableModel
from .progress import Progress
from .regression import check_arrays
from .resume import check_checkpointing
from .same_run import run_settings
from .step import Loss, PredictGraph
from .trainee import LayerModel, LayerTrainee, ModuleTrainee, Trainee, trainee_of

__all__ = ["accuracy", "fit", "predict"]

Model = Module | TrainableModel | LayerModel
"""What ``fit`` trains: an ``nn.Module``, or a MetaNN layer model (bare or with its input
shape)."""
P = ParamSpec("P")
R = TypeVar("R")

RENAMED = {
    "progress": "callbacks=[ProgressBar()] (no ProgressBar: fit prints nothing)",
    "stream": "callbacks=[ProgressBar(stream)]",
    "early_stopping": "callbacks=[EarlyStopping(...)]",
    "on_epoch": "callbacks=[LambdaCallback(on_epoch_end=fn)] (or a Callback subclass)",
    "on_nonfinite": "callbacks=[OnNonFinite('continue')]",
    "checkpoint_path": "callbacks=[ModelCheckpoint(path, every=N)]",
    "checkpoint_every": "callbacks=[ModelCheckpoint(path, every=N)]",
    "resume_from": "callbacks=[ModelCheckpoint(path, resume_from=path)]",
    "device": "nothing: fit trains where the model's parameters live (build it there)",
    "input_shape": "LayerModel(net, input_shape=...) as the model (a module reshapes itself)",
}
"""fit's keyword arguments before it took callbacks, and what replaces each."""


def _renamed_keywords(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` refusing a removed keyword argument with a ``TrainingError`` naming what
    replaces it (instead of Python's bare TypeError)."""

    @functools.wraps(fn)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        removed = [k for k in kwargs if k in RENAMED]
        if removed:
            raise TrainingError(
                message(
                    f"cannot fit: {removed[0]}= is no argument of fit any more.",
                    [(k, "use " + RENAMED[k]) for k in removed],
                    hint="fit(model, train, optimizer, *, loss, test, epochs, batch_size, "
                    "seed, callbacks, world): see docs/training.md.",
                )
            )
        return fn(*args, **kwargs)

    return checked


def predict(
    model: Model,
    data: Dataset | ArrayDataset,
    *,
    device: type[DeviceTag] | None = None,
    input_shape: tuple[int, ...] | None = None,
) -> npt.NDArray[np.float32]:
    """Class probabilities (n, classes), on the host, of every sample of ``data``, computed
    in evaluation mode where the model's parameters live (``device``: to say where a layer
    model's are, if it reports none); for an ``ArrayDataset`` (features, targets), the
    model's outputs (n, k), shaped like the targets. ``input_shape``: one sample's shape as
    a layer model takes it (a ``LayerModel`` carries its own)."""
    _check_predict(model, data, (Dataset, ArrayDataset))
    trainee = _predictor(model, device, input_shape)
    if isinstance(data, ArrayDataset):
        features, width = data.arrays[0], check_arrays("data", data)[1]
        shape = check_input_shape(trainee.input_shape, features.shape[1])
        graph = PredictGraph(
            trainee, len(data), features.shape[1], width, regression=True, input_shape=shape
        )
        return graph.run(Tensor(features, Float32, CPU, Dim2))
    shape = check_input_shape(trainee.input_shape, data.n_features)
    graph = PredictGraph(trainee, len(data), data.n_features, data.n_classes, input_shape=shape)
    return graph.run(data.x())


def accuracy(
    model: Model,
    data: Dataset,
    *,
    device: type[DeviceTag] | None = None,
    input_shape: tuple[int, ...] | None = None,
) -> float:
    """The fraction of ``data`` whose most probable class is its label."""
    _check_predict(model, data, (Dataset,))
    probs = predict(model, data, device=device, input_shape=input_shape)
    return float(np.mean(probs.argmax(axis=1) == data.labels))


def _predictor(
    model: Model, device: type[DeviceTag] | None, input_shape: tuple[int, ...] | None
) -> Trainee:
    """The trainee predict runs (no optimizer)."""
    if isinstance(model, Module):
        return ModuleTrainee(model, None)
    if isinstance(model, LayerModel):
        return LayerTrainee(model.net, None, input_shape or model.input_shape, device)
    return LayerTrainee(model, None, input_shape, device)


def _check_predict(model: object, data: object, kinds: tuple[type, ...]) -> None:
    """predict's and accuracy's model and data."""
    check_model(model.net if isinstance(model, LayerModel) else model, None, "cannot predict")
    if not isinstance(data, kinds):
        allowed = " or ".join(f"a typed_nn.train.{k.__name__}" for k in kinds)
        hint = "pass the data set the model was trained for, e.g. split.test."
        raise bad_argument("cannot predict", "data", allowed, data, hint)


@_renamed_keywords
def fit(
    model: Model,
    train: Dataset | ArrayDataset,
    optimizer: ModuleOptimizer[Any] | LayerOptimizer,
    *,
    loss: Loss | None = None,
    test: Dataset | ArrayDataset | None = None,
    epochs: int = 20,
    batch_size: int = 32,
    seed: int = 0,
    callbacks: Sequence[Callback] = (),
    world: World | None = None,
) -> History:
    """Train ``model`` on ``train`` for ``epochs`` passes of shuffled mini-batches and return
    the per-epoch history (docs/training.md says more about each argument).

    ``model``: an ``nn.Module`` with ``optimizer`` a ``typed_nn.optim`` optimizer built from
    it (``optim.Adam(model, lr=1e-3)``), or a MetaNN layer model (``build_mlp``) with a
    ``typed_nn.model`` optimizer (``SGD(0.1)``); its parameters are initialised, and the
    steps run where they live. ``train``: a classification ``Dataset`` (``ops.cross_entropy``
    of the logits on its integer labels), or an ``ArrayDataset`` for a regression on
    ``loss(targets, outputs)`` (mean squared error by default). The shuffling is drawn from
    ``numpy.random.default_rng(seed)``. ``callbacks``: ``ProgressBar``, ``EarlyStopping``,
    ``ModelCheckpoint`` (and resuming), ``OnNonFinite``, ``LambdaCallback`` or any
    ``Callback``. ``world``: with several ranks (``mpiexec -n N``) training is data-parallel,
    ``batch_size`` the global batch. Every argument is checked before the first step (a
    ``TrainingError`` naming it), and a NaN or Inf loss stops training (see ``OnNonFinite``).
    """
    (epochs, batch_size, seed), hooks = check_fit(
        train, optimizer, test=test, epochs=epochs, batch_size=batch_size, seed=seed,
        callbacks=callbacks, loss=loss,
    )  # fmt: skip
    trainee = trainee_of(model, optimizer)
    ckpt = hooks.checkpoint
    target, every, source = check_checkpointing(
        ckpt.path if ckpt else None, ckpt.every if ckpt else 1, ckpt.resume_from if ckpt else None
    )
    world = _world(world)
    check_model(trainee.model, _reads_state(target, source, world))
    counts = (epochs, batch_size, seed)
    _check_world(train, test, trainee, hooks, world, counts, resuming=source is not None)
    setup = build_setup(
        trainee, train, test, batch_size=batch_size, world=world, loss=loss,
        input_shape=trainee.input_shape, check=hooks.on_nonfinite == "raise",
    )  # fmt: skip
    shown = hooks.progress is not None and world.is_root
    bars, stream = (hooks.progress.bars, hooks.progress.stream) if hooks.progress else (None, None)
    loop = FitLoop(
        setup, trainee, world, test, n=len(train), epochs=epochs, batch_size=batch_size,
        rng=np.random.default_rng(seed),  # one seed: the same order on every rank
        report=Progress(shown, bars, epochs, stream),
        early_stopping=hooks.early_stopping, callbacks=hooks.all,
        checkpoint_path=target, checkpoint_every=every,
    )  # fmt: skip
    first = loop.resume(source) if source is not None else 0
    if world.size > 1:  # the same model, from the same epoch; then rank 0's state everywhere
        sync_parameters(world, trainee.state(), trainee.rule, first)
    return loop.run(first)


def _check_world(
    train: Dataset | ArrayDataset,
    test: Dataset | ArrayDataset | None,
    trainee: Trainee,
    hooks: Hooks,
    world: World,
    counts: tuple[int, int, int],
    resuming: bool,
) -> None:
    """What the ranks of a data-parallel run must agree on, checked on every rank before
    any rank can fail alone; then the batch rule and the device (alike on every rank)."""
    epochs, batch_size, seed = counts
    if world.size > 1:  # alone, nothing to compare (and no data to digest)
        settings = run_settings(
            train, test, trainee.rule, epochs=epochs, batch_size=batch_size, seed=seed,
            early_stopping=hooks.early_stopping, device=trainee.device, resuming=resuming,
        )  # fmt: skip
        check_same_run(world, settings)
    check_batch(world, batch_size)
    check_device(world, trainee.device)


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
        return "ModelCheckpoint.path (a checkpoint)"
    if source is not None:
        return "ModelCheckpoint.resume_from (resuming)"
    return "data-parallel training (several ranks)" if world.size > 1 else None
