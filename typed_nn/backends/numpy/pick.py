"""numpy implementations of ``label_pick`` (a gather along the last dim) and its gradient
(a scatter into zeros)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ...devices import module_of
from ...errors import IndexRangeError, message
from ...ops.declare import implement
from ...tags import CPU

Array = Any


_UNSIGNED = {size: np.dtype(f"u{size}") for size in (1, 2, 4, 8)}
_largest = np.maximum.reduce  # without ndarray.max's Python wrapper (half of a 32-label check)


def check_label_range(labels: Array, classes: int) -> None:
    """Every label in ``0 .. classes - 1``, else an error naming the first offending one."""
    # one reduction, not a min and a max: a negative label read unsigned is past any class
    if (
        labels.size
        and int(_largest(labels.view(_UNSIGNED[labels.dtype.itemsize]), None)) >= classes
    ):
        bad = (labels < 0) | (labels >= classes)
        position = tuple(int(i) for i in np.argwhere(bad)[0])
        value = int(labels[position])
        raise IndexRangeError(
            message(
                f"label out of range: {value} at position {position} is not a class in "
                f"0 .. {classes - 1}.",
                [
                    (
                        "labels",
                        f"{labels.size} values, min {int(labels.min())}, max {int(labels.max())}",
                    ),
                    ("classes", f"{classes} (the last dim of the logits)"),
                ],
                hint="labels are class numbers 0 .. C - 1; mark padding with ignore_index "
                "(cross_entropy(..., ignore_index=-100)) or give the logits more classes.",
            )
        )


@implement("label_pick", CPU)
def label_pick(x: Array, labels: Array) -> Array:
    check_label_range(labels, x.shape[-1])
    return x.reshape(-1)[_flat_positions(labels, x.shape[-1])].reshape(labels.shape)


@implement("label_pick_grad", CPU)
def label_pick_grad(g: Array, labels: Array, classes: int) -> Array:
    check_label_range(labels, classes)
    out = module_of(g).zeros((*labels.shape, classes), g.dtype)
    out.reshape(-1)[_flat_positions(labels, classes)] = per_label(g, labels)
    return out


@implement("log_softmax_pick_grad", CPU)
def log_softmax_pick_grad(s: Array, labels: Array, y: Array) -> Array:
    """cross_entropy's backward in one pass (``evaluate/rewrite.py``): ``s`` at each label
    minus ``s exp(y)`` everywhere, ``y`` the log-probabilities; the same operations, in the
    same order per element, as ``log_softmax_grad(label_pick_grad(s, labels), y)``."""
    check_label_range(labels, y.shape[-1])
    return pick_grad_pass(per_label(s, labels), labels, y)


@implement("softmax_pick_grad", CPU)
def softmax_pick_grad(s: Array, labels: Array, p: Array) -> Array:
    """``log_softmax_pick_grad`` from the probabilities ``p = softmax(x)`` rather than the
    log-probabilities (``evaluate/rewrite.py``): ``s (onehot(labels) - p)``."""
    check_label_range(labels, p.shape[-1])
    return pick_grad_pass(per_label(s, labels), labels, p, probabilities=True)


def pick_grad_pass(scale: Array, labels: Array, y: Array, probabilities: bool = False) -> Array:
    """``scale (onehot(labels) - exp(y))`` along the last dim (``scale``: one number, or one
    per label flattened, see :func:`per_label`): the one computation of both devices'
    ``log_softmax_pick_grad`` (the GPU's checks its labels without a host read).
    ``probabilities``: ``y`` holds ``exp(y)`` already (a softmax)."""
    xp = module_of(y)
    flat = y.reshape(-1, y.shape[-1])
    # -(s e) as (-s) e: the same bits (negation is exact), one pass fewer; into a row-major
    # array (a ufunc's own result follows its operand's layout: a transposed y's would not
    # flatten to a view, and the scatter below would be lost in a copy)
    minus = -(scale[:, None] if scale.ndim else scale)
    r = xp.empty(flat.shape, y.dtype)
    if probabilities:
        xp.multiply(flat, minus, out=r)
    else:
        xp.exp(flat, out=r)
        r *= minus
    r.reshape(-1)[_flat_positions(labels, r.shape[-1])] += scale  # s - s e, as unfused
    return r.reshape(y.shape)


def per_label(g: Array, labels: Array) -> Array:
    """``g`` (broadcastable to ``labels``) as one value per label, flattened, or as the one
    number it is (a mean's gradient: broadcasting it would cost ~25 us a step)."""
    if g.ndim == 0:
        return g
    if g.shape != labels.shape:
        g = module_of(g).broadcast_to(g, labels.shape)
    return g.reshape(-1)


def _flat_positions(labels: Array, classes: int) -> Array:
    """Each label's position in the data flattened (row-major, ``classes`` per row): a
    one-dim fancy index, several times cheaper than ``take_along_axis``'s and half the cost
    of a (row, label) pair of index arrays."""
    which = labels.reshape(-1)
    return _row_starts(module_of(labels), which.size, classes) + which


@functools.lru_cache(maxsize=64)
def _row_starts(xp: Any, rows: int, classes: int) -> Array:
    """``0, classes, 2 classes, ...``: the same few (batch size, classes) pairs at every step
    of a training loop, built once (read only: every use adds the labels into a new array)."""
    starts = xp.arange(0, rows * classes, classes)
    if xp is np:
        starts.flags.writeable = False
    return starts
