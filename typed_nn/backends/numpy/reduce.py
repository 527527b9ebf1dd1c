"""numpy implementations of the reductions: reduce_sum, reduce_mean, reduce_max, argmax.

``dims`` is a sorted tuple of non-negative dims (the declaration canonicalised it). The
result keeps the operand's dtype (numpy would widen an int32 sum) and is always an array,
never a numpy scalar.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...devices import asarray_like
from ...ops.declare import implement
from ...tags import CPU
from .structure import product

Array = Any


add_reduce: Any = np.add.reduce  # positional (axis, dtype, out, keepdims): no wrapper
BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_ONES: dict[tuple[int, Any], Array] = {}
MAX_CACHED_ROWS = 1 << 14
"""Vectors of ones for column sums are kept up to this length, one per (rows, dtype) seen;
a longer one (a large image batch's B·H·W rows) is made at each call."""


def _ones(rows: int, dtype: Any) -> Array:
    ones = _ONES.get((rows, dtype))
    if ones is None:
        ones = np.ones(rows, dtype)
        if rows <= MAX_CACHED_ROWS and len(_ONES) < 256:
            _ONES[(rows, dtype)] = ones
    return ones


def column_sums_by_blas(shape: tuple[int, ...], dims: tuple[int, ...], dtype: Any) -> bool:
    """Whether a sum over ``dims`` of an array of ``shape`` and ``dtype`` is taken as column
    sums by BLAS (``sum_into``): a float sum over the leading dims."""
    lead = len(dims)
    return 0 < lead < len(shape) and dims == tuple(range(lead)) and dtype in BLAS_DTYPES


def sum_into(x: Array, dims: tuple[int, ...], dtype: Any, out: Array | None, keep: bool) -> Array:
    """The sum ``np.add.reduce(x, dims, dtype, out, keep)`` computes, up to rounding (what
    ``np.sum`` calls, without its Python wrapper). A float ``x`` summed over its leading
    dims (a bias gradient: column sums over the batch) is one BLAS product with a vector of
    ones: 2.5x faster than numpy's row-by-row adds on (640, 256) and 7x on (4096, 64), and
    more accurate (BLAS keeps partial sums: 3e-7 vs 1e-6 relative on 640 rows). Each
    column's sum reads only that column, so it does not depend on the other columns'
    values. (The specialised kernel writes the same product into its plan:
    ``specialised.reduce_sum``.)"""
    if (
        isinstance(x, np.ndarray)
        and dtype == x.dtype
        and column_sums_by_blas(x.shape, dims, x.dtype)
    ):
        lead = len(dims)
        rows, cols = math.prod(x.shape[:lead]), math.prod(x.shape[lead:])
        ones, table = _ones(rows, x.dtype), x.reshape(rows, cols)
        if out is None:
            shape = (1,) * lead + x.shape[lead:] if keep else x.shape[lead:]
            return product(ones, table).reshape(shape)
        if out.ndim == 1:
            product(ones, table, out)
        else:
            out[...] = product(ones, table).reshape(out.shape)
        return out
    return add_reduce(x, dims, dtype, out, keep)


@implement("reduce_sum", CPU)
def reduce_sum(x: Array, dims: tuple[int, ...], keep_dim: bool) -> Array:
    return asarray_like(sum_into(x, dims, x.dtype, None, keep_dim), x)


@implement("reduce_mean", CPU)
def reduce_mean(x: Array, dims: tuple[int, ...], keep_dim: bool) -> Array:
    return asarray_like(np.mean(x, axis=dims, keepdims=keep_dim, dtype=x.dtype), x)


@implement("reduce_max", CPU)
def reduce_max(x: Array, dims: tuple[int, ...], keep_dim: bool) -> Array:
    return asarray_like(np.max(x, axis=dims, keepdims=keep_dim), x)


@implement("argmax", CPU)
def argmax(x: Array, axis: int) -> Array:
    return asarray_like(np.argmax(x, axis=axis), x, np.int64)
