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

from typing import Any

import numpy as np
import numpy.typing as npt

from .. import ops
from ..autodiff import vjp
from ..backends.xp import module_of
from ..data.factories import zeros
from ..data.tensor import Tensor
from ..data.tensor_like import TensorLike
from ..errors import DeviceError, TrainingError, message
from ..evaluate import EvalPlan, compile
from ..evaluate.plan import evaluate
from ..layers.keys import LayerInput, LayerOutput
from ..model.grad_collector import GradCollector
from ..model.optim import Optimizer
from ..tags import CPU, DeviceTag, Dim2, Float32, dim_of_rank, tag_name
from .model import TrainableModel

__all__ = ["PredictGraph", "TrainStep", "gather_rows"]

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


def gather_rows(source: Array, rows: Array, out: Array) -> None:
    """``out[...] = source[rows]`` without a temporary; ``rows`` are in range and live where
    ``source`` does."""
    if isinstance(source, np.ndarray):
        # mode "clip": numpy writes straight into out ("raise" first copies it, 10x slower)
        source.take(rows, 0, out, "clip")
    else:  # cupy's take has no mode argument (and no range check to skip)
        module_of(source).take(source, rows, 0, out)


def _forward(model: TrainableModel, x: Batch32, classes: int) -> Lazy32:
    """The model's logits for ``x``, checked to be (batch, classes)."""
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
        raise TrainingError(
            message(
                "cannot train: the model's output is not one score per class.",
                [("declared", f"(batch, classes) = {want}"), ("received", got)],
                hint=f"make the last layer {classes} wide (one logit per class).",
            )
        )
    result: Lazy32 = out
    return result


class TrainStep:
    """One training step as a user would write it, compiled once per batch size: the
    model's forward and softmax, the mean NLL loss's gradient pulled back to the trainable
    weights (``tn.vjp``), the optimizer's rule (``Optimizer.apply``) — traced by
    ``tn.compile`` into one Step that writes every update after every read.

    The batch is gathered straight into a pair of tensors per batch size (no batch arrays in
    between); the optimizer's per-step numbers (learning rate, bias corrections) are the
    step's run-time arguments.
    """

    def __init__(
        self,
        model: TrainableModel,
        optimizer: Optimizer,
        features: int,
        classes: int,
        device: type[DeviceTag] = CPU,
        input_shape: tuple[int, ...] | None = None,
    ) -> None:
        self.model, self.optimizer = model, optimizer
        self.features, self.classes, self.device = features, classes, device
        self.sample_shape = input_shape if input_shape is not None else (features,)
        """The shape of one sample as the model takes it (``features`` reshaped)."""
        self.weights: list[tuple[str, Weight]] = []
        self._batches: dict[int, tuple[Batch32, Matrix32]] = {}
        self._step = compile(self._traced)

    def _traced(self, x: Batch32, y: Matrix32, numbers: tuple[float, ...]) -> Lazy32:
        logits = _forward(self.model, x, self.classes)
        probs = ops.softmax(logits)
        # The weights the model updates (PUpdate), as its grad_collect names them.
        self.model.feed_backward(self.model.output_cont().set(LayerOutput, probs))
        collected: GradCollector[Float32, Any] = GradCollector(Float32, self.device)
        self.model.grad_collect(collected)
        self.weights = [(name, w) for name, w, _ in collected]
        # The mean NLL's gradient with respect to the logits. tn.grad of
        # ops.nll_loss(y, probs) gives softmax_grad(nll_loss_grad(1, y, p), p), which the
        # evaluator rewrites into one kernel for any targets (g / S * (p * T - y), with row
        # sums T and total S); fit's targets are one-hot rows (T = 1, S = batch), where it is
        # exactly (p - y) / batch: two element-wise passes, no reductions. tn.vjp pulls it
        # back through the model.
        d_logits = (probs - y) * (1.0 / x.shape[0])
        grads = vjp(logits, [w for _, w in self.weights], d_logits)
        self.optimizer.apply(
            [(w, g) for (_, w), g in zip(self.weights, grads, strict=True)], numbers
        )
        return probs

    def run_rows(self, features: Array, targets: Array, rows: Array) -> Array:
        """One step on the batch ``features[rows]``, ``targets[rows]``; returns its
        probabilities on the step's device (a fresh array: the buffer pool never hands out
        memory that is still referenced). All three arrays live on the step's device;
        ``rows`` must be in range; ``features`` is (n, *sample_shape)."""
        batch = self._batches.get(len(rows))
        if batch is None:
            batch = self._batches[len(rows)] = (
                zeros((len(rows), *self.sample_shape), Float32, self.device),
                zeros((len(rows), self.classes), Float32, self.device),
            )
        x, y = batch
        gather_rows(features, rows, x.array)
        gather_rows(targets, rows, y.array)
        probs = self._step(x, y, self.optimizer.numbers())
        self.optimizer.step_count += 1
        assert isinstance(probs, Tensor)  # a compiled function returns evaluated tensors
        return probs.array


class PredictGraph:
    """The model's class probabilities for ``rows`` samples (forward only)."""

    def __init__(
        self,
        model: TrainableModel,
        rows: int,
        features: int,
        classes: int,
        device: type[DeviceTag] = CPU,
        input_shape: tuple[int, ...] | None = None,
    ) -> None:
        self.device = device
        sample = input_shape if input_shape is not None else (features,)
        self.x: Batch32 = zeros((rows, *sample), Float32, device)
        self.probs = ops.softmax(_forward(model, self.x, classes))
        model.feed_backward(model.output_cont())  # no gradient: only pops the layers' stacks

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
