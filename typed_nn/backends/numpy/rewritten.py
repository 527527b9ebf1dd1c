"""numpy kernels for the nodes the evaluator's rewrites make (see ``evaluate/rewrite.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy._core.multiarray import c_einsum

from ...devices import asarray_like
from ...ops.declare import implement
from ...tags import CPU
from .nn import SUMS, group_sums

Array = Any


@implement("pick_row", CPU)
def pick_row(m: Array, s: Array, pos: int) -> Array:
    """``dot(BiasVector(len, pos, s), m)`` = ``s * m[pos]``."""
    return asarray_like(np.multiply(m[pos], s), m)


@implement("pick_col", CPU)
def pick_col(m: Array, s: Array, pos: int) -> Array:
    """``dot(m, BiasVector(len, pos, s))`` = ``s * m[..., pos]``."""
    return asarray_like(np.multiply(m[..., pos], s), m)


@implement("append_ones", CPU, writes_into=True)
def append_ones(x: Array, out: Array | None = None) -> Array:
    """``x`` with a column of ones after its last column (``[x | 1]``)."""
    shape = (*x.shape[:-1], x.shape[-1] + 1)
    r = np.empty_like(x, shape=shape) if out is None else out  # cupy's, for a cupy x
    r[..., :-1] = x
    r[..., -1] = 1
    return r


@implement("contiguous", CPU)
def contiguous(x: Array) -> Array:
    """A fresh row-major copy of ``x`` (never ``x`` itself, even when it is row-major)."""
    return x.copy(order="C")


DOT_ELEMENTS = 1 << 16
"""Up to this many float32 products on the host, one BLAS dot; past it OpenBLAS's float32 dot
loses precision (1.3e-6 relative on 10^6 values, where numpy's pairwise sum keeps 1e-7):
einsum, 4e-7. Float64 and device arrays always take the dot."""


@implement("sum_of_products", CPU, writes_into=True)
def sum_of_products(a: Array, b: Array, count: int, out: Array | None = None) -> Array:
    """``reduce_sum(a * b) / count`` over every element, as ``np.mean``/``np.sum`` round it
    (a total in the operands' dtype divided by the count), without an array of the
    products. Into ``out``, a fresh value: the operands' buffers may be reused once it is
    taken (an MSE's difference, scaled in place into its gradient)."""
    a, b = a.reshape(-1), b.reshape(-1)
    pairwise = type(a) is np.ndarray and a.dtype == np.float32 and a.size > DOT_ELEMENTS
    total = np.einsum("i,i->", a, b) if pairwise else np.dot(a, b)
    total = asarray_like(total / count if count != 1 else total, a)
    if out is None:
        return total
    out[...] = total
    return out


@implement("softmax_nll_grad", CPU, writes_into=True)
def softmax_nll_grad(g: Array, t: Array, y: Array, k: int, out: Array | None = None) -> Array:
    """The gradient of ``nll_loss(t, softmax(x))`` w.r.t. ``x`` scaled by ``g``, in one pass.

    With S = sum of all t (nll_loss divides by it) and T the sum of t over each softmax group
    (the last ``k`` dims), the chain rule gives ``g / S * (y * T - t)``; for one group this is
    MetaNN's ``g * (y - t / S)`` (METANN.md §2.3: the original scaled it by S, a bug).
    """
    host = type(y) is np.ndarray
    if host and k == 1 and type(t) is np.ndarray and t.flags.c_contiguous:
        sums = c_einsum(SUMS, t)  # group_sums' einsum, without its calls
        same = t.shape == y.shape and t.dtype == y.dtype
        if same and sums.tobytes() == _ones(sums.size, y.dtype):
            # rows of targets summing to exactly 1 (one-hot, soft labels): y * 1 is y and S
            # is the row count, exactly (the check: 0.2 us; the two passes it saves: 1 us)
            r = np.subtract(y, t, out=out)
            r *= float(g) / sums.size
            return r
        group = sums[..., None]
    else:
        group = group_sums(t, k)  # each row's sum as softmax's (einsum; see nn.group_sums)
    r = np.multiply(y, group, out=out)
    r -= t
    if not host:  # a device's: no host sync (``float(g)`` would be one)
        r *= (g / np.add.reduce(group, axis=None)).astype(y.dtype)
        return r
    # g / S in Python floats: a double quotient of two float32 values rounded to float32 is
    # their float32 quotient (S = 0 gives inf or NaN through numpy, not a ZeroDivisionError)
    total = float(np.add.reduce(group, axis=None))
    r *= float(g) / total if total else float(np.float64(g) / np.float64(total))
    return r


_ONES: dict[tuple[int, Any], bytes] = {}


def _ones(rows: int, dtype: Any) -> bytes:
    """The bytes of ``rows`` ones of ``dtype`` (kept for the first 256 shapes seen)."""
    ones = _ONES.get((rows, dtype))
    if ones is None:
        ones = np.ones(rows, dtype).tobytes()
        if len(_ONES) < 256:
            _ONES[(rows, dtype)] = ones
    return ones
