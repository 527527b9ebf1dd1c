"""What ``fit`` needs to train a regression model on an ``ArrayDataset``: the data checked,
an epoch's loss from its batches' losses, and the loss on a test set.

The step itself is ``TrainStep`` with the caller's loss (``ops.mse_loss`` by default,
``l1_loss``, ``huber_loss`` or any ``loss(truth, pred) -> Scalar``); it returns each batch's
loss, before that batch's update.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import devices
from ..data.factories import zeros
from ..evaluate import EvalPlan
from ..tags import Float32
from .arrays import ArrayDataset
from .checks import bad_argument, check_finite_rows, declared_mismatch
from .data import n_batches
from .step import Array, Loss, _forward
from .trainee import Trainee

__all__ = ["LossGraph", "LossMetrics", "check_arrays"]

DOING = "cannot fit"


def check_arrays(name: str, data: object) -> tuple[int, int]:
    """``data``: an ArrayDataset of (n, f) float32 finite features and (n, k) float32 finite
    targets; returns (f, k)."""
    if not isinstance(data, ArrayDataset):
        hint = "wrap the arrays: ArrayDataset(features, targets)."
        raise bad_argument(DOING, name, "a typed_nn.train.ArrayDataset", data, hint)
    if len(data.arrays) != 2:
        raise declared_mismatch(
            f"{DOING}: {name} must hold two arrays, features and targets.",
            "ArrayDataset(features, targets)",
            repr(data),
            "train on ArrayDataset(features, targets).",
        )
    for part, array in zip(("features", "targets"), data.arrays, strict=True):
        ok = array.ndim == 2 and array.dtype == np.float32
        if not ok:
            reshape = " (reshape (n,) targets to (n, 1))" if array.ndim == 1 else ""
            raise declared_mismatch(
                f"{DOING}: {name} {part} must be a (n, {part[0]}) float32 matrix.",
                f"float32 array (n samples, {part[0]} columns)",
                f"{array.dtype} array {array.shape}",
                f"convert them with np.asarray(x, np.float32){reshape}.",
            )
        check_finite_rows(f"{DOING}: {name} {part}", array)
    features, targets = data.arrays
    return int(features.shape[1]), int(targets.shape[1])


class LossMetrics:
    """An epoch's training loss from each batch's loss (before its update): the batches'
    losses averaged with their sizes as weights (for a mean-reduced loss, the mean over the
    epoch's samples). With ``check``, ``first_bad`` is the position, in the epoch's order, of
    the first sample of the first batch whose loss is NaN or Inf.

    The same interface as ``EpochMetrics`` (fit's loop serves both). Each loss is read to
    the host as it comes (on the GPU, one small copy per batch, not per chunk of batches).
    """

    CAUSE = "not a finite number"
    FINITE = "a finite loss"

    def __init__(self, n: int, batch_size: int, check: bool = True) -> None:
        self.n, self.batch_size, self.check = n, batch_size, check
        self.losses = np.empty(n_batches(n, batch_size))
        self.done = 0
        self.first_bad: int | None = None

    def begin(self, order: Any) -> None:
        """Start an epoch (the order does not matter to a loss)."""
        self.done = 0
        self.first_bad = None

    def add(self, loss: Array) -> None:
        """The next batch's loss, a rank-0 array on any device."""
        value = float(devices.to_host(loss))
        self.losses[self.done] = value
        if self.check and self.first_bad is None and not math.isfinite(value):
            self.first_bad = self.done * self.batch_size
        self.done += 1

    def batch_loss(self, loss: Array, rows: Any) -> float:
        """One batch's loss (for a progress bar)."""
        return float(devices.to_host(loss))

    def batch_nll(self, batch: int) -> float:
        """The loss of the epoch's ``batch`` (0-based)."""
        return float(self.losses[batch])

    def end(self) -> tuple[float, None]:
        """The epoch's loss (and no accuracy)."""
        sizes = np.full(len(self.losses), self.batch_size, np.float64)
        sizes[-1] = self.n - (len(sizes) - 1) * self.batch_size
        with np.errstate(invalid="ignore", over="ignore"):
            return float(np.dot(self.losses, sizes) / self.n), None


class LossGraph:
    """The loss of the model's outputs for a whole data set (forward only), built once."""

    def __init__(self, trainee: Trainee, loss: Loss, data: ArrayDataset) -> None:
        features, targets = data.arrays
        device = trainee.device
        xp = devices.array_module(device)
        self.x = zeros(features.shape, Float32, device)
        self.y = zeros(targets.shape, Float32, device)
        self.x.array[...] = xp.asarray(features)
        self.y.array[...] = xp.asarray(targets)
        training = trainee.training
        trainee.set_training(False)  # evaluation mode, as for a classifier's test set
        try:
            out = _forward(trainee, self.x, targets.shape[1], regression=True)
            self.value = loss(self.y, out)
            trainee.release()
        finally:
            trainee.set_training(training)

    def run(self) -> float:
        """The loss with the parameters as they are now."""
        handle = self.value.eval_register()
        EvalPlan.eval()
        return float(handle.data().numpy())
