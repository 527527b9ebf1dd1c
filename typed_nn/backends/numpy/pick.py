"""numpy implementations of ``label_pick`` (a gather along the last dim) and its gradient
(a scatter into zeros)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...devices import module_of
from ...errors import IndexRangeError, message
from ...ops.declare import implement
from ...tags import CPU

Array = Any


def check_label_range(labels: Array, classes: int) -> None:
    """Every label in ``0 .. classes - 1``, else an error naming the first offending one."""
    if labels.size and (int(labels.min()) < 0 or int(labels.max()) >= classes):
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
    rows, which = _positions(labels)
    return x.reshape(-1, x.shape[-1])[rows, which].reshape(labels.shape)


@implement("label_pick_grad", CPU)
def label_pick_grad(g: Array, labels: Array, classes: int) -> Array:
    check_label_range(labels, classes)
    out = module_of(g).zeros((*labels.shape, classes), g.dtype)
    rows, which = _positions(labels)
    out.reshape(-1, classes)[rows, which] = per_label(g, labels)
    return out


@implement("log_softmax_pick_grad", CPU)
def log_softmax_pick_grad(s: Array, labels: Array, y: Array) -> Array:
    """cross_entropy's backward in one pass (``evaluate/rewrite.py``): ``s`` at each label
    minus ``s exp(y)`` everywhere, ``y`` the log-probabilities; the same operations, in the
    same order per element, as ``log_softmax_grad(label_pick_grad(s, labels), y)``."""
    check_label_range(labels, y.shape[-1])
    return pick_grad_pass(per_label(s, labels), labels, y)


def pick_grad_pass(scale: Array, labels: Array, y: Array) -> Array:
    """``scale (onehot(labels) - exp(y))`` along the last dim (``scale``: one number, or one
    per label flattened, see :func:`per_label`): the one computation of both devices'
    ``log_softmax_pick_grad`` (the GPU's checks its labels without a host read)."""
    xp = module_of(y)
    r = xp.exp(y)
    flat = r.reshape(-1, r.shape[-1])  # a view: r is new and contiguous
    flat *= scale[:, None] if scale.ndim else scale
    xp.negative(r, out=r)
    rows, which = _positions(labels)
    flat[rows, which] += scale  # s - s e, as unfused
    return r


def per_label(g: Array, labels: Array) -> Array:
    """``g`` (broadcastable to ``labels``) as one value per label, flattened, or as the one
    number it is (a mean's gradient: broadcasting it would cost ~25 us a step)."""
    if g.ndim == 0:
        return g
    if g.shape != labels.shape:
        g = module_of(g).broadcast_to(g, labels.shape)
    return g.reshape(-1)


def _positions(labels: Array) -> tuple[Array, Array]:
    """(row, label) index arrays of the labels over the rows of the data flattened to
    (rows, classes): a fancy index, several times cheaper than ``take_along_axis``'s."""
    which = labels.reshape(-1)
    return module_of(labels).arange(which.size), which
