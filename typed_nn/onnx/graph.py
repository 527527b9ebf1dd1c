"""``GraphBuilder``: the ONNX graph under construction (nodes, initializers, unique names).

The per-op rules (``rules.py``) call it with plain Python values — op types, value names,
attributes, numpy arrays — so they need no import of onnx themselves; this module is the one
place that turns them into onnx protobufs. It is imported only by ``export``, after checking
that the ``onnx`` package is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper

__all__ = ["GraphBuilder"]


class GraphBuilder:
    """Nodes and initializers of one graph, in topological order, with unique value names."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        """The default domain's opset version the graph targets (some rules depend on it)."""
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._used: set[str] = set()
        self._constants: dict[tuple[str, tuple[int, ...], bytes], str] = {}

    def reserve(self, name: str) -> None:
        """Keep ``name`` (an input or output the user named) from being generated."""
        self._used.add(name)

    def is_free(self, name: str) -> bool:
        """Whether ``name`` is neither reserved nor generated yet."""
        return name not in self._used

    def fresh(self, hint: str) -> str:
        """A value name not used yet: ``hint`` itself, else ``hint_1``, ``hint_2``..."""
        name, n = hint, 0
        while name in self._used:
            n += 1
            name = f"{hint}_{n}"
        self._used.add(name)
        return name

    def add(self, op_type: str, inputs: Sequence[str], **attributes: Any) -> str:
        """Append an ``op_type`` node; returns the name of its (first) output."""
        out = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attributes))
        return out

    def initializer(self, hint: str, array: npt.NDArray[Any]) -> str:
        """A stored tensor (a weight, a constant), named after ``hint``."""
        name = self.fresh(hint)
        # np.require keeps a 0-d array 0-d (np.ascontiguousarray makes it 1-d)
        self.initializers.append(numpy_helper.from_array(np.require(array, requirements="C"), name))
        return name

    def constant(self, value: Any, dtype: np.dtype[Any]) -> str:
        """A constant of ``dtype`` (a number, or an array), stored once per distinct value."""
        array = np.asarray(value, dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        name = self._constants.get(key)
        if name is None:
            name = self._constants[key] = self.initializer("const", array)
        return name

    def int64s(self, values: Sequence[int]) -> str:
        """A 1-d int64 constant: a shape, axes, pads or repeats input."""
        return self.constant(list(values), np.dtype(np.int64))

    def cast(self, x: str, dtype: np.dtype[Any]) -> str:
        """``x`` converted to ``dtype`` (numpy's, e.g. ``np.dtype(bool)``)."""
        return self.add("Cast", [x], to=tensor_type(dtype))


def tensor_type(dtype: np.dtype[Any]) -> int:
    """ONNX's element type code of a numpy dtype."""
    code: int = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    return code
