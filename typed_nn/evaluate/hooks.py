"""What the layers above the evaluator plug into it.

``node_checks``: checks the executor runs on every computed node (empty unless debug mode adds
some). A check receives the node and its result; it raises to stop the evaluation (debug
mode's NaN / Inf check raises NumericError naming the op and the line that built the node).
When the list is empty the executor pays nothing for it.

``region_compilers``: a backend's compiler of a fused element-wise region into one kernel, by
device (the cupy backend registers one for the GPU when it registers its implementations).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..data.tensor import Tensor
from ..ops.node import Operation
from ..tags import DeviceTag

__all__ = ["NodeCheck", "RegionCompiler", "node_checks", "region_compilers"]

NodeCheck = Callable[[Operation[Any, Any, Any], Tensor[Any, Any, Any]], None]

node_checks: list[NodeCheck] = []
"""Run in order after each node is computed; the evaluator does not fuse nodes while any is set."""

RegionCompiler = Callable[[Any, list[int]], tuple[Any, list[Any]] | None]
"""``compile(graph, members) -> (kernel, operand refs)``, or None where some member has no
kernel form (its nodes then run one by one)."""

region_compilers: dict[type[DeviceTag], RegionCompiler] = {}
