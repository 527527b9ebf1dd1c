"""numpy kernels for the group nodes the evaluator's batching makes (``evaluate/batch.py``).

A group holds ``n`` same-shaped items stacked along a new leading dim.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...devices import asarray_like
from ...ops.declare import implement
from ...tags import CPU

Array = Any


@implement("batch_stack", CPU)
def batch_stack(*items: Array) -> Array:
    """Gather same-shaped values into one ``(n, *item)`` array."""
    return np.stack(items)


@implement("batch_item", CPU)
def batch_item(stacked: Array, i: int) -> Array:
    """Item ``i`` of a group (a view; ``[i, ...]`` keeps a 0-d item an array)."""
    return stacked[i, ...]


@implement("batch_sum", CPU)
def batch_sum(stacked: Array) -> Array:
    """The sum of a group's items."""
    return asarray_like(stacked.sum(axis=0), stacked)


@implement("batch_matmul", CPU)
def batch_matmul(a: Array, b: Array) -> Array:
    """Per item ``a_i @ b_i`` (matrices)."""
    return np.matmul(a, b)


@implement("batch_dot_shared_left", CPU)
def batch_dot_shared_left(w: Array, b: Array) -> Array:
    """Per item ``dot(w, b_i)`` with one shared ``w``."""
    if b.ndim == 2:
        return b @ w.T if w.ndim == 2 else b @ w
    return np.matmul(w, b)


@implement("batch_dot_sum", CPU)
def batch_dot_sum(a: Array, b: Array) -> Array:
    """``sum_i a_i @ b_i`` as one contraction (per-sample outer products summed: ``X^T G``)."""
    return np.tensordot(a, b, axes=([0, a.ndim - 1], [0, 1]))


@implement("batch_nll_loss", CPU)
def batch_nll_loss(truth: Array, pred: Array) -> Array:
    """Per item ``-sum(t ln p) / sum(t)`` (0 where t is 0, even where p is 0)."""
    r = np.zeros(pred.shape, pred.dtype)
    np.log(pred, out=r, where=truth != 0)
    r *= truth
    axes = tuple(range(1, pred.ndim))
    return np.asarray(-r.sum(axis=axes) / truth.sum(axis=axes), dtype=pred.dtype)


@implement("batch_softmax_nll_grad", CPU)
def batch_softmax_nll_grad(g: Array, t: Array, y: Array, k: int) -> Array:
    """Per item ``softmax_nll_grad(g, t_i, y_i, k)``: ``g / S_i * (y_i T_i - t_i)``."""
    group = t.sum(axis=tuple(range(y.ndim - k, y.ndim)), keepdims=True)
    total = t.sum(axis=tuple(range(1, y.ndim)), keepdims=True)
    out = np.multiply(y, group)
    out -= t
    out *= (g / total).astype(y.dtype)
    return out
