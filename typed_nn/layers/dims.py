"""Reading DimPolicy for layers whose op works over ``k`` dims (dot, softmax)."""

from __future__ import annotations

from ..errors import LayerError, message
from ..ops.node import format_site, user_site
from ..policies import DimPolicy, PolicyContainer, policy_select

__all__ = ["dim_count"]


def dim_count(layer: str, policies: PolicyContainer, *, needs: str, hint: str) -> int:
    """``DimPolicy.modify_dim_num`` (``PModifyDimNumIs(k)``), which must be at least 1."""
    k = policy_select(DimPolicy, policies).modify_dim_num
    if k < 1:
        raise LayerError(
            message(
                f"cannot configure {layer}: {needs} k >= 1 dims.",
                [("policies", repr(policies)), ("k", str(k))],
                built_at=format_site(user_site()),
                hint=hint,
            )
        )
    return k
