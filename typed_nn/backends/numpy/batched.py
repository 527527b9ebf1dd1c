"""numpy kernels for the group nodes the evaluator's batching makes (``evaluate/batch.py``).

A group holds ``n`` same-shaped items stacked along a new leading dim.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ...devices import asarray_like, module_of
from ...ops.declare import implement
from ...tags import CPU
from .nn import t_log_p
from .structure import matmul

Array = Any


@implement("batch_stack", CPU)
def batch_stack(*items: Array) -> Array:
    """Gather same-shaped values into one ``(n, *item)`` array: one ``concatenate`` along
    the items' first dim, reshaped (``np.stack`` reshapes each item in Python first: 19 vs
    6 us for 64 rows of 64)."""
    first = items[0]
    if first.ndim == 0:
        return np.stack(items)
    return np.concatenate(items, axis=0).reshape(len(items), *first.shape)


@implement("batch_narrow", CPU)
def batch_narrow(x: Array, axis: int, starts: tuple[int, ...], length: int) -> Array:
    """Item i is ``narrow(x, axis, starts[i], length)``: a view of ``x`` when the items tile
    one block of it along ``axis`` in order (rows of a batch, gate blocks of one product:
    splitting a dim never copies), else one gather."""
    n, first = len(starts), starts[0]
    xp = module_of(x)
    if starts == tuple(range(first, first + n * length, length)):
        block = x[(slice(None),) * axis + (slice(first, first + n * length),)]
        split = block.reshape(*x.shape[:axis], n, length, *x.shape[axis + 1 :])
        return split if axis == 0 else xp.moveaxis(split, axis, 0)
    index = _positions(xp, starts)[:, None] + xp.arange(length)  # (n, length) positions
    return xp.moveaxis(xp.take(x, index, axis=axis), axis, 0)


def _positions(xp: Any, starts: tuple[int, ...]) -> Array:
    """``starts`` as an array of ``xp``: evenly spaced ones (the usual case: equal blocks at
    a stride) made where the array lives (on a GPU, no host-to-device copy: one inside a
    step would keep a captured CUDA graph from replaying it)."""
    if len(starts) > 1:
        stride = starts[1] - starts[0]
        if stride and all(b - a == stride for a, b in itertools.pairwise(starts)):
            return xp.arange(starts[0], starts[0] + stride * len(starts), stride)
    return xp.asarray(starts)


@implement("batch_item", CPU)
def batch_item(stacked: Array, i: int) -> Array:
    """Item ``i`` of a group (a view; ``[i, ...]`` keeps a 0-d item an array)."""
    return stacked[i, ...]


@implement("batch_sum", CPU)
def batch_sum(stacked: Array) -> Array:
    """The sum of a group's items."""
    return asarray_like(stacked.sum(axis=0), stacked)


implement("batch_matmul", CPU)(matmul)  # per item a_i @ b_i: numpy's matmul broadcasts


@implement("batch_dot_shared_left", CPU)
def batch_dot_shared_left(w: Array, b: Array) -> Array:
    """Per item ``dot(w, b_i)`` with one shared ``w``."""
    if b.ndim == 2:
        return b @ w.T if w.ndim == 2 else b @ w
    return np.matmul(w, b)


@implement("batch_dot_sum", CPU)
def batch_dot_sum(a: Array, b: Array) -> Array:
    """``sum_i a_i @ b_i`` as one contraction (per-sample outer products summed: ``X^T G``):
    ``a`` (n, *P, k) and ``b`` (n, k, *Q) as one (P, n·k) by (n·k, Q) product, reshaped
    views where the memory allows (``np.tensordot``'s own reshapes, without its Python)."""
    n, k = a.shape[0], a.shape[-1]
    left, right = a.shape[1:-1], b.shape[2:]
    rows = a.transpose(*range(1, a.ndim - 1), 0, a.ndim - 1).reshape(math.prod(left), n * k)
    product = np.matmul(rows, b.reshape(n * k, math.prod(right)))
    return product.reshape(*left, *right)


@implement("batch_nll_loss", CPU)
def batch_nll_loss(truth: Array, pred: Array) -> Array:
    """Per item ``-sum(t ln p) / sum(t)`` (0 where t is 0, even where p is 0): the unmasked
    product first, as ``nll_loss`` (3 passes instead of 5); where a sum is not finite (a zero
    probability, perhaps where t is 0) every item takes the masked form, which equals the
    unmasked one wherever that is finite."""
    axes = tuple(range(1, pred.ndim))
    terms = np.log(pred)
    terms *= truth
    sums = np.add.reduce(terms, axis=axes)
    if not np.isfinite(sums).all():
        sums = np.add.reduce(t_log_p(truth, pred), axis=axes)
    return np.asarray(-sums / np.add.reduce(truth, axis=axes), dtype=pred.dtype)


@implement("batch_softmax_nll_grad", CPU)
def batch_softmax_nll_grad(g: Array, t: Array, y: Array, k: int) -> Array:
    """Per item ``softmax_nll_grad(g, t_i, y_i, k)``: ``g / S_i * (y_i T_i - t_i)``."""
    group = np.add.reduce(t, axis=tuple(range(y.ndim - k, y.ndim)), keepdims=True)
    # an item that is one softmax group (its other dims of size 1) totals its group's sum
    one_group = all(n == 1 for n in y.shape[1 : y.ndim - k])
    total = group if one_group else np.add.reduce(t, axis=tuple(range(1, y.ndim)), keepdims=True)
    out = np.multiply(y, group)
    out -= t
    out *= (g / total).astype(y.dtype)
    return out
