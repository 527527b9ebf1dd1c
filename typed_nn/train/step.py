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
from ..autodiff import grad, vjp
from ..data.factories import zeros
from ..data.tensor import Tensor, TensorLike
from ..devices import module_of
from ..distributed.gradients import GradientAllReduce
from ..distributed.world import World
from ..errors import DeviceError, TrainingError, message
from ..evaluate import EvalPlan, compile
from ..evaluate.plan import evaluate
from ..inference_mode import inference
from ..layers.keys import LayerInput, LayerOutput
from ..model.grad_collector import GradCollector
from ..model.optim import Optimizer
from ..tags import CPU, DeviceTag, Dim0, Dim2, Float32, dim_of_rank, tag_name
from .checks import declared_mismatch
from .model import TrainableModel

__all__ = ["Loss", "PredictGraph", "TrainStep", "gather_rows"]

# A step's data live on the step's device, CPU or GPU.
Matrix32 = Tensor[Float32, Any, Dim2]
Batch32 = Tensor[Float32, Any, Any]
"""A batch of samples: (batch, features), or (batch, *input_shape) for ``input_shape``."""
Lazy32 = TensorLike[Float32, Any, Dim2]
Weight = Tensor[Float32, Any, Any]
Roots = TensorLike[Float32, Any, Any]
Targets = dict[int, Weight]
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


def _forward(model: TrainableModel, x: Batch32, classes: int, regression: bool = False) -> Lazy32:
    """The model's logits (or, for a regression, predictions) for ``x``, checked to be
    (batch, classes) (or (batch, targets))."""
    try:
        out: Any = model.feed_forward(model.input_cont().set(LayerInput, x)).get(LayerOutput)
    except DeviceError as exc:
        raise TrainingError(
            message(
                f"cannot train: the model's parameters are not on the data's device "
                f"({tag_name(x.device)}).",
                [("cause", str(exc).splitlines()[0])],
                hint=f"build the model on {tag_name(x.device)}, or pass device= for the "
                "model's device to fit / predict / accuracy.",
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


def _collected(
    model: TrainableModel, device: type[DeviceTag], out: Lazy32
) -> list[tuple[str, Weight]]:
    """The weights the model updates (PUpdate), as its grad_collect names them (the
    gradient ``out`` fed back only lets the layers name them: it is never evaluated)."""
    model.feed_backward(model.output_cont().set(LayerOutput, out))
    collected: GradCollector[Float32, Any] = GradCollector(Float32, device)
    model.grad_collect(collected)
    return [(name, w) for name, w, _ in collected]


def sample_shape(features: int, input_shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """One sample's shape as the model takes it: ``input_shape``, else ``(features,)``."""
    return input_shape if input_shape is not None else (features,)


class TrainStep:
    """One training step as a user would write it, compiled once per batch size: the
    model's forward and softmax, the mean NLL loss's gradient pulled back to the trainable
    weights (``tn.vjp``), the optimizer's rule (``Optimizer.apply``) — traced by
    ``tn.compile`` into one Step that writes every update after every read.

    The batch is gathered straight into a pair of tensors per batch size (no batch arrays in
    between); the optimizer's per-step numbers (learning rate, bias corrections) are the
    step's run-time arguments.

    With a ``loss`` (``loss(targets, outputs) -> Scalar``, e.g. ``ops.mse_loss``) the step
    trains on that loss of the model's raw outputs instead (``classes``: the targets' width),
    its gradient taken by ``tn.grad``, and returns the batch's loss.

    In a ``world`` of several ranks the gradients are summed over the ranks between the
    backward and the update, inside the step (``GradientAllReduce``): every rank then makes
    the same update.
    """

    def __init__(
        self,
        model: TrainableModel,
        optimizer: Optimizer,
        features: int,
        classes: int,
        device: type[DeviceTag] = CPU,
        loss: Loss | None = None,
        world: World | None = None,
        input_shape: tuple[int, ...] | None = None,
    ) -> None:
        self.model, self.optimizer = model, optimizer
        self.all_reduce = GradientAllReduce(world if world is not None else World())
        self.features, self.classes, self.device = features, classes, device
        self.sample_shape = sample_shape(features, input_shape)
        """The shape of one sample as the model takes it (``features`` reshaped)."""
        self.loss = loss
        self.weights: list[tuple[str, Weight]] = []
        self._batches: dict[int, tuple[Batch32, Matrix32]] = {}
        self._step = compile(self._traced if loss is None else self._traced_loss)

    def _traced(self, x: Batch32, y: Matrix32, numbers: tuple[float, ...]) -> Lazy32:
        logits = _forward(self.model, x, self.classes)
        probs = ops.softmax(logits)
        self.weights = _collected(self.model, self.device, probs)
        # The mean NLL's gradient with respect to the logits. tn.grad of
        # ops.nll_loss(y, probs) gives softmax_grad(nll_loss_grad(1, y, p), p), which the
        # evaluator rewrites into one kernel for any targets (g / S * (p * T - y), with row
        # sums T and total S); fit's targets are one-hot rows (T = 1, S = batch), where it is
        # exactly (p - y) / batch: two element-wise passes, no reductions. tn.vjp pulls it
        # back through the model.
        d_logits = (probs - y) * (1.0 / x.shape[0])
        grads = vjp(logits, [w for _, w in self.weights], d_logits)
        grads = self.all_reduce(grads)  # summed over the ranks (as they are on one rank)
        self.optimizer.apply(
            [(w, g) for (_, w), g in zip(self.weights, grads, strict=True)], numbers
        )
        return probs

    def _traced_loss(
        self, x: Batch32, y: Matrix32, numbers: tuple[float, ...]
    ) -> TensorLike[Float32, Any, Dim0]:
        assert self.loss is not None
        out = _forward(self.model, x, self.classes, regression=True)
        value = self.loss(y, out)
        self.weights = _collected(self.model, self.device, out)
        grads = grad(value, [w for _, w in self.weights])
        grads = self.all_reduce(grads)
        self.optimizer.apply(
            [(w, g) for (_, w), g in zip(self.weights, grads, strict=True)], numbers
        )
        return value

    def run_rows(self, features: Array, targets: Array, rows: Array) -> Array:
        """One step on the batch ``features[rows]``, ``targets[rows]``; returns its
        probabilities (with a ``loss``: its loss, a rank-0 array) on the step's device (a fresh array: the buffer pool never hands out
        memory that is still referenced). All three arrays live on the step's device;
        ``rows`` must be in range."""
        batch = self._batches.get(len(rows))
        if batch is None:
            batch = self._batches[len(rows)] = (
                zeros((len(rows), *self.sample_shape), Float32, self.device),
                zeros((len(rows), self.classes), Float32, self.device),
            )
        x, y = batch
        gather_rows(features, rows, x.array)
        gather_rows(targets, rows, y.array)
        result = self._step(x, y, self.optimizer.numbers())
        self.optimizer.step_count += 1
        assert isinstance(result, Tensor)  # a compiled function returns evaluated tensors
        return result.array


class PredictGraph:
    """The model's class probabilities for ``rows`` samples (forward only); with
    ``regression``, its raw outputs (``classes``: their width)."""

    def __init__(
        self,
        model: TrainableModel,
        rows: int,
        features: int,
        classes: int,
        device: type[DeviceTag] = CPU,
        regression: bool = False,
        input_shape: tuple[int, ...] | None = None,
    ) -> None:
        self.device = device
        self.x: Batch32 = zeros((rows, *sample_shape(features, input_shape)), Float32, device)
        with inference():  # a forward only: the layers keep nothing for a backward
            out = _forward(model, self.x, classes, regression)
            self.probs = out if regression else ops.softmax(out)

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
