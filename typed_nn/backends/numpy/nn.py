"""numpy implementations of softmax, log_softmax, nll_loss and their gradients.

``k`` is the number of trailing dims normalised together; a group's statistics are reduced
with ``keepdims`` so they broadcast back over the group.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...devices import asarray_like
from ...ops.declare import implement
from ...tags import CPU

Array = Any
_sum = np.add.reduce
"""What ``ndarray.sum`` calls, without its Python wrapper (same results; cupy takes it too,
while its ``maximum`` has no ``reduce``)."""


def _axes(x: Array, k: int) -> tuple[int, ...]:
    return tuple(range(x.ndim - k, x.ndim))


@implement("softmax", CPU)
def softmax(x: Array, k: int) -> Array:
    axes = _axes(x, k)
    r = np.subtract(x, x.max(axis=axes, keepdims=True))
    np.exp(r, out=r)
    r /= _sum(r, axis=axes, keepdims=True)
    return r


@implement("log_softmax", CPU)
def log_softmax(x: Array, k: int) -> Array:
    axes = _axes(x, k)
    r = np.subtract(x, x.max(axis=axes, keepdims=True))
    r -= np.log(np.exp(r).sum(axis=axes, keepdims=True))
    return r


@implement("softmax_grad", CPU)
def softmax_grad(g: Array, y: Array, k: int) -> Array:
    r = np.multiply(g, y)
    s = _sum(r, axis=_axes(y, k), keepdims=True)
    np.subtract(g, s, out=r)
    r *= y
    return r


@implement("log_softmax_grad", CPU)
def log_softmax_grad(g: Array, y: Array, k: int) -> Array:
    r = np.exp(y)
    r *= g.sum(axis=_axes(y, k), keepdims=True)
    np.subtract(g, r, out=r)
    return r


def _t_log_p(truth: Array, pred: Array) -> Array:
    """truth * ln(pred), with 0 wherever truth is 0 (even where pred is 0)."""
    r = np.zeros(np.broadcast_shapes(truth.shape, pred.shape), pred.dtype)
    nonzero = truth != 0
    np.log(pred, out=r, where=nonzero)
    r *= truth
    return r


@implement("nll_loss", CPU)
def nll_loss(truth: Array, pred: Array) -> Array:
    # truth * ln(pred) unmasked first (3 passes instead of 5): where it is finite every term
    # with truth 0 is a zero, as the masked product has, so the sums are equal. A NaN or inf
    # (a zero probability, perhaps where truth is 0) takes the masked form.
    total = None
    if truth.shape == pred.shape:
        terms = np.log(pred)
        terms *= truth
        total = terms.sum()
    if total is None or not math.isfinite(total):
        total = _t_log_p(truth, pred).sum()
    return asarray_like(-total / truth.sum(), pred, pred.dtype)


@implement("nll_loss_grad", CPU)
def nll_loss_grad(g: Array, truth: Array, pred: Array) -> Array:
    r = np.zeros(pred.shape, pred.dtype)
    np.divide(truth, pred, out=r, where=truth != 0)
    r *= -g / truth.sum()
    return r
