"""``GruStep``: one step of a gated recurrent unit, as a composite (MetaNN ``recurrent/gru_step.h``).

Row-vector convention (``x`` of shape (batch, fan_in), ``h`` of shape (batch, fan_out))::

    z  = sigmoid(x·Wz + h·Uz)
    r  = sigmoid(x·Wr + h·Ur)
    ĥ  = tanh((h ⊙ r)·U + x·W)
    h' = z ⊙ ĥ + (1 - z) ⊙ h          = interpolate(ĥ, h, z)

Ports: ``LayerInput`` (x) and ``Previous(LayerOutput)`` (h) → ``LayerOutput`` (h').
``GruStep(name, fan_in, fan_out)``: ``W*`` are (fan_in, fan_out), ``U*`` are (fan_out, fan_out),
named ``name/W/param``, ``name/Wz/param``, ``name/Wr/param``, ``name/U/param``,
``name/Uz/param`` and ``name/Ur/param``. The parameter type is forced to
``Matrix[elem, device]`` with element and device from ``PElemIs`` / ``PDeviceIs`` (default
Float32, CPU), as MetaNN forces ``PParamTypeIs<Matrix<Elem, Device>>``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..policies import ParamPolicy, PolicyContainer, PParamTypeIs, change_policy, policy_select
from ..tags import CPU, Dim2, Float32
from .binary_layers import AddLayer, MultiplyLayer
from .compose import ComposeKernel
from .declared import Decl
from .in_map import tensor_type
from .interpolate_layer import InterpolateLayer
from .keys import (
    InterpolateLayerLambda,
    InterpolateLayerWeight1,
    InterpolateLayerWeight2,
    LayerInput,
    LayerOutput,
    LeftOperand,
    Previous,
    PreviousKey,
    RightOperand,
)
from .linear import WeightLayer
from .math_layers import SigmoidLayer, TanhLayer
from .topology import ComposeTopology, InConnect, InternalConnect, OutConnect, Sublayer

__all__ = ["GruStep"]

H = Previous(LayerOutput)
Ports = LayerInput | PreviousKey[LayerOutput]


def _link(src: str, dst: str, port: type = LayerInput) -> InternalConnect:
    return InternalConnect(src, LayerOutput, dst, port)


class GruStep(ComposeKernel[Ports, LayerOutput, Dim2, Dim2, Decl]):
    """One GRU step: ``h' = z ⊙ tanh((h ⊙ r)·U + x·W) + (1 - z) ⊙ h``."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, H)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        *(Sublayer(n, WeightLayer) for n in ("Wz", "Uz", "Wr", "Ur", "W", "U")),
        Sublayer("Add_z", AddLayer),
        Sublayer("Add_r", AddLayer),
        Sublayer("Add", AddLayer),
        Sublayer("Act_z", SigmoidLayer),
        Sublayer("Act_r", SigmoidLayer),
        Sublayer("Mult", MultiplyLayer),
        Sublayer("Act_Hat", TanhLayer),
        Sublayer("Interpolate", InterpolateLayer),
        InConnect(LayerInput, "Wz", LayerInput),
        InConnect(LayerInput, "Wr", LayerInput),
        InConnect(LayerInput, "W", LayerInput),
        InConnect(H, "Uz", LayerInput),
        InConnect(H, "Ur", LayerInput),
        InConnect(H, "Mult", LeftOperand),
        InConnect(H, "Interpolate", InterpolateLayerWeight2),
        _link("Wz", "Add_z", LeftOperand),
        _link("Uz", "Add_z", RightOperand),
        _link("Add_z", "Act_z"),
        _link("Wr", "Add_r", LeftOperand),
        _link("Ur", "Add_r", RightOperand),
        _link("Add_r", "Act_r"),
        _link("Act_r", "Mult", RightOperand),
        _link("Mult", "U"),
        _link("U", "Add", LeftOperand),
        _link("W", "Add", RightOperand),
        _link("Add", "Act_Hat"),
        _link("Act_Hat", "Interpolate", InterpolateLayerWeight1),
        _link("Act_z", "Interpolate", InterpolateLayerLambda),
        OutConnect("Interpolate", LayerOutput, LayerOutput),
    )

    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        param = policy_select(ParamPolicy, policies)
        elem: Any = param.elem or Float32
        device: Any = param.device or CPU
        matrix = tensor_type(elem, device, 2)
        super().configure(change_policy(PParamTypeIs(matrix), policies))

    def __init__(self, name: str, fan_in: int, fan_out: int) -> None:
        args = self.create_sublayers()
        for w in ("W", "Wz", "Wr"):
            args.set(w, fan_in, fan_out)
        for u in ("U", "Uz", "Ur"):
            args.set(u, fan_out, fan_out)
        super().__init__(name, args)
