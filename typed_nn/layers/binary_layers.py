"""Add, Subtract and Multiply layers: ``LeftOperand``, ``RightOperand`` -> ``LayerOutput``.

Either operand may be declared a number type (``int`` / ``float``): it is converted on entry
and gets no gradient. Operands of different ranks broadcast (MetaNN: the lower rank matches
the trailing dims); their gradients are summed back to the declared rank (MetaNN Collapse).
numpy's expansion of size-1 dims, which the ops accept, is a ShapeError here: MetaNN's layers
broadcast by rank only. Each backward is the vjp of the forward.
"""

from __future__ import annotations

from typing import Any, ClassVar, overload

from ..data.tensor import AnyTensor, TensorLike
from ..ops import arithmetic
from ..tags import D, Dv, E
from .declared import Decl
from .keys import LayerOutput, LeftOperand, RightOperand
from .protocol import Layer
from .stacks import require_trailing
from .var_type_dict import VarValues

__all__ = ["AddLayer", "BinaryLayer", "MultiplyLayer", "SubtractLayer"]

Ports = LeftOperand | RightOperand


class BinaryLayer(Layer[Ports, LayerOutput, Decl]):
    """Common ports and typed entry points of the element-wise binary layers."""

    input_ports: ClassVar[tuple[type, ...]] = (LeftOperand, RightOperand)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)

    def _checked(self, inputs: dict[type, Any], out: AnyTensor) -> dict[type, AnyTensor]:
        require_trailing(self.name, inputs, out)
        return {LayerOutput: out}

    # The element-wise typing rule, written once for the three binary layers (the base Layer
    # types no feed_forward): operands of one type give it, mixed ranks or a number any rank.
    @overload
    def feed_forward(
        self, inputs: VarValues[Ports, TensorLike[E, Dv, D]]
    ) -> VarValues[LayerOutput, TensorLike[E, Dv, D]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[Ports, TensorLike[E, Dv, Any] | float]
    ) -> VarValues[LayerOutput, TensorLike[E, Dv, Any]]: ...
    def feed_forward(self, inputs: VarValues[Ports, object]) -> VarValues[LayerOutput, Any]:
        """``LayerOutput`` = the op on both operands (lazy). Operands of one tagged type give
        that type statically; mixed ranks or a number operand give ``TensorLike[E, Dv, Any]``
        (the rank is checked at run time; the element and device must still agree)."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[E, Dv, D]]
    ) -> VarValues[Ports, TensorLike[E, Dv, Any]]:
        """Gradients of both operands (summed to their declared ranks; none for numbers):
        the output gradient's element and device, each operand's rank."""
        return self._feed_backward(grads)


class AddLayer(BinaryLayer[Decl]):
    """``a + b``; backward ``g`` to both operands."""

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        return self._checked(inputs, arithmetic.add(inputs[LeftOperand], inputs[RightOperand]))


class SubtractLayer(BinaryLayer[Decl]):
    """``a - b``; backward ``g`` to ``a`` and ``-g`` to ``b`` (MetaNN ``SubstractLayer``)."""

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        return self._checked(inputs, arithmetic.sub(inputs[LeftOperand], inputs[RightOperand]))


class MultiplyLayer(BinaryLayer[Decl]):
    """``a * b``; backward ``g * b`` to ``a`` and ``g * a`` to ``b``."""

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        a, b = inputs[LeftOperand], inputs[RightOperand]
        return self._checked(inputs, arithmetic.mul(a, b))
