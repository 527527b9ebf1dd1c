"""GPU implementations of the losses: ``nll_loss``, its gradient and its batched form, and
``label_pick`` and its gradient, and of ``embedding`` and its gradient (indices checked without
waiting for the device: out of range gives NaN).

The numpy versions skip ``ln p`` where ``t`` is 0 with the ufunc ``where=`` argument, which
cupy's ufuncs do not take; here a select drops those terms (``0 * ln 0`` would be NaN).
"""

from __future__ import annotations

from typing import Any

from ...devices import module_of
from ..numpy.pick import pick_grad_pass

Array = Any


def _t_log_p(truth: Array, pred: Array) -> Array:
    """truth * ln(pred), with 0 wherever truth is 0 (even where pred is 0)."""
    xp = module_of(pred)
    return xp.where(truth != 0, truth * xp.log(pred), pred.dtype.type(0))


def nll_loss(truth: Array, pred: Array) -> Array:
    total = _t_log_p(truth, pred).sum()
    return module_of(pred).asarray(-total / truth.sum(), dtype=pred.dtype)


def nll_loss_grad(g: Array, truth: Array, pred: Array) -> Array:
    xp = module_of(pred)
    r = xp.where(truth != 0, truth / pred, pred.dtype.type(0)).astype(pred.dtype, copy=False)
    r *= -g / truth.sum()
    return r


def batch_nll_loss(truth: Array, pred: Array) -> Array:
    """Per item ``-sum(t ln p) / sum(t)``."""
    axes = tuple(range(1, pred.ndim))
    per_item = -_t_log_p(truth, pred).sum(axis=axes) / truth.sum(axis=axes)
    return module_of(pred).asarray(per_item, dtype=pred.dtype)


# label_pick on the GPU: the range check of the numpy kernel would wait for the device (a
# host read of the labels' minimum and maximum); here an out-of-range label reads a clipped
# position and its value becomes NaN, so the loss is NaN (debug mode names the node).


def _in_range(labels: Array, classes: int) -> Array:
    return (labels >= 0) & (labels < classes)


def label_pick(x: Array, labels: Array) -> Array:
    xp = module_of(x)
    classes = x.shape[-1]
    clipped = xp.clip(labels, 0, classes - 1)[..., None]
    picked = xp.take_along_axis(x, clipped, axis=-1)[..., 0]
    return xp.where(_in_range(labels, classes), picked, x.dtype.type("nan"))


def label_pick_grad(g: Array, labels: Array, classes: int) -> Array:
    xp = module_of(g)
    out = xp.zeros((*labels.shape, classes), g.dtype)
    values = xp.where(_in_range(labels, classes), g, g.dtype.type("nan"))
    clipped = xp.clip(labels, 0, classes - 1)[..., None]
    xp.put_along_axis(out, clipped, values[..., None], axis=-1)
    return out


def log_softmax_pick_grad(s: Array, labels: Array, y: Array) -> Array:
    """cross_entropy's backward in one pass (the numpy backend's ``pick_grad_pass``); an
    out-of-range label's row becomes NaN, as ``label_pick_grad``'s does."""
    xp = module_of(y)
    classes = y.shape[-1]
    nan = y.dtype.type("nan")
    scale = xp.where(_in_range(labels, classes), s, nan).reshape(-1)
    return pick_grad_pass(scale, xp.clip(labels, 0, classes - 1), y)


def embedding(w: Array, idx: Array) -> Array:
    """The rows of ``w`` at ``idx``; an index outside ``0 .. rows - 1`` gives a row of NaN
    (checked on the device, as labels are: the numpy form's check would wait for it)."""
    xp = module_of(w)
    rows = w.shape[0]
    picked = xp.take(w, xp.clip(idx, 0, rows - 1), axis=0)
    return xp.where(_in_range(idx, rows)[..., None], picked, w.dtype.type("nan"))


def embedding_grad(g: Array, idx: Array, num: int) -> Array:
    """The scatter-add of ``g``'s rows into ``num`` rows; an out-of-range index adds NaN to the
    nearest row (0 or the last: the weight's gradient shows it), without waiting for the
    device."""
    xp = module_of(g)
    out = xp.zeros((num, g.shape[-1]), g.dtype)
    values = xp.where(_in_range(idx, num)[..., None], g, g.dtype.type("nan"))
    xp.add.at(out, xp.clip(idx, 0, num - 1).reshape(-1), values.reshape(-1, g.shape[-1]))
    return out
