"""The lazy graphs of a training step and of a prediction, built once per batch size.

Layers only build expressions (MetaNN's central idea), so a step's whole graph — forward
through the model, softmax + NLL loss, backward, every parameter's gradient — can be built
once over *placeholder* tensors and evaluated again for every mini-batch: the batch is
written into the placeholders in place (and cached results are invalidated), and the
probabilities, gradients and updates are evaluated (SGD and ``Optimizer.one_pass`` rules:
in one pass with the updates as targets). ``loss`` is kept as an expression for callers; a
step computes the loss from its probabilities instead. Rebuilding the graph per batch gives the same values and costs a node build per op per batch; the
evaluator's plan cache then only saves the analysis.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .. import ops
from ..data.factories import scalar, zeros
from ..data.tensor import Tensor
from ..data.tensor_like import TensorLike
from ..errors import TrainingError, message
from ..evaluate import EvalHandle, EvalPlan
from ..evaluate.executor import execute, invalidate_caches
from ..layers.keys import LayerInput, LayerOutput
from ..model.grad_collector import GradCollector
from ..model.optim import SGD, OnePass, Optimizer
from ..tags import CPU, Dim0, Dim2, Float32
from .model import TrainableModel

__all__ = ["PredictGraph", "StepGraph", "StepResult"]

Matrix32 = Tensor[Float32, CPU, Dim2]
Lazy32 = TensorLike[Float32, CPU, Dim2]
Weight = Tensor[Float32, CPU, Any]
Roots = TensorLike[Float32, CPU, Any]
Update = tuple[Weight, Roots]
Targets = dict[int, Weight]


def _forward(model: TrainableModel, x: Matrix32, classes: int) -> Lazy32:
    """The model's logits for ``x``, checked to be (batch, classes)."""
    out: Any = model.feed_forward(model.input_cont().set(LayerInput, x)).get(LayerOutput)
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


class StepResult:
    """What a step computed: the batch's mean loss and its predicted probabilities."""

    __slots__ = ("loss", "probs")

    def __init__(self, loss: float, probs: npt.NDArray[np.float32]) -> None:
        self.loss = loss
        self.probs = probs


class StepGraph:
    """Forward, loss and backward of one batch size, over placeholders ``x`` and ``y``."""

    def __init__(self, model: TrainableModel, batch: int, features: int, classes: int) -> None:
        self.x: Matrix32 = zeros((batch, features), Float32, CPU)
        self.y: Matrix32 = zeros((batch, classes), Float32, CPU)
        self.probs = ops.softmax(_forward(model, self.x, classes))
        self.loss: TensorLike[Float32, CPU, Dim0] = ops.nll_loss(self.y, self.probs)
        one = scalar(1.0, Float32, CPU)
        # softmax_grad(nll_loss_grad(...)) is rewritten into (p - y) / batch by the evaluator.
        grad = ops.softmax_grad(ops.nll_loss_grad(one, self.y, self.probs), self.probs)
        model.feed_backward(model.output_cont().set(LayerOutput, grad))
        self.grads: GradCollector[Float32, CPU] = GradCollector(Float32, CPU)
        model.grad_collect(self.grads)
        self.lr = scalar(0.0, Float32, CPU)
        self._sgd: tuple[SGD, list[Roots], dict[int, Weight]] | None = None
        self._fused: tuple[Optimizer, OnePass | None, list[Roots], dict[int, Weight]] | None
        self._fused = None

    def _sgd_plan(self, optimizer: SGD) -> tuple[list[Roots], dict[int, Weight]]:
        """The roots (probabilities, then SGD's rule over each lazy gradient) and the weight
        each update is written into, built once per optimizer (lr is a placeholder)."""
        if self._sgd is None or self._sgd[0] is not optimizer:
            wd = optimizer.weight_decay
            updates: list[Update] = [
                (w, w - self.lr * (g + wd * w if wd else g)) for _, w, g in self.grads
            ]
            roots: list[Roots] = [self.probs]
            roots.extend(expr for _, expr in updates)
            self._sgd = (optimizer, roots, {i: w for i, (w, _) in enumerate(updates, 1)})
        return self._sgd[1], self._sgd[2]

    def _one_pass(self, optimizer: Optimizer) -> tuple[OnePass | None, list[Roots], Targets]:
        """The optimizer's one-pass rule (``Optimizer.one_pass``) with the probabilities as
        the first root, built once per optimizer; None when it has none."""
        if self._fused is None or self._fused[0] is not optimizer:
            plan = optimizer.one_pass(self.grads)
            roots: list[Roots] = [self.probs]
            targets: Targets = {}
            if plan is not None:
                roots.extend(expr for _, expr in plan.updates)
                targets = {i: w for i, (w, _) in enumerate(plan.updates, 1)}
            self._fused = (optimizer, plan, roots, targets)
        return self._fused[1], self._fused[2], self._fused[3]

    def _result(self, probs: npt.NDArray[np.float32]) -> StepResult:
        """The batch's loss from its probabilities, in numpy: the ``nll_loss`` kernel's
        formula (``-sum(y * ln p) / sum(y)``, 0 where y is 0), without a node in the step."""
        y = self.y.array
        logs = np.zeros(probs.shape, np.float32)
        np.log(probs, out=logs, where=y != 0)
        logs *= y
        total = np.add.reduce  # ndarray.sum without its Python wrapper
        return StepResult(float(-total(logs, axis=None) / total(y, axis=None)), probs)

    def _run_pass(self, roots: list[Roots], targets: Targets, optimizer: Optimizer) -> StepResult:
        """Probabilities and every update in one evaluation."""
        results = execute(roots, targets)
        for i, weight in targets.items():
            if results[i] is not weight:  # not written in place: copy (after every read)
                weight.array[...] = results[i].array
        invalidate_caches()  # the weights changed in place
        optimizer.step_count += 1
        return self._result(results[0].numpy().copy())

    def run(self, x: Matrix32, y: Matrix32, optimizer: Optimizer) -> StepResult:
        """Write the batch into the placeholders, evaluate the probabilities and gradients
        in one plan (the optimizer's), and update every parameter in place."""
        self.x.array[...] = x.array
        self.y.array[...] = y.array
        return self._step(optimizer)

    def run_rows(
        self,
        features: npt.NDArray[np.float32],
        targets: npt.NDArray[np.float32],
        rows: npt.NDArray[np.int64],
        optimizer: Optimizer,
    ) -> StepResult:
        """``run`` on the batch ``features[rows]``, ``targets[rows]``, gathered straight
        into the placeholders (no batch arrays in between)."""
        np.take(features, rows, axis=0, out=self.x.array)
        np.take(targets, rows, axis=0, out=self.y.array)
        return self._step(optimizer)

    def _step(self, optimizer: Optimizer) -> StepResult:
        """One step over the batch now in the placeholders."""
        invalidate_caches()  # the placeholders changed in place
        if EvalPlan.current().pending() == 0:
            if type(optimizer) is SGD:
                self.lr.array[...] = optimizer.current_lr()
                return self._run_pass(*self._sgd_plan(optimizer), optimizer)
            plan, roots, targets = self._one_pass(optimizer)
            if plan is not None:
                plan.prepare()
                return self._run_pass(roots, targets, optimizer)
        probs: EvalHandle[Float32, CPU, Dim2] = self.probs.eval_register()
        optimizer.step(self.grads)  # its EvalPlan.eval() computes probs too
        return self._result(probs.data().numpy().copy())


class PredictGraph:
    """The model's class probabilities for ``rows`` samples (forward only)."""

    def __init__(self, model: TrainableModel, rows: int, features: int, classes: int) -> None:
        self.x: Matrix32 = zeros((rows, features), Float32, CPU)
        self.probs = ops.softmax(_forward(model, self.x, classes))
        model.feed_backward(model.output_cont())  # no gradient: only pops the layers' stacks

    def run(self, x: Matrix32) -> npt.NDArray[np.float32]:
        """Probabilities (rows, classes) for ``x`` with the parameters as they are now."""
        self.x.assign(x)
        handle = self.probs.eval_register()
        EvalPlan.eval()
        return handle.data().numpy().copy()
