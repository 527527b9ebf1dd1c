"""VarScaleFillerPolicy: the distribution and fan mode of variance-scaling fillers.

MetaNN ``model/param_initializer/var_scale_filler.h``; Xavier and MSRA fillers are variance
scaling with a fixed choice of these two minors.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal, TypeAlias

from .major import PolicyMajor
from .objects import PolicyObject

__all__ = [
    "PNormVarScale",
    "PUniformVarScale",
    "PVarScaleFanAvg",
    "PVarScaleFanIn",
    "PVarScaleFanOut",
    "VarScaleDistribution",
    "VarScaleFillerPolicy",
    "VarScaleMode",
]


class VarScaleDistribution(enum.Enum):
    """The distribution a variance-scaling filler draws from."""

    UNIFORM = "uniform"
    NORM = "norm"


class VarScaleMode(enum.Enum):
    """Which fan the variance is scaled by: inputs, outputs or their mean."""

    FAN_IN = "fan_in"
    FAN_OUT = "fan_out"
    FAN_AVG = "fan_avg"


@dataclass(frozen=True)
class VarScaleFillerPolicy(PolicyMajor):
    """Choices of a variance-scaling filler.

    Attributes:
        distribute: uniform or normal draws.
        scale_mode: scale by fan-in, fan-out or their average.
    """

    distribute: VarScaleDistribution = VarScaleDistribution.UNIFORM
    scale_mode: VarScaleMode = VarScaleMode.FAN_AVG


_Distribute: TypeAlias = PolicyObject[
    VarScaleFillerPolicy, Literal["distribute"], VarScaleDistribution
]
_ScaleMode: TypeAlias = PolicyObject[VarScaleFillerPolicy, Literal["scale_mode"], VarScaleMode]

PNormVarScale: _Distribute = PolicyObject(
    VarScaleFillerPolicy, "distribute", VarScaleDistribution.NORM, name="PNormVarScale"
)
PUniformVarScale: _Distribute = PolicyObject(
    VarScaleFillerPolicy, "distribute", VarScaleDistribution.UNIFORM, name="PUniformVarScale"
)
PVarScaleFanIn: _ScaleMode = PolicyObject(
    VarScaleFillerPolicy, "scale_mode", VarScaleMode.FAN_IN, name="PVarScaleFanIn"
)
PVarScaleFanOut: _ScaleMode = PolicyObject(
    VarScaleFillerPolicy, "scale_mode", VarScaleMode.FAN_OUT, name="PVarScaleFanOut"
)
PVarScaleFanAvg: _ScaleMode = PolicyObject(
    VarScaleFillerPolicy, "scale_mode", VarScaleMode.FAN_AVG, name="PVarScaleFanAvg"
)
