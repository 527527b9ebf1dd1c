"""ParamPolicy: the type, initializer, element and device of a layer's parameter.

MetaNN ``layers/facilities/policies.h``. Type-valued minors hold typed_nn types (a ``Matrix``
alias, an element tag, a device tag). The parameter type is typed ``object`` (an alias is not
a class); the element and device are typed ``type[ElemTag]`` / ``type[DeviceTag]``, so
``PElemIs(np.float64)`` is rejected statically and when the policy is declared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from typed_nn.tags import DeviceTag, ElemTag

from .major import PolicyMajor
from .objects import PolicyTemplate

__all__ = ["PDeviceIs", "PElemIs", "PInitializerIs", "PParamTypeIs", "ParamPolicy"]


@dataclass(frozen=True)
class ParamPolicy(PolicyMajor):
    """How a parameter layer declares its parameter.

    Attributes:
        param_type: the parameter's data type, e.g. ``Matrix[Float32, CPU]``; None means not
            given (MetaNN ``NullParameter``), which parameter layers reject.
        initializer: the key the model's ``ParamInitializer`` files the filler under; None
            means not given.
        elem: the element tag (``Float64``, ...); None means ``Float32``.
        device: the device tag (``GPU``, ...); None means ``CPU``.
    """

    param_type: object = None
    initializer: object = None
    elem: type[ElemTag] | None = None
    device: type[DeviceTag] | None = None


PParamTypeIs: PolicyTemplate[ParamPolicy, Literal["param_type"], object] = PolicyTemplate(
    ParamPolicy, "param_type", name="PParamTypeIs"
)
PInitializerIs: PolicyTemplate[ParamPolicy, Literal["initializer"], object] = PolicyTemplate(
    ParamPolicy, "initializer", name="PInitializerIs"
)
PElemIs: PolicyTemplate[ParamPolicy, Literal["elem"], type[ElemTag]] = PolicyTemplate(
    ParamPolicy, "elem", name="PElemIs"
)
PDeviceIs: PolicyTemplate[ParamPolicy, Literal["device"], type[DeviceTag]] = PolicyTemplate(
    ParamPolicy, "device", name="PDeviceIs"
)
