"""Node result caches and the epoch that invalidates them.

A computed node keeps its result; ``evaluate(..., out=)`` / ``assign`` write into existing
memory, so they bump the epoch and every cached result computed before is recomputed.
"""

from __future__ import annotations

from typing import Any

from ..data.tensor import Tensor
from ..ops.node import Operation

__all__ = ["cached", "epoch", "invalidate_caches", "store"]


class _State:
    epoch = 0


def epoch() -> int:
    """The current cache epoch."""
    return _State.epoch


def invalidate_caches() -> None:
    """Forget every cached node result (a tensor was written in place)."""
    _State.epoch += 1


def cached(node: Operation[Any, Any, Any]) -> Tensor[Any, Any, Any] | None:
    """The node's cached result, if still valid."""
    result: Tensor[Any, Any, Any] | None = node._result
    return result if result is not None and node._epoch == _State.epoch else None


def store(node: Operation[Any, Any, Any], result: Tensor[Any, Any, Any]) -> None:
    """Cache ``result`` on ``node`` for this epoch."""
    node._result = result
    node._epoch = _State.epoch
