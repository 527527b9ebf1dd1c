"""Parameter initialisation of the catalogue: PyTorch's defaults, drawn from a generator."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..data.factories import tensor
from ..data.tensor import Tensor
from ..tags import DeviceTag, FloatTag, dim_of_rank

__all__ = ["fan_in_uniform", "normal", "uniform"]

_default = [np.random.default_rng(0)]


def _rng(gen: np.random.Generator | None) -> np.random.Generator:
    return gen if gen is not None else _default[0]


def fan_in_uniform(
    shape: tuple[int, ...],
    fan_in: int,
    elem: type[FloatTag],
    device: type[DeviceTag],
    gen: np.random.Generator | None,
) -> Tensor[Any, Any, Any]:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): ``torch.nn.Linear``'s weight and bias."""
    return uniform(shape, 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0, elem, device, gen)


def uniform(
    shape: tuple[int, ...],
    bound: float,
    elem: type[FloatTag],
    device: type[DeviceTag],
    gen: np.random.Generator | None,
) -> Tensor[Any, Any, Any]:
    """U(-bound, bound)."""
    values = _rng(gen).uniform(-bound, bound, shape).astype(elem.dtype)
    return tensor(values, elem, device, dim_of_rank(len(shape)))


def normal(
    shape: tuple[int, ...],
    elem: type[FloatTag],
    device: type[DeviceTag],
    gen: np.random.Generator | None,
) -> Tensor[Any, Any, Any]:
    """N(0, 1): ``torch.nn.Embedding``'s weight."""
    values = _rng(gen).standard_normal(shape).astype(elem.dtype)
    return tensor(values, elem, device, dim_of_rank(len(shape)))
