"""The lazy graphs of a training step and of a prediction, built once per batch size.

Layers only build expressions (MetaNN's central idea), so a step's whole graph — forward
through the model, softmax + NLL loss, backward, every parameter's gradient — can be built
once over *placeholder* tensors and evaluated again for every mini-batch: the batch is
written into the placeholders in place (and cached results are invalidated), and the
probabilities, gradients and updates are evaluated (SGD and ``Optimizer.one_pass`` rules:
in one pass with the updates as targets, nothing cached on the nodes). ``fit`` computes the
loss from the probabilities a step returns.
Rebuilding the graph per batch gives the same values and costs a node build per op per
batch; the evaluator's plan cache then only saves the analysis.
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
from ..evaluate.executor import execute_arrays, invalidate_caches
from ..layers.keys import LayerInput, LayerOutput
from ..model.grad_collector import GradCollector
from ..model.optim import SGD, OnePass, Optimizer
from ..tags import CPU, Dim2, Float32
from .model import TrainableModel

__all__ = ["PredictGraph", "StepGraph"]

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


class StepGraph:
    """Forward, loss gradient and backward of one batch size, over placeholders ``x`` and
    ``y`` (one-hot rows)."""

    def __init__(self, model: TrainableModel, batch: int, features: int, classes: int) -> None:
        self.x: Matrix32 = zeros((batch, features), Float32, CPU)
        self.y: Matrix32 = zeros((batch, classes), Float32, CPU)
        self.probs = ops.softmax(_forward(model, self.x, classes))
        # The gradient of the mean NLL through the softmax. For any targets it is
        # softmax_grad(nll_loss_grad(1, y, p), p), which the evaluator rewrites into one
        # kernel (g / S * (p * T - y), with T each row's and S all targets' sum); fit's
        # targets are one-hot rows (T = 1, S = batch), where that is exactly (p - y) / batch:
        # two element-wise passes, as a hand-written step has (tests/test_train_fit.py).
        grad = (self.probs - self.y) * (1.0 / batch)
        model.feed_backward(model.output_cont().set(LayerOutput, grad))
        self.grads: GradCollector[Float32, CPU] = GradCollector(Float32, CPU)
        model.grad_collect(self.grads)
        self.lr = scalar(0.0, Float32, CPU)
        self._lr = 0.0
        """The value now in ``lr``'s array (written only when the schedule changes it)."""
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

    def _run_pass(
        self, roots: list[Roots], targets: Targets, optimizer: Optimizer
    ) -> npt.NDArray[np.float32]:
        """Probabilities and every update in one evaluation."""
        arrays = execute_arrays(roots, targets)
        for i, weight in targets.items():
            if arrays[i] is not weight.array:  # not written in place: copy (after every read)
                weight.array[...] = arrays[i]
        invalidate_caches()  # the weights changed in place
        optimizer.step_count += 1
        probs: npt.NDArray[np.float32] = arrays[0]
        return probs

    def run_rows(
        self,
        features: npt.NDArray[np.float32],
        targets: npt.NDArray[np.float32],
        rows: npt.NDArray[np.int64],
        optimizer: Optimizer,
    ) -> npt.NDArray[np.float32]:
        """``step`` on the batch ``features[rows]``, ``targets[rows]``, gathered straight
        into the placeholders (no batch arrays in between); ``rows`` must be in range."""
        # mode "clip": numpy writes straight into out ("raise" first copies it, 10x slower);
        # the rows are in range (a permutation of the data's indices).
        features.take(rows, 0, self.x.array, "clip")
        targets.take(rows, 0, self.y.array, "clip")
        return self.step(optimizer)

    def step(self, optimizer: Optimizer) -> npt.NDArray[np.float32]:
        """One step over the batch now in the placeholders; returns its probabilities
        (valid until the next step: copy them to keep them)."""
        invalidate_caches()  # the placeholders changed in place
        if EvalPlan.current().pending() == 0:
            if type(optimizer) is SGD:
                lr = optimizer.current_lr()
                if lr != self._lr:
                    self.lr.array[...] = self._lr = lr
                return self._run_pass(*self._sgd_plan(optimizer), optimizer)
            plan, roots, targets = self._one_pass(optimizer)
            if plan is not None:
                plan.prepare()
                return self._run_pass(roots, targets, optimizer)
        handle: EvalHandle[Float32, CPU, Dim2] = self.probs.eval_register()
        optimizer.step(self.grads)  # its EvalPlan.eval() computes probs too
        probs: npt.NDArray[np.float32] = handle.data().array
        return probs


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
