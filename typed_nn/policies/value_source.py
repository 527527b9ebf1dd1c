"""ValueSourcePolicy: the Python type of the value a ValueSourceLayer produces.

MetaNN ``layers/principal/value_source_layer.h`` (default ``float``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .major import PolicyMajor
from .objects import PolicyTemplate

__all__ = ["PValueTypeIs", "ValueSourcePolicy"]


@dataclass(frozen=True)
class ValueSourcePolicy(PolicyMajor):
    """What a value source layer produces.

    Attributes:
        value_type: the type of the produced value (``float``, ``int``, an element tag).
    """

    value_type: type = float


PValueTypeIs: PolicyTemplate[ValueSourcePolicy, Literal["value_type"], type] = PolicyTemplate(
    ValueSourcePolicy, "value_type", name="PValueTypeIs"
)
