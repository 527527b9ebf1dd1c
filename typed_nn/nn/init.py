"""Parameter initialisation of the catalogue: PyTorch's defaults, drawn from a
``tn.Generator`` (the device's default generator, ``tn.manual_seed``, when none is given)."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..data.tensor import Tensor
from ..devices import array_module
from ..evaluate import evaluate
from ..ops.random import Generator, default_generator
from ..tags import DeviceTag, FloatTag, dim_of_rank

__all__ = ["fan_in_uniform", "normal", "uniform"]


def _gen(gen: Generator[Any] | None, device: type[DeviceTag]) -> Generator[Any]:
    return gen if gen is not None else default_generator(device)


def fan_in_uniform(
    shape: tuple[int, ...],
    fan_in: int,
    elem: type[FloatTag],
    device: type[DeviceTag],
    gen: Generator[Any] | None,
) -> Tensor[Any, Any, Any]:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): ``torch.nn.Linear``'s weight and bias."""
    return uniform(shape, 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0, elem, device, gen)


def uniform(
    shape: tuple[int, ...],
    bound: float,
    elem: type[FloatTag],
    device: type[DeviceTag],
    gen: Generator[Any] | None,
) -> Tensor[Any, Any, Any]:
    """U(-bound, bound), a tensor of its own."""
    if bound == 0.0:
        drawn: Any = ops.uniform(_gen(gen, device), shape, elem, device) * 0.0
    else:
        drawn = ops.uniform(_gen(gen, device), shape, elem, device, low=-bound, high=bound)
    return _owned(evaluate(drawn))


def normal(
    shape: tuple[int, ...],
    elem: type[FloatTag],
    device: type[DeviceTag],
    gen: Generator[Any] | None,
) -> Tensor[Any, Any, Any]:
    """N(0, 1): ``torch.nn.Embedding``'s weight."""
    return _owned(evaluate(ops.normal(_gen(gen, device), shape, elem, device)))


def _owned(t: Tensor[Any, Any, Any]) -> Tensor[Any, Any, Any]:
    """A writable tensor of its own (an evaluated result is read-only: a cached value)."""
    array = array_module(t.device).array(t.array, copy=True)
    return Tensor(array, t.elem, t.device, dim_of_rank(t.rank))
