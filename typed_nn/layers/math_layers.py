"""Element-wise math layers (MetaNN ``layers/principal/math``): each is a UnaryLayer declared by
its op; its backward is the op's vjp (the gradients of METANN.md §2.2).

All take ``LayerInput`` and give ``LayerOutput`` of the same element, device and rank.
"""

from __future__ import annotations

from .. import ops
from ..data.tensor import AnyTensor
from .declared import Decl
from .unary import UnaryLayer

__all__ = [
    "AbsLayer",
    "AcosLayer",
    "AcoshLayer",
    "AsinLayer",
    "AsinhLayer",
    "CosLayer",
    "ExpLayer",
    "LogLayer",
    "SigmoidLayer",
    "SinLayer",
    "SquareLayer",
    "TanLayer",
    "TanhLayer",
]


class AbsLayer(UnaryLayer[Decl]):
    """``|x|``; backward ``g * sign(x)``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.abs(x)


class SinLayer(UnaryLayer[Decl]):
    """``sin x``; backward ``g cos x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.sin(x)


class CosLayer(UnaryLayer[Decl]):
    """``cos x``; backward ``-g sin x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.cos(x)


class TanLayer(UnaryLayer[Decl]):
    """``tan x``; backward ``g / cos^2 x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.tan(x)


class AsinLayer(UnaryLayer[Decl]):
    """``asin x``; backward ``g / sqrt(1 - x^2)``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.asin(x)


class AcosLayer(UnaryLayer[Decl]):
    """``acos x``; backward ``-g / sqrt(1 - x^2)``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.acos(x)


class AsinhLayer(UnaryLayer[Decl]):
    """``asinh x``; backward ``g / sqrt(x^2 + 1)``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.asinh(x)


class AcoshLayer(UnaryLayer[Decl]):
    """``acosh x``; backward ``g / sqrt(x^2 - 1)``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.acosh(x)


class SquareLayer(UnaryLayer[Decl]):
    """``x^2``; backward ``2 g x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.square(x)


class ExpLayer(UnaryLayer[Decl]):
    """``e^x``; backward ``g e^x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.exp(x)


class LogLayer(UnaryLayer[Decl]):
    """``ln x``; backward ``g / x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.log(x)


class SigmoidLayer(UnaryLayer[Decl]):
    """``1 / (1 + e^-x)``; backward ``g y (1 - y)`` (the vjp, from the output ``y``)."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.sigmoid(x)


class TanhLayer(UnaryLayer[Decl]):
    """``tanh x``; backward ``g (1 - y^2)`` (the vjp, from the output ``y``)."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.tanh(x)
