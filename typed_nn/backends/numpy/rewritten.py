"""numpy kernels for the nodes the evaluator's rewrites make (see ``evaluate/rewrite.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...devices import asarray_like, module_of
from ...ops.declare import implement
from ...tags import CPU

Array = Any


@implement("pick_row", CPU)
def pick_row(m: Array, s: Array, pos: int) -> Array:
    """``dot(BiasVector(len, pos, s), m)`` = ``s * m[pos]``."""
    return asarray_like(np.multiply(m[pos], s), m)


@implement("pick_col", CPU)
def pick_col(m: Array, s: Array, pos: int) -> Array:
    """``dot(m, BiasVector(len, pos, s))`` = ``s * m[..., pos]``."""
    return asarray_like(np.multiply(m[..., pos], s), m)


def group_sums(t: Array, k: int, ones: Callable[..., Array]) -> Array:
    """Sums of ``t`` over its last ``k`` dims, kept as size-1 dims. Over the last dim alone,
    a product with a column of ``ones(shape, dtype)`` (BLAS: 0.6 us for 32 rows of 10, where
    numpy's reduce takes short rows one at a time, 1.0 us); the plain and the specialised
    ``softmax_nll_grad`` both sum this way, so their numbers agree."""
    if k == 1:
        return np.matmul(t, ones((t.shape[-1], 1), t.dtype))
    return np.add.reduce(t, axis=tuple(range(t.ndim - k, t.ndim)), keepdims=True)


@implement("softmax_nll_grad", CPU)
def softmax_nll_grad(g: Array, t: Array, y: Array, k: int) -> Array:
    """The gradient of ``nll_loss(t, softmax(x))`` w.r.t. ``x`` scaled by ``g``, in one pass.

    With S = sum of all t (nll_loss divides by it) and T the sum of t over each softmax group
    (the last ``k`` dims), the chain rule gives ``g / S * (y * T - t)``; for one group this is
    MetaNN's ``g * (y - t / S)`` (METANN.md §2.3: the original scaled it by S, a bug).
    """
    group = group_sums(t, k, module_of(t).ones)
    out = np.multiply(y, group)
    out -= t
    out *= (g / np.add.reduce(group, axis=None)).astype(y.dtype)
    return out
