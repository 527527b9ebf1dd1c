"""numpy implementations of the reductions: reduce_sum, reduce_mean, reduce_max, argmax.

``dims`` is a sorted tuple of non-negative dims (the declaration canonicalised it). The
result keeps the operand's dtype (numpy would widen an int32 sum) and is always an array,
never a numpy scalar.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...devices import asarray_like
from ...ops.declare import implement
from ...tags import CPU

Array = Any


@implement("reduce_sum", CPU)
def reduce_sum(x: Array, dims: tuple[int, ...], keep_dim: bool) -> Array:
    # np.add.reduce is what np.sum calls for an ndarray, without its Python wrapper.
    if keep_dim:
        return asarray_like(np.add.reduce(x, axis=dims, dtype=x.dtype, keepdims=True), x)
    return asarray_like(np.add.reduce(x, axis=dims, dtype=x.dtype), x)


@implement("reduce_mean", CPU)
def reduce_mean(x: Array, dims: tuple[int, ...], keep_dim: bool) -> Array:
    return asarray_like(np.mean(x, axis=dims, keepdims=keep_dim, dtype=x.dtype), x)


@implement("reduce_max", CPU)
def reduce_max(x: Array, dims: tuple[int, ...], keep_dim: bool) -> Array:
    return asarray_like(np.max(x, axis=dims, keepdims=keep_dim), x)


@implement("argmax", CPU)
def argmax(x: Array, axis: int) -> Array:
    return asarray_like(np.argmax(x, axis=axis), x, np.int64)
