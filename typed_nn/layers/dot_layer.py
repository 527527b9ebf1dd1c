"""``DotLayer``: contract the last ``k`` dims of ``LeftOperand`` with the first ``k`` of
``RightOperand`` (``PModifyDimNumIs(k)``, default 1). MetaNN ``tensor/dot_layer.h``.

The backward is the vjp of the forward; as METANN.md §3.2 writes it, with ``g`` the output
gradient::

    dA = dot(g, permute(B, rotate its first k dims to the end), rank B - k)
    dB = dot(permute(A, rotate its last k dims to the front), g, rank A - k)

For matrices this is ``dA = g Bᵀ`` and ``dB = Aᵀ g``. A contraction of 0 dims is the outer
product.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .. import ops
from ..data.tensor import AnyTensor, TensorLike
from ..policies import PolicyContainer
from ..tags import Dv, E
from .declared import Decl
from .dims import dim_count
from .keys import LayerOutput, LeftOperand, RightOperand
from .protocol import Layer
from .var_type_dict import VarValues

__all__ = ["DotLayer", "contract"]

Ports = LeftOperand | RightOperand


def contract(a: AnyTensor, b: AnyTensor, k: int) -> AnyTensor:
    """``dot(a, b, k)``, where ``k = 0`` is the outer product."""
    if k > 0:
        return ops.dot(a, b, k)  # type: ignore[call-overload, no-any-return]  # runtime ranks
    if a.rank == 0 or b.rank == 0:
        return a * b
    column: AnyTensor = ops.reshape(a, (*a.shape, 1))
    row: AnyTensor = ops.reshape(b, (1, *b.shape))
    return ops.dot(column, row, 1)


class DotLayer(Layer[Ports, LayerOutput, Decl]):
    """``dot(a, b, k)``."""

    input_ports: ClassVar[tuple[type, ...]] = (LeftOperand, RightOperand)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    k: ClassVar[int] = 1

    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        super().configure(policies)
        cls.k = dim_count(
            cls.__name__,
            policies,
            needs="dot contracts",
            hint="use PModifyDimNumIs(1) (matrix product) or more.",
        )

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        return {LayerOutput: contract(inputs[LeftOperand], inputs[RightOperand], self.k)}

    # The dot's typing rule: operands share element and device; the rank follows the k policy,
    # which the class's type does not carry.
    def feed_forward(
        self, inputs: VarValues[Ports, TensorLike[E, Dv, Any]]
    ) -> VarValues[LayerOutput, TensorLike[E, Dv, Any]]:
        """``LayerOutput`` = ``dot(a, b, k)``; its rank depends on ``k`` (a policy), so it is
        typed ``TensorLike[E, Dv, Any]`` statically and checked at run time."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[E, Dv, Any]]
    ) -> VarValues[Ports, TensorLike[E, Dv, Any]]:
        """Gradients of both operands (the output gradient's element and device)."""
        return self._feed_backward(grads)
