"""GPU implementations of the losses: ``nll_loss``, its gradient and its batched form.

The numpy versions skip ``ln p`` where ``t`` is 0 with the ufunc ``where=`` argument, which
cupy's ufuncs do not take; here a select drops those terms (``0 * ln 0`` would be NaN).
"""

from __future__ import annotations

from typing import Any

from ...devices import module_of

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
