"""``SingleLayerPerceptron``: ``act(x·W + b)`` (MetaNN ``composite/single_layer_perceptron.h``).

The activation is a layer template given by ``PActFuncIs(SigmoidLayer)`` (required); the bias
follows ``PBiasInvolved`` (default) / ``PBiasNotInvolved``. ``SingleLayerPerceptron(name,
fan_in, fan_out)``; its parameters are ``name/weight`` and ``name/bias`` (the Linear sublayer
carries the composite's own name, as in MetaNN) and its activation is ``name/act``.

Sublayer names for ``SubPolicyContainer``: ``"linear"`` (then ``"weight"`` / ``"bias"``
inside it) and ``"act"``; without a bias ``"weight"``, ``"dot"`` and ``"act"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ..data.tensor import Matrix
from ..errors import LayerError, message
from ..ops.node import format_site, user_site
from ..policies import (
    AnyPolicyObject,
    LayerStructurePolicy,
    PolicyContainer,
    PParamTypeIs,
    has_policy,
    policy_select,
)
from ..tags import Dim2
from .compose import ComposeKernel
from .declared import Decl
from .dot_layer import DotLayer
from .keys import LayerInput, LayerOutput, LeftOperand, RightOperand
from .linear import LinearLayer
from .source_layers import ParamSourceLayer
from .topology import ComposeTopology, InConnect, InternalConnect, OutConnect, Sublayer

__all__ = ["SingleLayerPerceptron"]

_TOPOLOGIES: dict[tuple[type, bool], ComposeTopology] = {}


def perceptron_topology(act: type, bias: bool) -> ComposeTopology:
    """The topology for one activation template, with or without a bias (built once)."""
    key = (act, bias)
    if key not in _TOPOLOGIES:
        head: tuple[Sublayer | InConnect | InternalConnect, ...]
        if bias:
            head = (
                Sublayer("linear", LinearLayer),
                InConnect(LayerInput, "linear", LayerInput),
                InternalConnect("linear", LayerOutput, "act", LayerInput),
            )
        else:
            head = (
                Sublayer("weight", ParamSourceLayer),
                Sublayer("dot", DotLayer),
                InConnect(LayerInput, "dot", LeftOperand),
                InternalConnect("weight", LayerOutput, "dot", RightOperand),
                InternalConnect("dot", LayerOutput, "act", LayerInput),
            )
        _TOPOLOGIES[key] = ComposeTopology(
            *head, Sublayer("act", act), OutConnect("act", LayerOutput, LayerOutput)
        )
    return _TOPOLOGIES[key]


class SingleLayerPerceptron(ComposeKernel[LayerInput, LayerOutput, Dim2, Dim2, Decl]):
    """``act(x·W + b)`` (or ``act(x·W)``) for a batch ``x`` of shape (batch, fan_in)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    sublayer_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {
        "weight": (PParamTypeIs(Matrix),)
    }
    bias: ClassVar[bool] = True

    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        if not has_policy(policies, LayerStructurePolicy, "act_func"):
            raise LayerError(
                message(
                    f"cannot configure {cls.__name__}: no activation.",
                    [("policies", repr(policies))],
                    built_at=format_site(user_site()),
                    hint="Use PActFuncIs(...) to set activate function, e.g. "
                    "PActFuncIs(SigmoidLayer).",
                )
            )
        structure = policy_select(LayerStructurePolicy, policies)
        assert structure.act_func is not None
        cls.bias = structure.bias_involved
        cls.topology = perceptron_topology(structure.act_func, cls.bias)
        cls._check_ports(cls.topology)
        super().configure(policies)

    def __init__(self, name: str, fan_in: int, fan_out: int) -> None:
        args = self.create_sublayers()
        if type(self).bias:
            args.set("linear", fan_in, fan_out, name=name)
        else:
            args.set("weight", fan_in, fan_out, name=f"{name}/weight")
        super().__init__(name, args)
