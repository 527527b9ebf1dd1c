"""The lazy graphs of a training step and of a prediction, built once per batch size.

Layers only build expressions (MetaNN's central idea), so a step's whole graph — forward
through the model, softmax + NLL loss, backward, every parameter's gradient — can be built
once over *placeholder* tensors and evaluated again for every mini-batch: the batch is
written into the placeholders in place (and cached results are invalidated), and the
probabilities, gradients and updates are evaluated (the optimizer's ``one_pass`` rule:
in one pass with the updates as targets, nothing cached on the nodes). ``fit`` computes the
loss from the probabilities a step returns.
Rebuilding the graph per batch gives the same values and costs a node build per op per
batch; the evaluator's plan cache then only saves the analysis.

Both graphs live on one device (CPU or GPU): their placeholders are made there, so the
model's parameters must be there too (a model on another device is a ``TrainingError``
naming both).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .. import ops
from ..backends.xp import module_of
from ..data.factories import zeros
from ..data.tensor import Tensor
from ..data.tensor_like import TensorLike
from ..errors import DeviceError, TrainingError, message
from ..evaluate import EvalHandle, EvalPlan
from ..evaluate.executor import Evaluation, invalidate_caches
from ..evaluate.plan import evaluate
from ..layers.keys import LayerInput, LayerOutput
from ..model.grad_collector import GradCollector
from ..model.optim import Optimizer
from ..tags import CPU, DeviceTag, Dim2, Float32, tag_name
from .model import TrainableModel

__all__ = ["PredictGraph", "StepGraph", "gather_rows"]

# A step's data live on the step's device, CPU or GPU.
Matrix32 = Tensor[Float32, Any, Dim2]
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


def _forward(model: TrainableModel, x: Matrix32, classes: int) -> Lazy32:
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


class _Pass(NamedTuple):
    """A step's one evaluation for one optimizer: probabilities, then every update."""

    optimizer: Optimizer
    prepare: Callable[[], None]
    """Writes this step's numbers (learning rate, bias corrections) into placeholders."""
    evaluation: Evaluation
    targets: list[tuple[int, Weight, Any]]
    """(root index, the weight its update is written into, the weight's array)."""


class StepGraph:
    """Forward, loss gradient and backward of one batch size, over placeholders ``x`` and
    ``y`` (one-hot rows)."""

    def __init__(
        self,
        model: TrainableModel,
        batch: int,
        features: int,
        classes: int,
        device: type[DeviceTag] = CPU,
    ) -> None:
        self.x: Matrix32 = zeros((batch, features), Float32, device)
        self.y: Matrix32 = zeros((batch, classes), Float32, device)
        self.probs = ops.softmax(_forward(model, self.x, classes))
        # The gradient of the mean NLL through the softmax. For any targets it is
        # softmax_grad(nll_loss_grad(1, y, p), p), which the evaluator rewrites into one
        # kernel (g / S * (p * T - y), with T each row's and S all targets' sum); fit's
        # targets are one-hot rows (T = 1, S = batch), where that is exactly (p - y) / batch:
        # two element-wise passes, as a hand-written step has (tests/test_train_fit.py).
        grad = (self.probs - self.y) * (1.0 / batch)
        model.feed_backward(model.output_cont().set(LayerOutput, grad))
        self.grads: GradCollector[Float32, Any] = GradCollector(Float32, device)
        model.grad_collect(self.grads)
        self._pass: _Pass | None = None

    def _one_pass(self, optimizer: Optimizer) -> _Pass | None:
        """This step's single evaluation for ``optimizer`` (its ``one_pass`` rule, the
        probabilities first), built once per optimizer; None when it has no one-pass rule."""
        found = self._pass
        if found is None or found.optimizer is not optimizer:
            plan = optimizer.one_pass(self.grads)
            found = None
            if plan is not None:
                roots: list[Roots] = [self.probs]
                roots.extend(expr for _, expr in plan.updates)
                targets: Targets = {i: w for i, (w, _) in enumerate(plan.updates, 1)}
                written = [(i, w, w.array) for i, w in targets.items()]
                found = _Pass(optimizer, plan.prepare, Evaluation(roots, targets), written)
            self._pass = found
        return found

    def _run_pass(self, one: _Pass) -> Array:
        """Probabilities and every update in one evaluation."""
        one.prepare()
        arrays = one.evaluation()
        for i, weight, memory in one.targets:
            if arrays[i] is not memory:  # not written in place: copy (after every read)
                weight.array[...] = arrays[i]
        invalidate_caches()  # the weights changed in place
        one.optimizer.step_count += 1
        return arrays[0]

    def run_rows(self, features: Array, targets: Array, rows: Array, optimizer: Optimizer) -> Array:
        """``step`` on the batch ``features[rows]``, ``targets[rows]``, gathered straight
        into the placeholders (no batch arrays in between). All three arrays live on the
        step's device; ``rows`` must be in range."""
        gather_rows(features, rows, self.x.array)
        gather_rows(targets, rows, self.y.array)
        return self.step(optimizer)

    def step(self, optimizer: Optimizer) -> Array:
        """One step over the batch now in the placeholders; returns its probabilities on the
        step's device (a fresh array: the buffer pool never hands out memory that is still
        referenced)."""
        invalidate_caches()  # the placeholders changed in place
        if EvalPlan.current().pending() == 0:
            one = self._one_pass(optimizer)
            if one is not None:
                return self._run_pass(one)
        handle: EvalHandle[Float32, Any, Dim2] = self.probs.eval_register()
        optimizer.step(self.grads)  # its EvalPlan.eval() computes probs too
        return handle.data().array


class PredictGraph:
    """The model's class probabilities for ``rows`` samples (forward only)."""

    def __init__(
        self,
        model: TrainableModel,
        rows: int,
        features: int,
        classes: int,
        device: type[DeviceTag] = CPU,
    ) -> None:
        self.device = device
        self.x: Matrix32 = zeros((rows, features), Float32, device)
        self.probs = ops.softmax(_forward(model, self.x, classes))
        model.feed_backward(model.output_cont())  # no gradient: only pops the layers' stacks

    def run(self, x: Matrix32) -> npt.NDArray[np.float32]:
        """Probabilities (rows, classes), on the host, for ``x`` (on any device) with the
        parameters as they are now."""
        if x.device is not self.device:
            x = evaluate(ops.to_device(x, self.device))
        self.x.assign(x)
        handle = self.probs.eval_register()
        EvalPlan.eval()
        return handle.data().numpy().copy()
