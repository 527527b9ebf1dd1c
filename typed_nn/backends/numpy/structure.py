"""numpy implementations of the structural ops: dot, matmul, slice."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...devices import array_module, module_of
from ...ops.declare import implement
from ...tags import CPU

Array = Any


def is_matmul(a_rank: int, b_rank: int, k: int) -> bool:
    """Whether ``dot(a, b, k)`` is numpy's ``a @ b`` (else it is ``np.tensordot``'s GEMM):
    the plain kernel (with or without ``out=``) and its site kernel all decide here, so each takes
    the same BLAS call and gives the same numbers."""
    return k == 1 and (b_rank == 1 or (a_rank == 2 and b_rank == 2))


BLAS_DOT = frozenset(map(np.dtype, (np.float32, np.float64, np.complex64, np.complex128)))


def by_dot(a_rank: int, b_rank: int, dtype: Any) -> bool:
    """Whether ``a @ b`` is taken as ``np.dot``: matrices and vectors of a BLAS type. It
    makes numpy's ``matmul`` BLAS call without the ufunc's dispatch: 0.4 to 0.9 us of a small
    product's 2-6 us, the same bits where the operands' strides suit BLAS (other strides may
    differ in the last bits: plain and site kernels choose alike, so they agree). Of a
    higher rank, ``np.dot`` is not ``@``."""
    return a_rank <= 2 and b_rank <= 2 and dtype in BLAS_DOT


def product(a: Array, b: Array, out: Array | None = None) -> Array:
    """``a @ b`` (into ``out``) for :func:`is_matmul` operands: every product of ``dot``
    and its site kernel (``specialised.dot``) is this one, so each gives the same numbers.
    ``np.dot`` takes only a C array ``out`` (contiguous, aligned, writeable)."""
    if by_dot(a.ndim, b.ndim, a.dtype) and b.dtype == a.dtype and (out is None or out.flags.carray):
        return np.dot(a, b, out=out)
    return np.matmul(a, b, out=out)


@implement("dot", CPU, writes_into=True)
def dot(a: Array, b: Array, k: int, out: Array | None = None) -> Array:
    if out is None:
        return product(a, b) if is_matmul(a.ndim, b.ndim, k) else np.tensordot(a, b, axes=k)
    if is_matmul(a.ndim, b.ndim, k) and out.ndim > 0:
        return product(a, b, out)  # the same BLAS call, written into ``out``
    return contract_into(a, b, k, out=out)


def contract_into(a: Array, b: Array, k: int, *, out: Array) -> Array:
    """``dot(a, b, k)`` into ``out``: ``np.tensordot``'s one ``np.dot`` of ``a`` as a matrix
    (its last ``k`` dims as columns) and ``b`` as one (its first ``k`` as rows), so the same
    numbers, without its result's copy. The reshapes are views where the dims merge (the
    weight gradients' transposed activations do), copies otherwise, as in tensordot."""
    rows = a.reshape(math.prod(a.shape[: a.ndim - k]), math.prod(a.shape[a.ndim - k :]))
    cols = b.reshape(rows.shape[1], math.prod(b.shape[k:]))
    if out.flags.c_contiguous:
        np.dot(rows, cols, out=out.reshape(rows.shape[0], cols.shape[1]))
    else:
        out[...] = np.dot(rows, cols).reshape(out.shape)
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


@implement("stack", CPU, writes_into=True)
def stack(*items_and_axis: Any, out: Array | None = None) -> Array:
    *items, axis = items_and_axis
    return np.stack(items, axis=axis, out=out)


@implement("matmul", CPU, writes_into=True)
def matmul(a: Array, b: Array, out: Array | None = None) -> Array:
    return np.matmul(a, b, out=out)
