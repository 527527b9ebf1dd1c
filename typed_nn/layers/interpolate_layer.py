"""``InterpolateLayer``: ``w1 * lam + w2 * (1 - lam)`` (MetaNN ``others/interpolate_layer.h``).

Ports ``InterpolateLayerWeight1``, ``InterpolateLayerWeight2``, ``InterpolateLayerLambda`` ->
``LayerOutput``; all three broadcast. Backward (the forward's vjp): ``g*lam``, ``g*(1-lam)``
and ``g*(w1-w2)``, each summed back to its input's declared rank.
"""

from __future__ import annotations

from typing import Any, ClassVar, overload

from .. import ops
from ..data.tensor import AnyTensor, TensorLike
from ..tags import FE, D, Dv
from .declared import Decl
from .keys import (
    InterpolateLayerLambda,
    InterpolateLayerWeight1,
    InterpolateLayerWeight2,
    LayerOutput,
)
from .protocol import Layer
from .stacks import require_trailing
from .var_type_dict import VarValues

__all__ = ["InterpolateLayer"]

Ports = InterpolateLayerWeight1 | InterpolateLayerWeight2 | InterpolateLayerLambda
W1, W2, LAM = InterpolateLayerWeight1, InterpolateLayerWeight2, InterpolateLayerLambda


class InterpolateLayer(Layer[Ports, LayerOutput, Decl]):
    """``interpolate(w1, w2, lam)``."""

    input_ports: ClassVar[tuple[type, ...]] = (W1, W2, LAM)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        out = ops.interpolate(inputs[W1], inputs[W2], inputs[LAM])
        require_trailing(self.name, inputs, out)
        return {LayerOutput: out}

    # The interpolation's typing rule (as the binary layers': one type, or mixed ranks).
    @overload
    def feed_forward(
        self, inputs: VarValues[Ports, TensorLike[FE, Dv, D]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, D]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[Ports, TensorLike[FE, Dv, Any] | float]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, Any]]: ...
    def feed_forward(self, inputs: VarValues[Ports, object]) -> VarValues[LayerOutput, Any]:
        """``LayerOutput`` = the interpolation (lazy); one tagged input type gives that type,
        mixed ranks or a number ``TensorLike[FE, Dv, Any]`` (element and device still agree)."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, D]]
    ) -> VarValues[Ports, TensorLike[FE, Dv, Any]]:
        """Gradients of the three inputs (summed to their declared ranks)."""
        return self._feed_backward(grads)
