"""Node result caches and the epoch that invalidates them.

A computed node keeps its result (interior values as bare arrays, wrapped into a tensor the
first time they are read: most are never read); ``evaluate(..., out=)`` / ``assign`` write into existing
memory, so they bump the epoch and every cached result computed before is recomputed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.tensor import Tensor
from ..ops.node import Operation
from . import sanitize
from .options import options

__all__ = [
    "cached",
    "epoch",
    "invalidate_caches",
    "overwrite",
    "result_tensor",
    "store",
]


class _State:
    epoch = 0


def epoch() -> int:
    """The current cache epoch."""
    return _State.epoch


def invalidate_caches() -> None:
    """Forget every cached node result (a tensor was written in place)."""
    _State.epoch += 1
    if options.sanitize:
        sanitize.forget()


def overwrite(tensor: Tensor[Any, Any, Any], values: Any) -> None:
    """Write ``values`` into ``tensor``'s memory outside an evaluation (a loader, an
    optimizer's count or learning rate, a layer's state): results cached before were computed
    from the old values, so they are forgotten, as ``assign`` forgets them."""
    tensor.array[...] = values
    invalidate_caches()


def cached(node: Operation[Any, Any, Any]) -> Tensor[Any, Any, Any] | None:
    """The node's cached result, if still valid."""
    result = node._result
    if result is None or node._epoch != _State.epoch:
        return None
    if type(result) is not Tensor:  # kept as a bare array until someone asks
        result = node._result = result_tensor(result, node._elem, node._device)
    wrapped: Tensor[Any, Any, Any] = result
    return wrapped


def result_tensor(array: Any, elem: Any, device: Any) -> Tensor[Any, Any, Any]:
    """A computed value as a tensor handed out by evaluation: over a read-only view, since
    the memory is also the node's cached value, and a write through the tensor (or its
    ``numpy()``) would silently change every later evaluation that reuses it. (cupy arrays
    have no read-only flag: device values are handed out as they are.)"""
    if type(array) is np.ndarray and array.flags.writeable:
        array = array.view()
        array.setflags(write=False)  # cheaper than through .flags
    elif isinstance(array, np.generic):
        array = np.asarray(array)
        array.flags.writeable = False
    return Tensor._wrap(array, elem, device)


def store(node: Operation[Any, Any, Any], result: Any) -> None:
    """Cache ``result`` (a tensor, or a backend array wrapped when first read) on ``node``
    for this epoch."""
    node._result = result
    node._epoch = _State.epoch
    if options.sanitize:
        sanitize.remember(node, result, _State.epoch)
