"""Kernels specialised per node when a plan is compiled (see ``ops.declare.specialise``).

A compiled plan knows every operand's shape and every parameter, so the work the plain
kernels redo per call — axes from ``k``, the matrix/tensor branch of ``dot``, result
wrapping — is done once here, and the kernel writes into the plan's buffer. On the small
tensors of a training step that per-call work costs as much as the arithmetic. Each
specialised kernel computes exactly the plain kernel's numbers (``tests/test_specialised.py``).
"""

from __future__ import annotations

import math
from functools import partial
from operator import attrgetter, itemgetter, methodcaller
from typing import Any

import numpy as np

from ...ops.declare import Site, Specialised, specialise
from ...tags import CPU
from . import activation as _activation
from . import join as _join  # noqa: F401
from . import layout as _layout  # noqa: F401 - the plain forms must be registered
from . import nn as _nn  # noqa: F401
from . import reduce as _reduce  # noqa: F401
from . import rewritten as _rewritten  # noqa: F401
from . import structure as _structure

Array = Any
_sum = np.add.reduce
_max = np.maximum.reduce

HALVING_ROWS = 256
"""Rows from which softmax's row maximum is taken by halving the rows (``_last_max``)."""


def _trailing(site: Site, k: int) -> tuple[int, ...]:
    rank = len(site.shape)
    return tuple(range(rank - k, rank))


@specialise("dot", CPU)
def dot(site: Site) -> Specialised | None:
    """Matrix and vector products are one ``np.matmul`` into the buffer (as ``dot_out``)."""
    a, b = site.operands
    if a is None or b is None or site.params != (1,) or not site.shape:
        return None
    if len(b[0]) > 2:
        return None
    if len(a[0]) > 2:  # a stack of rows times a matrix or vector: one GEMM, as tensordot's
        return Specialised(_structure.rows_dot_into, writes=True)
    return Specialised(np.matmul, writes=True)


@specialise("concat", CPU)
def concat(site: Site) -> Specialised | None:
    """``np.concatenate`` into the buffer: no fresh array per call (items of the result's
    dtype: the plain kernel's promotion of mixed items is left to it)."""
    if any(item is None or item[1] != site.dtype for item in site.operands):
        return None
    (axis,) = site.params
    concatenate = np.concatenate

    def concat_into(*items: Array, out: Array) -> Array:
        return concatenate(items, axis=axis, out=out)

    return Specialised(concat_into, writes=True)


@specialise("stack", CPU)
def stack(site: Site) -> Specialised | None:
    """``np.stack`` into the buffer (a sequence's outputs: a fresh array above malloc's
    mmap threshold costs its page faults at every call)."""
    if any(item is None or item[1] != site.dtype for item in site.operands):
        return None
    (axis,) = site.params
    stack_ = np.stack

    def stack_into(*items: Array, out: Array) -> Array:
        return stack_(items, axis=axis, out=out)

    return Specialised(stack_into, writes=True)


@specialise("narrow", CPU)
def narrow(site: Site) -> Specialised:
    """The same view, its index tuple built once."""
    axis, start, length = site.params
    assert all(isinstance(p, int) for p in site.params)
    index = (slice(None),) * axis + (slice(start, start + length),)
    return Specialised(itemgetter(index), writes=False)


@specialise("permute", CPU)
def permute(site: Site) -> Specialised:
    """A view, as the plain kernel: ``.T`` for a reversed order, else ``.transpose``."""
    (order,) = site.params
    assert isinstance(order, tuple)
    if order == tuple(reversed(range(len(order)))):
        return Specialised(attrgetter("T"), writes=False)
    return Specialised(methodcaller("transpose", order), writes=False)


@specialise("reduce_sum", CPU)
def reduce_sum(site: Site) -> Specialised | None:
    """``np.add.reduce`` into the buffer (a 0-d result keeps the plain path)."""
    x = site.operands[0]
    if x is None or not site.shape:
        return None
    dims, keep = site.params
    return Specialised(partial(_sum, axis=dims, dtype=x[1], keepdims=keep), writes=True)


@specialise("relu", CPU)
def relu(site: Site) -> Specialised:
    """``np.maximum(x, 0)`` into the buffer, without the plain kernel's buffer check."""
    maximum = np.maximum

    def relu_into(x: Array, *, out: Array) -> Array:
        return maximum(x, 0, out=out)

    return Specialised(relu_into, writes=True)


@specialise("relu_grad", CPU)
def relu_grad(site: Site) -> Specialised | None:
    """The plain kernel's product of bit patterns, its dtype checks done once."""
    g, x = site.operands
    bits = _activation.BITS.get(site.dtype)
    if g is None or x is None or bits is None or g[1] != site.dtype:
        return None
    multiply = np.multiply

    def relu_grad_into(g: Array, x: Array, *, out: Array) -> Array:
        multiply(g.view(bits), x > 0, out=out.view(bits))
        return out

    return Specialised(relu_grad_into, writes=True)


@specialise("sigmoid", CPU)
def sigmoid(site: Site) -> Specialised | None:
    """The plain kernel's four passes into the buffer, without its floating-point state
    switch: a plan runs with floating-point errors ignored already (``executor._run``)."""
    x = site.operands[0]
    if x is None or x[1] != site.dtype or site.dtype.kind != "f":
        return None
    one = np.ones((), site.dtype)  # a 0-d array: numpy converts a Python 1 at every call
    negative, exp, add, reciprocal = np.negative, np.exp, np.add, np.reciprocal

    def sigmoid_into(x: Array, *, out: Array) -> Array:
        negative(x, out=out)
        exp(out, out=out)
        add(out, one, out=out)
        return reciprocal(out, out=out)

    return Specialised(sigmoid_into, writes=True)


def _last_max(x: Array) -> Array:
    """``np.maximum.reduce(x, axis=-1, keepdims=True)`` (the same values: a maximum is exact)
    by halving the last dim: numpy reduces short rows one at a time, 2-3x slower than these
    element-wise passes over the whole array (rows of 64: 250 vs 108 us for 2048 rows)."""
    while x.shape[-1] > 1:
        n = x.shape[-1]
        half = n // 2
        top = np.maximum(x[..., :half], x[..., half : 2 * half])
        if n % 2:
            np.maximum(top[..., :1], x[..., 2 * half :], out=top[..., :1])
        x = top
    return x


@specialise("softmax", CPU)
def softmax(site: Site) -> Specialised:
    """The plain kernel's three passes, written into the buffer."""
    (k,) = site.params
    assert isinstance(k, int)
    axes = _trailing(site, k)

    rows = math.prod(site.shape[:-1]) if site.shape else 0
    # Halving beats numpy's row-at-a-time reduce only over many rows (measured: 2048 rows of
    # 10: 37 vs 101 us; 32 rows of 10: 4.7 vs 2.2 us; even at 256 rows of 64).
    halve = k == 1 and rows >= HALVING_ROWS and site.shape[-1] > 1

    def softmax_into(x: Array, *, out: Array) -> Array:
        peak = _last_max(x) if halve else _max(x, axis=axes, keepdims=True)
        np.subtract(x, peak, out=out)
        np.exp(out, out=out)
        out /= _sum(out, axis=axes, keepdims=True)
        return out

    return Specialised(softmax_into, writes=True)


@specialise("softmax_grad", CPU)
def softmax_grad(site: Site) -> Specialised:
    """``y * (g - sum(g * y))``, the plain kernel's passes written into the buffer (no
    full-size temporary: the buffer holds ``g * y`` until the group sums are taken)."""
    (k,) = site.params
    assert isinstance(k, int)
    axes = _trailing(site, k)

    def softmax_grad_into(g: Array, y: Array, *, out: Array) -> Array:
        np.multiply(g, y, out=out)
        s = _sum(out, axis=axes, keepdims=True)
        np.subtract(g, s, out=out)
        out *= y
        return out

    return Specialised(softmax_grad_into, writes=True)


@specialise("softmax_nll_grad", CPU)
def softmax_nll_grad(site: Site) -> Specialised:
    """``g / S * (y * T - t)`` (see ``rewritten.softmax_nll_grad``), written into the buffer.

    ``g / S`` is taken in Python floats: a double quotient of two float32 values rounded to
    float32 is their float32 quotient, so the scale is bit-identical (S = 0 gives inf or
    NaN through numpy, as in the plain kernel, not a ZeroDivisionError).
    """
    (k,) = site.params
    assert isinstance(k, int)
    axes = _trailing(site, k)

    def softmax_nll_grad_into(g: Array, t: Array, y: Array, *, out: Array) -> Array:
        group = _sum(t, axis=axes, keepdims=True)
        np.multiply(y, group, out=out)
        out -= t
        total = float(_sum(t, axis=None))
        out *= float(g) / total if total else float(np.float64(g) / np.float64(total))
        return out

    return Specialised(softmax_nll_grad_into, writes=True)
