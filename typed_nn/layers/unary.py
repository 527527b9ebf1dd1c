"""``UnaryLayer``: one element-wise op from ``LayerInput`` to ``LayerOutput`` (MetaNN math layers).

A unary layer is declared by its forward op; its backward is the op's vjp (each op's gradient
lives on its ``OpDecl``). The math, activation and softmax layers are subclasses that set only
the op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from ..data.tensor import AnyTensor
from .declared import Decl
from .keys import LayerInput, LayerOutput
from .protocol import Layer
from .same_type_feeds import SameTypeFeeds

__all__ = ["UnaryLayer"]

UnaryOp = Callable[[AnyTensor], AnyTensor]


class UnaryLayer(SameTypeFeeds, Layer[LayerInput, LayerOutput, Decl]):
    """``y = op(x)``; backward the op's vjp."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)

    def op(self, x: AnyTensor, /) -> AnyTensor:
        """The forward op (subclasses set it)."""
        raise NotImplementedError

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        return {LayerOutput: self.op(inputs[LayerInput])}
