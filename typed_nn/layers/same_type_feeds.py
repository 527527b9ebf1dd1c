"""``SameTypeFeeds``: the typed ``feed_forward`` / ``feed_backward`` of a one-port layer whose
output has its input's float element, device and rank (dropout, the unary layers, the bias and
the normalisation layers).

The rule needs a method-level rank variable ``D`` (any rank in, the same rank out), which the
class rank arguments of ``Layer`` / ``ComposeKernel`` cannot say; written once here, each of
those layers lists this mixin first among its bases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

from ..data.tensor import TensorLike
from ..tags import FE, D, Dim2, Dim4, Dv
from .keys import LayerInput, LayerOutput
from .var_type_dict import VarValues

if TYPE_CHECKING:
    from .protocol import Values

__all__ = ["SameTypeFeeds", "SameTypeFeeds2or4"]


class SameTypeFeeds:
    """Mixin (before the ``Layer`` base): ``LayerInput`` -> ``LayerOutput`` of the same type."""

    if TYPE_CHECKING:  # provided by Layer, which comes after this mixin in the bases

        def _feed_forward(self, inputs: Values) -> Values: ...
        def _feed_backward(self, grads: Values) -> Values: ...

    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[FE, Dv, D]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, D]]:
        """``LayerOutput`` (lazy): same element, device and rank as ``LayerInput``."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, D]]
    ) -> VarValues[LayerInput, TensorLike[FE, Dv, D]]:
        """``LayerInput``'s gradient (with ``PFeedbackOutput``; empty without it); parameter
        sublayers keep theirs for ``grad_collect`` (with ``PUpdate``)."""
        return self._feed_backward(grads)


class SameTypeFeeds2or4:
    """``SameTypeFeeds`` for (N, C) or (N, C, H, W) data only (batch normalisation): data of
    another rank is a static error, as it is one at run time."""

    if TYPE_CHECKING:

        def _feed_forward(self, inputs: Values) -> Values: ...
        def _feed_backward(self, grads: Values) -> Values: ...

    @overload
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[FE, Dv, Dim2]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, Dim2]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[FE, Dv, Dim4]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, Dim4]]: ...
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[FE, Dv, D]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, D]]:
        """``LayerOutput`` (lazy): same element, device and rank (2 or 4) as ``LayerInput``."""
        return self._feed_forward(inputs)

    @overload
    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, Dim2]]
    ) -> VarValues[LayerInput, TensorLike[FE, Dv, Dim2]]: ...
    @overload
    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, Dim4]]
    ) -> VarValues[LayerInput, TensorLike[FE, Dv, Dim4]]: ...
    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, D]]
    ) -> VarValues[LayerInput, TensorLike[FE, Dv, D]]:
        """``LayerInput``'s gradient, of ``LayerOutput``'s rank (2 or 4)."""
        return self._feed_backward(grads)
