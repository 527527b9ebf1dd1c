"""A training step compiled once per batch size, and a prediction graph.

Layers only build expressions (MetaNN's central idea), so a step — forward through the
model, softmax + NLL loss, ``tn.grad``, the optimizer's rule — is written once as a
function and compiled by ``tn.compile``: its first call per batch size traces it and
analyses the whole graph into one Step; every later batch only binds its arrays and runs
that Step (no node built, no graph walked). ``fit`` computes the loss from the probabilities
a step returns.

Both live on one device (CPU or GPU): their tensors are made there, so the model's
parameters must be there too (a model on another device is a ``TrainingError`` naming
both).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from .. import ops
from ..data.factories import zeros
from ..data.tensor import Tensor, TensorLike
from ..devices import module_of
from ..distributed.gradients import GradientAllReduce
from ..distributed.world import World
from ..errors import DeviceError, TrainingError, message
from ..evaluate import EvalPlan, compile
from ..evaluate.plan import evaluate
from ..inference_mode import inference
from ..tags import Dim0, Dim1, Dim2, Float32, Int64, dim_of_rank, tag_name
from .checks import declared_mismatch
from .trainee import Trainee

__all__ = ["Loss", "PredictGraph", "TrainStep", "gather_rows"]

# A step's data live on the step's device, CPU or GPU.
Matrix32 = Tensor[Float32, Any, Dim2]
Batch32 = Tensor[Float32, Any, Any]
"""A batch of samples: (batch, features), or (batch, *input_shape) for ``input_shape``."""
Lazy32 = TensorLike[Float32, Any, Dim2]
Weight = Tensor[Float32, Any, Any]
Roots = TensorLike[Float32, Any, Any]
Array = Any
"""A numpy array, or a cupy array on the GPU."""
Loss: TypeAlias = Callable[[Lazy32, Lazy32], TensorLike[Float32, Any, Dim0]]
"""A loss ``loss(truth, pred) -> Scalar``, e.g. ``typed_nn.ops.mse_loss``."""


def gather_rows(source: Array, rows: Array, out: Array) -> None:
    """``out[...] = source[rows]`` without a temporary; ``rows`` are in range and live where
    ``source`` does."""
    if isinstance(source, np.ndarray):
        # mode "clip": numpy writes straight into out ("raise" first copies it, 10x slower)
        source.take(rows, 0, out, "clip")
    else:  # cupy's take has no mode argument (and no range check to skip)
        module_of(source).take(source, rows, 0, out)


def _forward(trainee: Trainee, x: Batch32, classes: int, regression: bool = False) -> Lazy32:
    """The model's logits (or, for a regression, predictions) for ``x``, checked to be
    (batch, classes) (or (batch, targets))."""
    try:
        out: Any = trainee.forward(x)
    except DeviceError as exc:
        raise TrainingError(
            message(
                f"cannot train: the model's parameters are not on the data's device "
                f"({tag_name(x.device)}).",
                [("cause", str(exc).splitlines()[0])],
                hint=f"build the model on {tag_name(x.device)}, or pass device= for the "
                "model's device to predict / accuracy.",
            )
        ) from exc
    want = (x.shape[0], classes)
    if not isinstance(out, TensorLike) or out.shape != want:
        got = out.describe() if isinstance(out, TensorLike) else type(out).__name__
        per, declared = ("target", "targets") if regression else ("score per class", "classes")
        raise declared_mismatch(
            f"cannot train: the model's output is not one {per}.",
            f"(batch, {declared}) = {want}",
            got,
            f"make the last layer {classes} wide "
            + ("(one output per target column)." if regression else "(one logit per class)."),
        )
    result: Lazy32 = out
    return result


def labels(y: Tensor[Any, Any, Any]) -> TensorLike[Int64, Any, Dim1]:
    """A classifier's batch targets: its integer labels (the step's Int64 vector)."""
    assert y.elem is Int64
    assert y.rank == 1
    found: TensorLike[Int64, Any, Dim1] = y
    return found


def sample_shape(features: int, input_shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """One sample's shape as the model takes it: ``input_shape``, else ``(features,)``."""
    return input_shape if input_shape is not None else (features,)


class TrainStep:
    """One training step as a user would write it, compiled once per batch size: the
    model's forward, the loss, its gradients and the optimizer's update
    (``Trainee.descend``: ``tn.grad(loss, model)`` and ``opt.step(grads)`` for a module) —
    traced by ``tn.compile`` into one Step that writes every update after every read.

    A classifier's loss is ``ops.cross_entropy`` of the logits on the batch's integer labels,
    and the step returns the batch's class probabilities (fit's metrics); with a ``loss``
    (``loss(targets, outputs) -> Scalar``, e.g. ``ops.mse_loss``) the step trains on that
    loss of the model's raw outputs instead (``classes``: the targets' width) and returns it.

    The batch is gathered straight into a pair of tensors per batch size (no batch arrays in
    between). In a ``world`` of several ranks the gradients are summed over the ranks
    between the backward and the update, inside the step (``GradientAllReduce``): every rank
    then makes the same update.
    """

    def __init__(
        self,
        trainee: Trainee,
        features: int,
        classes: int,
        loss: Loss | None = None,
        world: World | None = None,
        input_shape: tuple[int, ...] | None = None,
    ) -> None:
        self.trainee, self.device = trainee, trainee.device
        self.all_reduce = GradientAllReduce(world if world is not None else World())
        self.features, self.classes = features, classes
        self.sample_shape = sample_shape(features, input_shape)
        """The shape of one sample as the model takes it (``features`` reshaped)."""
        self.loss = loss
        self._batches: dict[int, tuple[Batch32, Tensor[Any, Any, Any]]] = {}
        self._step = compile(self._traced)

    def _traced(self, x: Batch32, y: Tensor[Any, Any, Any], numbers: tuple[float, ...]) -> Roots:
        out = _forward(self.trainee, x, self.classes, regression=self.loss is not None)
        if self.loss is None:
            value: TensorLike[Float32, Any, Dim0] = ops.cross_entropy(out, labels(y))
            result: Roots = ops.softmax(out)
        else:
            value = result = self.loss(y, out)
        self.trainee.descend(value, out, self.all_reduce, numbers)
        return result

    def run_rows(self, features: Array, targets: Array, rows: Array) -> Array:
        """One step on the batch ``features[rows]``, ``targets[rows]``; returns its
        probabilities (with a ``loss``: its loss, a rank-0 array) on the step's device (a
        fresh array: the buffer pool never hands out memory that is still referenced). All
        three arrays live on the step's device; ``rows`` must be in range."""
        x, y = self._batch(len(rows))
        gather_rows(features, rows, x.array)
        gather_rows(targets, rows, y.array)
        result = self._step(x, y, self.trainee.numbers())
        self.trainee.stepped()
        assert isinstance(result, Tensor)  # a compiled function returns evaluated tensors
        return result.array

    def prepare(self, size: int) -> None:
        """Trace the step for batches of ``size`` samples now, without running it: what a
        trace refuses (a shape a layer cannot take, such as a training batch norm's batch of
        one) is refused before the first step changes anything."""
        x, y = self._batch(size)
        self._step.prepare(x, y, self.trainee.numbers())

    def _batch(self, size: int) -> tuple[Batch32, Tensor[Any, Any, Any]]:
        """The pair of tensors batches of ``size`` samples are gathered into."""
        batch = self._batches.get(size)
        if batch is None:
            y: Tensor[Any, Any, Any] = (
                zeros((size,), Int64, self.device)
                if self.loss is None
                else zeros((size, self.classes), Float32, self.device)
            )
            x = zeros((size, *self.sample_shape), Float32, self.device)
            batch = self._batches[size] = (x, y)
        return batch


class PredictGraph:
    """The model's class probabilities for ``rows`` samples (forward only); with
    ``regression``, its raw outputs (``classes``: their width)."""

    def __init__(
        self,
        trainee: Trainee,
        rows: int,
        features: int,
        classes: int,
        regression: bool = False,
        input_shape: tuple[int, ...] | None = None,
    ) -> None:
        self.device = device = trainee.device
        self.x: Batch32 = zeros((rows, *sample_shape(features, input_shape)), Float32, device)
        # a forward only (the layers keep nothing for a backward), in eval mode: dropout off,
        # batch norm on its running statistics, read live at every run
        training = trainee.training
        trainee.set_training(False)
        try:
            with inference():
                out = _forward(trainee, self.x, classes, regression)
                self.probs = out if regression else ops.softmax(out)
        finally:
            trainee.set_training(training)

    def run(self, x: Matrix32) -> npt.NDArray[np.float32]:
        """Probabilities (rows, classes), on the host, for ``x`` (on any device) with the
        parameters as they are now."""
        if x.device is not self.device:
            x = evaluate(ops.to_device(x, self.device))
        shaped = x.array.reshape(self.x.shape)  # a view: (rows, features) as the model takes it
        self.x.assign(Tensor(shaped, Float32, self.device, dim_of_rank(self.x.rank)))
        handle = self.probs.eval_register()
        EvalPlan.eval()
        return handle.data().numpy().copy()
