"""numpy implementations of softmax, log_softmax, nll_loss and their gradients.

``k`` is the number of trailing dims normalised together; a group's statistics are reduced
with ``keepdims`` so they broadcast back over the group.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy._core.multiarray import c_einsum

from ...devices import asarray_like
from ...ops.declare import implement
from ...tags import CPU

Array = Any


def _axes(x: Array, k: int) -> tuple[int, ...]:
    return tuple(range(x.ndim - k, x.ndim))


def _rows(x: Array, k: int) -> Array:
    """``x`` with its trailing ``k`` dims as one, C-contiguous: einsum's summation order
    depends on the layout, so every caller hands it the same one."""
    if k != 1:
        x = x.reshape(*x.shape[: x.ndim - k], math.prod(x.shape[x.ndim - k :]))
    return x if x.flags.c_contiguous else x.copy()


SUMS = "...j->..."
DOTS = "...j,...j->..."
"""The einsums of :func:`group_sums` and :func:`group_dots` (softmax's specialised kernel
calls them with the same subscripts, so the same loops)."""
add_reduce: Any = np.add.reduce  # positional (axis, dtype, out, keepdims): no wrapper


def einsum(x: Array) -> Any:
    """``np.einsum`` (``optimize=False``) for ``x``'s library: numpy's without its dispatch
    wrapper (0.5 us of the 1.2 us a (32, 10) softmax's sums take)."""
    return c_einsum if type(x) is np.ndarray else np.einsum


def group_sums(x: Array, k: int) -> Array:
    """Sums over the trailing ``k`` dims, kept as size-1 dims (softmax's denominators).

    ``einsum`` sums each row in one call, 4x faster than ``np.add.reduce`` over short rows
    (2048 rows of 64: 11 vs 44 us), to the same accuracy; a row's sum depends only on the
    row (not on how many rows are beside it), so a sample's softmax is the same in any batch.
    The plain and specialised kernels both take their sums this way, so they agree bit for bit.
    """
    return einsum(x)(SUMS, _rows(x, k))[(..., *(None,) * k)]


def group_dots(a: Array, b: Array, k: int) -> Array:
    """Sums of ``a * b`` over the trailing ``k`` dims, as :func:`group_sums` (one einsum,
    no full-size product: 2048 rows of 64: 19 us vs 74 us for multiply then reduce). On the
    GPU a multiply and a sum: cupy's einsum of two operands is a cuBLAS product per call,
    which a captured step cannot hold."""
    if type(a) is not np.ndarray:
        return (a * b).sum(axis=tuple(range(-k, 0)), keepdims=True)
    return c_einsum(DOTS, _rows(a, k), _rows(b, k))[(..., *(None,) * k)]


@implement("softmax", CPU)
def softmax(x: Array, k: int) -> Array:
    if x.size == 0:  # no rows, or rows of no element (a maximum of nothing has no value)
        return x.copy()
    axes = _axes(x, k)
    r = np.subtract(x, x.max(axis=axes, keepdims=True))
    np.exp(r, out=r)
    r /= group_sums(r, k)
    return r


@implement("log_softmax", CPU)
def log_softmax(x: Array, k: int) -> Array:
    if x.size == 0:  # as softmax's
        return x.copy()
    axes = _axes(x, k)
    r = np.subtract(x, x.max(axis=axes, keepdims=True))
    r -= np.log(np.exp(r).sum(axis=axes, keepdims=True))
    return r


@implement("softmax_grad", CPU, writes_into=True)
def softmax_grad(g: Array, y: Array, k: int, out: Array | None = None) -> Array:
    if g.shape != y.shape:  # a broadcast cotangent
        g = np.broadcast_to(g, y.shape)
    r = np.subtract(g, group_dots(g, y, k), out=out)
    r *= y
    return r


@implement("log_softmax_grad", CPU)
def log_softmax_grad(g: Array, y: Array, k: int) -> Array:
    r = np.exp(y)
    r *= g.sum(axis=_axes(y, k), keepdims=True)
    np.subtract(g, r, out=r)
    return r


def t_log_p(truth: Array, pred: Array) -> Array:
    """truth * ln(pred), with 0 wherever truth is 0 (even where pred is 0)."""
    r = np.zeros(np.broadcast_shapes(truth.shape, pred.shape), pred.dtype)
    nonzero = truth != 0
    np.log(pred, out=r, where=nonzero)
    r *= truth
    return r


@implement("nll_loss", CPU, writes_into=True)
def nll_loss(truth: Array, pred: Array, out: Array | None = None) -> Array:
    # truth * ln(pred) unmasked first (3 passes instead of 5): where it is finite every term
    # with truth 0 is a zero, as the masked product has, so the sums are equal. A NaN or inf
    # (a zero probability, perhaps where truth is 0) takes the masked form.
    total = None
    if truth.shape == pred.shape:
        terms = np.log(pred)
        terms *= truth
        total = add_reduce(terms, None)
    if total is None or not math.isfinite(total):
        total = add_reduce(t_log_p(truth, pred), None)
    loss = -total / add_reduce(truth, None)
    if out is None:
        return asarray_like(loss, pred, pred.dtype)
    out[...] = loss
    return out


@implement("nll_loss_grad", CPU)
def nll_loss_grad(g: Array, truth: Array, pred: Array) -> Array:
    r = np.zeros(pred.shape, pred.dtype)
    np.divide(truth, pred, out=r, where=truth != 0)
    r *= -g / truth.sum()
    return r
