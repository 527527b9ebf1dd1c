"""The command's classifiers as modules: ``MLPClassifier`` and ``ConvClassifier``.

::

    tn.manual_seed(0)
    model = MLPClassifier([64, 128, 10], "relu")
    fit(model, split.train, optim.Momentum(model, lr=0.05), test=split.test)

Both take a batch of flat samples ``(batch, features)`` and give logits ``(batch, classes)``;
the convolutional one sees each sample as a 1-channel ``side x side`` image. Their weights are
drawn as PyTorch's ``nn.Linear`` / ``nn.Conv2d`` draw them, from ``gen`` (or the default
generator, ``tn.manual_seed``); their state-dict names are PyTorch's (``layers.0.weight``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .. import ops, optim
from ..data.module import Module
from ..data.tensor import TensorLike
from ..nn.conv import Conv2d, Flatten, MaxPool2d
from ..nn.layers import Linear
from ..ops.random import Generator
from ..tags import CPU, DeviceTag, Dim2, Float32
from .classifier import ActivationName, OptimizerName, optimizer_schedule

__all__ = ["ConvClassifier", "MLPClassifier", "make_module_optimizer"]

M = TypeVar("M", bound=Module)
Batch = TensorLike[Float32, Any, Dim2]
FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "relu": ops.relu,
    "sigmoid": ops.sigmoid,
    "tanh": ops.tanh,
}


class MLPClassifier(Module):
    """``widths[0] -> ... -> widths[-1]`` linear layers, ``activation`` after each but the
    last (logits out)."""

    def __init__(
        self,
        widths: Sequence[int],
        activation: ActivationName = "relu",
        *,
        gen: Generator[Any] | None = None,
        device: type[DeviceTag] = CPU,
    ) -> None:
        pairs = itertools.pairwise(widths)
        self.layers = [Linear(a, b, device=device, gen=gen) for a, b in pairs]
        self.activation = activation

    def __call__(self, x: Batch) -> Batch:
        act = FUNCTIONS[self.activation]
        for layer in self.layers[:-1]:
            x = act(layer(x))
        out: Batch = self.layers[-1](x)
        return out


class ConvClassifier(Module):
    """conv(channels, 3x3, padding 1) -> ReLU -> 2x2 max pool -> flatten -> linear(classes),
    of ``(batch, side * side)`` samples seen as ``(batch, 1, side, side)`` images (``side``
    even)."""

    def __init__(
        self,
        features: int,
        classes: int,
        channels: int = 8,
        *,
        gen: Generator[Any] | None = None,
        device: type[DeviceTag] = CPU,
    ) -> None:
        self.side = math.isqrt(features)
        self.conv = Conv2d(1, channels, 3, padding=1, device=device, gen=gen)
        self.pool = MaxPool2d(2)
        self.flat = Flatten()
        self.fc = Linear(channels * (self.side // 2) ** 2, classes, device=device, gen=gen)

    def __call__(self, x: Batch) -> Batch:
        images = ops.reshape(x, (x.shape[0], 1, self.side, self.side))
        out: Batch = self.fc(self.flat(self.pool(ops.relu(self.conv(images)))))
        return out


def make_module_optimizer(
    optimizer: OptimizerName,
    model: M,
    lr: float | None = None,
    *,
    total_steps: int | None = None,
) -> optim.Optimizer[M]:
    """``make_optimizer``'s optimizers for a module: ``optim.SGD``, ``optim.Momentum`` (0.9)
    or ``optim.Adam`` of ``model`` with ``lr`` (default: ``default_lr``), decayed by
    ``cosine_schedule`` over ``total_steps`` when given, else constant."""
    schedule = optimizer_schedule(optimizer, lr, total_steps)
    if optimizer == "sgd":
        return optim.SGD(model, schedule)
    if optimizer == "momentum":
        return optim.Momentum(model, schedule, 0.9)
    return optim.Adam(model, schedule)
