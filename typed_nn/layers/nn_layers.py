"""Neural-network layers (MetaNN ``layers/principal/nn``): ReLU, Softmax and NLLLoss."""

from __future__ import annotations

from typing import Any, ClassVar

from .. import ops
from ..data.tensor import AnyTensor, TensorLike
from ..policies import PolicyContainer
from ..tags import FE, D, Dim0, Dv
from .declared import Decl
from .dims import dim_count
from .keys import LayerInput, LayerOutput, LossLayerWeight
from .protocol import Layer
from .unary import UnaryLayer
from .var_type_dict import VarValues

__all__ = ["NLLLossLayer", "ReLULayer", "SoftmaxLayer"]


class ReLULayer(UnaryLayer[Decl]):
    """``max(x, 0)``; backward ``g`` where ``x > 0``, else 0."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.relu(x)


class SoftmaxLayer(UnaryLayer[Decl]):
    """Softmax over the last ``k`` dims (``PModifyDimNumIs(k)``, default 1); backward
    ``y * (g - sum(g * y))`` per group, from the output ``y``."""

    k: ClassVar[int] = 1

    # As DotLayer's (another base class): the shared part is dim_count; the texts differ.
    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        super().configure(policies)
        cls.k = dim_count(
            cls.__name__,
            policies,
            needs="softmax needs",
            hint="use PModifyDimNumIs(1) (the last dim) or more.",
        )

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.softmax(x, self.k)


class NLLLossLayer(Layer[LayerInput | LossLayerWeight, LayerOutput, Decl]):
    """Negative log-likelihood ``-sum(t ln p) / sum(t)`` of the prediction ``LayerInput``
    against the truth ``LossLayerWeight``; a Scalar. Backward gives a gradient to the
    prediction only."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, LossLayerWeight)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    no_grad_ports: ClassVar[tuple[type, ...]] = (LossLayerWeight,)

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        # MetaNN gives the truth no gradient: the forward says so, and the backward is the
        # vjp of this forward (the evaluator still fuses softmax_grad(nll_loss_grad(...))).
        truth = ops.stop_gradient(inputs[LossLayerWeight])
        return {LayerOutput: ops.nll_loss(truth, inputs[LayerInput])}

    # The loss's typing rule: any float rank in, a Scalar out (no other base says it).
    def feed_forward(
        self, inputs: VarValues[LayerInput | LossLayerWeight, TensorLike[FE, Dv, D]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, Dim0]]:
        """``LayerOutput`` = the loss (a lazy Scalar)."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, Dim0]]
    ) -> VarValues[LayerInput | LossLayerWeight, TensorLike[FE, Dv, Any]]:
        """``LayerInput`` = the prediction's gradient (the loss gradient's element and device;
        the prediction's rank, which the Scalar loss gradient does not carry); nothing for
        ``LossLayerWeight``."""
        return self._feed_backward(grads)
