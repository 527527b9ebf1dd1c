"""LayerStructurePolicy: a composite layer's activation and whether it has a bias.

MetaNN ``layers/facilities/policies.h``; ``SingleLayerPerceptron`` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from .major import PolicyMajor
from .objects import PolicyObject, PolicyTemplate

__all__ = ["LayerStructurePolicy", "PActFuncIs", "PBiasInvolved", "PBiasNotInvolved"]


@dataclass(frozen=True)
class LayerStructurePolicy(PolicyMajor):
    """The structure of a composite layer.

    Attributes:
        act_func: the activation layer class (``SigmoidLayer``, ...); None means not given,
            which ``SingleLayerPerceptron`` rejects (MetaNN ``DummyActFun``).
        bias_involved: the layer adds a bias after its weight.
    """

    act_func: type | None = None
    bias_involved: bool = True


_BiasInvolved: TypeAlias = PolicyObject[LayerStructurePolicy, Literal["bias_involved"], bool]

PActFuncIs: PolicyTemplate[LayerStructurePolicy, Literal["act_func"], type] = PolicyTemplate(
    LayerStructurePolicy, "act_func", name="PActFuncIs"
)
PBiasInvolved: _BiasInvolved = PolicyObject(
    LayerStructurePolicy, "bias_involved", True, name="PBiasInvolved"
)
PBiasNotInvolved: _BiasInvolved = PolicyObject(
    LayerStructurePolicy, "bias_involved", False, name="PBiasNotInvolved"
)
