"""numpy kernels for the nodes the evaluator's rewrites make (see ``evaluate/rewrite.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...devices import asarray_like
from ...ops.declare import implement
from ...tags import CPU
from .nn import group_sums

Array = Any


@implement("pick_row", CPU)
def pick_row(m: Array, s: Array, pos: int) -> Array:
    """``dot(BiasVector(len, pos, s), m)`` = ``s * m[pos]``."""
    return asarray_like(np.multiply(m[pos], s), m)


@implement("pick_col", CPU)
def pick_col(m: Array, s: Array, pos: int) -> Array:
    """``dot(m, BiasVector(len, pos, s))`` = ``s * m[..., pos]``."""
    return asarray_like(np.multiply(m[..., pos], s), m)


@implement("append_ones", CPU)
def append_ones(x: Array) -> Array:
    """``x`` with a column of ones after its last column (``[x | 1]``)."""
    shape = (*x.shape[:-1], x.shape[-1] + 1)
    return append_ones_into(x, out=np.empty_like(x, shape=shape))  # cupy's, for a cupy x


def append_ones_into(x: Array, *, out: Array) -> Array:
    out[..., :-1] = x
    out[..., -1] = 1
    return out


@implement("contiguous", CPU)
def contiguous(x: Array) -> Array:
    """A fresh row-major copy of ``x`` (never ``x`` itself, even when it is row-major)."""
    return x.copy(order="C")


DOT_ELEMENTS = 1 << 16
"""Up to this many float32 products on the host, one BLAS dot; past it OpenBLAS's float32 dot
loses precision (1.3e-6 relative on 10^6 values, where numpy's pairwise sum keeps 1e-7):
einsum, 4e-7. Float64 and device arrays always take the dot."""


@implement("sum_of_products", CPU)
def sum_of_products(a: Array, b: Array, count: int) -> Array:
    """``reduce_sum(a * b) / count`` over every element, as ``np.mean``/``np.sum`` round it
    (a total in the operands' dtype divided by the count), without an array of the
    products."""
    a, b = a.reshape(-1), b.reshape(-1)
    pairwise = type(a) is np.ndarray and a.dtype == np.float32 and a.size > DOT_ELEMENTS
    total = np.einsum("i,i->", a, b) if pairwise else np.dot(a, b)
    return asarray_like(total / count if count != 1 else total, a)


@implement("softmax_nll_grad", CPU)
def softmax_nll_grad(g: Array, t: Array, y: Array, k: int) -> Array:
    """The gradient of ``nll_loss(t, softmax(x))`` w.r.t. ``x`` scaled by ``g``, in one pass.

    With S = sum of all t (nll_loss divides by it) and T the sum of t over each softmax group
    (the last ``k`` dims), the chain rule gives ``g / S * (y * T - t)``; for one group this is
    MetaNN's ``g * (y - t / S)`` (METANN.md §2.3: the original scaled it by S, a bug).
    """
    group = group_sums(t, k)  # each row's sum as softmax's (einsum; see nn.group_sums)
    out = np.multiply(y, group)
    out -= t
    out *= (g / np.add.reduce(group, axis=None)).astype(y.dtype)
    return out
