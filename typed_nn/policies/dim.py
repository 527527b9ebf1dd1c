"""DimPolicy: which dims an op works on and whether it keeps them.

MetaNN ``operation/facilities/policies.h``. MetaNN's ``DimBitArray`` minor is an internal form
of ``dim_array`` (a bit per dim) computed by ops; it is not a user choice and is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from .major import PolicyMajor
from .objects import PolicyObject, PolicyTemplate, VariadicPolicyTemplate

__all__ = [
    "DimPolicy",
    "PDimArrayIs",
    "PDimCountIs",
    "PKeepDim",
    "PKeepDimValueIs",
    "PModifyDimNumIs",
    "PNoKeepDim",
]


@dataclass(frozen=True)
class DimPolicy(PolicyMajor):
    """Dims an op reduces, permutes or keeps.

    Attributes:
        is_keep_dim: reduced dims stay as size-1 dims.
        dim_array: explicit dims (a permutation, the dims to reduce); ``()`` means not given.
        modify_dim_num: how many leading/trailing dims the op modifies (softmax, dot).
        dim_count: a count of dims (tile and reshape use it); 0 means not given.
    """

    is_keep_dim: bool = False
    dim_array: tuple[int, ...] = ()
    modify_dim_num: int = 1
    dim_count: int = 0


_IsKeepDim: TypeAlias = PolicyObject[DimPolicy, Literal["is_keep_dim"], bool]

PKeepDim: _IsKeepDim = PolicyObject(DimPolicy, "is_keep_dim", True, name="PKeepDim")
PNoKeepDim: _IsKeepDim = PolicyObject(DimPolicy, "is_keep_dim", False, name="PNoKeepDim")
PKeepDimValueIs: PolicyTemplate[DimPolicy, Literal["is_keep_dim"], bool] = PolicyTemplate(
    DimPolicy, "is_keep_dim", name="PKeepDimValueIs"
)
PModifyDimNumIs: PolicyTemplate[DimPolicy, Literal["modify_dim_num"], int] = PolicyTemplate(
    DimPolicy, "modify_dim_num", name="PModifyDimNumIs"
)
PDimCountIs: PolicyTemplate[DimPolicy, Literal["dim_count"], int] = PolicyTemplate(
    DimPolicy, "dim_count", name="PDimCountIs"
)
PDimArrayIs: VariadicPolicyTemplate[DimPolicy, Literal["dim_array"], int] = VariadicPolicyTemplate(
    DimPolicy, "dim_array", name="PDimArrayIs"
)
"""Variadic, as MetaNN's ``PDimArrayIs<1, 0>``: ``PDimArrayIs(1, 0)`` sets ``(1, 0)``."""
