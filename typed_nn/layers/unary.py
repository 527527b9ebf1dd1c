"""``UnaryLayer``: one element-wise op from ``LayerInput`` to ``LayerOutput`` (MetaNN math layers).

A unary layer is declared by its forward op, its gradient op and what backward needs: the
forward input ``x`` (``sin_grad(g, x)``) or the forward output ``y`` (``sigmoid_grad(g, y)``).
The math, activation and softmax layers are subclasses that set only these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from ..data.tensor import AnyTensor, TensorLike
from .declared import Decl
from .keys import LayerInput, LayerOutput
from .protocol import Layer
from .same_type_feeds import SameTypeFeeds

__all__ = ["UnaryLayer"]

UnaryOp = Callable[[AnyTensor], AnyTensor]
GradOp = Callable[[AnyTensor, AnyTensor], AnyTensor]


class UnaryLayer(SameTypeFeeds, Layer[LayerInput, LayerOutput, Decl]):
    """``y = op(x)``; backward ``grad_op(g, x)`` or ``grad_op(g, y)`` (per ``keeps``)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    stacks: ClassVar[tuple[str, ...]] = ("kept",)
    keeps: ClassVar[Literal["input", "output"]] = "input"

    def op(self, x: AnyTensor, /) -> AnyTensor:
        """The forward op (subclasses set it)."""
        raise NotImplementedError

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        """The gradient op on the output gradient and the kept value."""
        raise NotImplementedError

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        x = inputs[LayerInput]
        y = self.op(x)
        self.stack("kept").push(y if self.keeps == "output" else x)
        return {LayerOutput: y}

    def backward(self, grad: AnyTensor) -> dict[type, AnyTensor | None]:
        kept = self.stack("kept").pop()
        assert isinstance(kept, TensorLike)
        return {LayerInput: self.grad_op(grad, kept)}
