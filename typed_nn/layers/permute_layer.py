"""``PermuteLayer`` (dims reordered by ``PDimArrayIs(...)``) and ``TransposeLayer`` (a
PermuteLayer whose order is ``(1, 0)``). MetaNN ``tensor/permute_layer.h``.

``PermuteLayer`` requires ``PDimArrayIs``; its backward (the forward's vjp) applies the inverse
permutation.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .. import ops
from ..data.tensor import AnyTensor, TensorLike
from ..errors import LayerError, message
from ..ops.node import format_site, user_site
from ..policies import DimPolicy, PDimArrayIs, PolicyContainer, change_policy, policy_select
from ..tags import D, Dv, E
from .declared import Decl
from .keys import LayerInput, LayerOutput
from .protocol import Layer
from .var_type_dict import VarValues

__all__ = ["PermuteLayer", "TransposeLayer"]


class PermuteLayer(Layer[LayerInput, LayerOutput, Decl]):
    """``permute(x, order)``: output dim ``i`` is input dim ``order[i]``; backward
    ``permute_inv(g, order)``. Stores nothing."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    order: ClassVar[tuple[int, ...]] = ()

    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        super().configure(policies)
        order = policy_select(DimPolicy, policies).dim_array
        if not order:
            raise LayerError(
                message(
                    f"cannot configure {cls.__name__}: the permutation is not given.",
                    [("policies", repr(policies))],
                    built_at=format_site(user_site()),
                    hint="Use PDimArrayIs(...) to set the order, e.g. PDimArrayIs(1, 0).",
                )
            )
        if sorted(order) != list(range(len(order))):
            raise LayerError(
                message(
                    f"cannot configure {cls.__name__}: {order} is not a permutation.",
                    [("received", str(order)), ("expected", f"each of 0 .. {len(order) - 1} once")],
                    built_at=format_site(user_site()),
                    hint="list every dim exactly once.",
                )
            )
        cls.order = order

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        return {LayerOutput: ops.permute(inputs[LayerInput], self.order)}

    # Typing rule for every permutation: any element, the input's rank (not ComposeKernel's;
    # not SameTypeFeeds', which takes float data only).
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[E, Dv, D]]
    ) -> VarValues[LayerOutput, TensorLike[E, Dv, D]]:
        """``LayerOutput`` = the permuted input (same element, device and rank)."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[E, Dv, D]]
    ) -> VarValues[LayerInput, TensorLike[E, Dv, D]]:
        """``LayerInput`` = the gradient permuted back."""
        return self._feed_backward(grads)


class TransposeLayer(PermuteLayer[Decl]):
    """A PermuteLayer with order ``(1, 0)`` whatever ``PDimArrayIs`` says (MetaNN's alias)."""

    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        changed = change_policy(PDimArrayIs(1, 0), policies)
        cls.policies = changed
        super().configure(changed)
