"""numpy implementations of the structural ops: dot, matmul, slice."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...devices import array_module, module_of
from ...ops.declare import implement
from ...tags import CPU

Array = Any


@implement("dot", CPU)
def dot(a: Array, b: Array, k: int) -> Array:
    if a.ndim == 2 and b.ndim == 2 and k == 1:
        return a @ b
    if k == 1 and b.ndim == 1:
        return a @ b
    return np.tensordot(a, b, axes=k)


def rows_dot_into(a: Array, b: Array, *, out: Array) -> Array:
    """``dot(a, b, 1)`` for ``a`` of rank > 2 and ``b`` of rank 1 or 2, into ``out``: the
    leading dims of ``a`` as one row dim, so one GEMM / GEMV (the call tensordot makes, so
    the same numbers), written straight into ``out`` when it is contiguous."""
    rows = a.reshape(-1, a.shape[-1])
    if out.flags.c_contiguous:
        np.matmul(rows, b, out=out.reshape(rows.shape[0], *b.shape[1:]))
    else:
        out[...] = np.matmul(rows, b).reshape(out.shape)
    return out


@implement("slice", CPU)
def slice_(x: Array, index: int) -> Array:
    return x[index]


@implement("zeros", CPU)
def zeros(shape: tuple[int, ...], elem: Any, device: Any) -> Array:
    return array_module(device).zeros(shape, elem.dtype)


@implement("fill", CPU)
def fill(value: Array, shape: tuple[int, ...]) -> Array:
    return module_of(value).full(shape, value, value.dtype)


@implement("one_hot", CPU)
def one_hot(value: Array, length: int, pos: int) -> Array:
    out = module_of(value).zeros((length,), value.dtype)
    out[pos] = value
    return out


@implement("stack", CPU)
def stack(*items_and_axis: Any) -> Array:
    *items, axis = items_and_axis
    return np.stack(items, axis=axis)


@implement("matmul", CPU)
def matmul(a: Array, b: Array) -> Array:
    return np.matmul(a, b)
