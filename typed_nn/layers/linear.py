"""Parameter composites: ``BiasLayer``, ``WeightLayer``, ``LinearLayer`` (MetaNN ``composite/``).

All take ``LayerInput`` and give ``LayerOutput``, with the row-vector convention of MetaNN:
an input ``x`` of shape ``(batch, fan_in)`` (or ``(fan_in,)``) gives ``x·W`` of shape
``(batch, fan_out)``; a bias vector of shape ``(fan_out,)`` broadcasts over the batch and its
gradient is summed over it.

Parameters are ``ParamSourceLayer`` sublayers, so their policies are the parameter layer's:
``PUpdate``, ``PInitializerIs(key)``, ``PElemIs`` / ``PDeviceIs``, and ``PParamTypeIs`` (defaults
here: ``tn.Matrix`` for weights, ``tn.Vector`` for biases). Give a policy to one parameter only
with ``SubPolicyContainer("weight", ...)``.

Names (with the layer named ``fc``): BiasLayer ``fc/param`` and ``fc/add``; WeightLayer
``fc/param`` and ``fc/dot`` (MetaNN names the dot sublayer ``fc/add``, a slip fixed here);
LinearLayer ``fc/weight``, ``fc/bias``, ``fc/dot`` and ``fc/add``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..data.tensor import Matrix, Vector
from ..policies import AnyPolicyObject, PParamTypeIs
from ..tags import Dim2
from .binary_layers import AddLayer
from .compose import ComposeKernel, DIn, DOut
from .declared import Decl
from .dot_layer import DotLayer
from .keys import LayerInput, LayerOutput, LeftOperand, RightOperand
from .same_type_feeds import SameTypeFeeds
from .source_layers import ParamSourceLayer, check_sizes
from .topology import (
    ComposeTopology,
    InConnect,
    InternalConnect,
    OutConnect,
    Sublayer,
    param_op_topology,
)

__all__ = ["BiasLayer", "LinearLayer", "WeightLayer"]

_MATRIX: AnyPolicyObject = PParamTypeIs(Matrix)
_VECTOR: AnyPolicyObject = PParamTypeIs(Vector)


class _ParamOperandLayer(ComposeKernel[LayerInput, LayerOutput, DIn, DOut, Decl]):
    """``op(x, p)``, ``p`` the parameter sublayer ``param`` of the shape given at construction:
    ``BiasLayer`` and ``WeightLayer``, which set the op and the parameter's default type."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)

    def __init__(self, name: str, *shape: int) -> None:
        super().__init__(name, self.create_sublayers().set("param", *shape))


def _param_operand(op: str, layer: type[Any]) -> ComposeTopology:
    return param_op_topology(
        op, layer, [("param", ParamSourceLayer, RightOperand)], [(LayerInput, LeftOperand)]
    )


class BiasLayer(SameTypeFeeds, _ParamOperandLayer[Any, Any, Decl]):
    """``x + b``, ``b`` a parameter (default type ``tn.Vector``). ``BiasLayer(name, *shape)``."""

    sublayer_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {"param": (_VECTOR,)}
    topology = _param_operand("add", AddLayer)


class WeightLayer(_ParamOperandLayer[Dim2, Dim2, Decl]):
    """``x·W``, ``W`` a parameter (default type ``tn.Matrix``). ``WeightLayer(name, *shape)``."""

    sublayer_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {"param": (_MATRIX,)}
    topology = _param_operand("dot", DotLayer)


class LinearLayer(ComposeKernel[LayerInput, LayerOutput, Dim2, Dim2, Decl]):
    """``x·W + b``; ``LinearLayer(name, fan_in, fan_out)``: ``W`` is (fan_in, fan_out) and ``b``
    is (fan_out,). MetaNN's constructor takes the two shapes; this one takes the two widths."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    sublayer_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {
        "weight": (_MATRIX,),
        "bias": (_VECTOR,),
    }
    topology = ComposeTopology(
        Sublayer("weight", ParamSourceLayer),
        Sublayer("bias", ParamSourceLayer),
        Sublayer("add", AddLayer),
        Sublayer("dot", DotLayer),
        InConnect(LayerInput, "dot", LeftOperand),
        InternalConnect("weight", LayerOutput, "dot", RightOperand),
        InternalConnect("dot", LayerOutput, "add", LeftOperand),
        InternalConnect("bias", LayerOutput, "add", RightOperand),
        OutConnect("add", LayerOutput, LayerOutput),
    )

    def __init__(self, name: str, fan_in: int, fan_out: int) -> None:
        sizes = {"fan_in": fan_in, "fan_out": fan_out}
        fan_in, fan_out = check_sizes(
            name, sizes, "LinearLayer(name, fan_in, fan_out), e.g. (name, 784, 128)."
        )
        args = self.create_sublayers().set("weight", fan_in, fan_out).set("bias", fan_out)
        super().__init__(name, args)
