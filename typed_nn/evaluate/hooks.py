"""What the layers above the evaluator plug into it.

``node_checks``: checks the executor runs on every computed node (empty unless debug mode adds
some). A check receives the node and its result; it raises to stop the evaluation (debug
mode's NaN / Inf check raises NumericError naming the op and the line that built the node).
When the list is empty the executor pays nothing for it.

What the evaluator asks of a device (where buffers come from, how fused regions run, a
backend's region compiler) is its :class:`typed_nn.devices.Device`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..data.tensor import Tensor
from ..ops.node import Operation

__all__ = ["NodeCheck", "node_checks"]

NodeCheck = Callable[[Operation[Any, Any, Any], Tensor[Any, Any, Any]], None]

node_checks: list[NodeCheck] = []
"""Run in order after each node is computed; the evaluator does not fuse nodes while any is set."""
