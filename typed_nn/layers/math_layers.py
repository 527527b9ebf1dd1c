"""Element-wise math layers (MetaNN ``layers/principal/math``): each is a UnaryLayer declared by
its op, its gradient op (METANN.md §2.2) and whether backward needs the input or the output.

All take ``LayerInput`` and give ``LayerOutput`` of the same element, device and rank.
"""

from __future__ import annotations

from typing import ClassVar, Literal

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

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.abs_grad(g, kept)


class SinLayer(UnaryLayer[Decl]):
    """``sin x``; backward ``g cos x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.sin(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.sin_grad(g, kept)


class CosLayer(UnaryLayer[Decl]):
    """``cos x``; backward ``-g sin x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.cos(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.cos_grad(g, kept)


class TanLayer(UnaryLayer[Decl]):
    """``tan x``; backward ``g / cos^2 x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.tan(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.tan_grad(g, kept)


class AsinLayer(UnaryLayer[Decl]):
    """``asin x``; backward ``g / sqrt(1 - x^2)``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.asin(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.asin_grad(g, kept)


class AcosLayer(UnaryLayer[Decl]):
    """``acos x``; backward ``-g / sqrt(1 - x^2)``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.acos(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.acos_grad(g, kept)


class AsinhLayer(UnaryLayer[Decl]):
    """``asinh x``; backward ``g / sqrt(x^2 + 1)``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.asinh(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.asinh_grad(g, kept)


class AcoshLayer(UnaryLayer[Decl]):
    """``acosh x``; backward ``g / sqrt(x^2 - 1)``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.acosh(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.acosh_grad(g, kept)


class SquareLayer(UnaryLayer[Decl]):
    """``x^2``; backward ``2 g x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.square(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.square_grad(g, kept)


class ExpLayer(UnaryLayer[Decl]):
    """``e^x``; backward ``g e^x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.exp(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.exp_grad(g, kept)


class LogLayer(UnaryLayer[Decl]):
    """``ln x``; backward ``g / x``."""

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.log(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.log_grad(g, kept)


class SigmoidLayer(UnaryLayer[Decl]):
    """``1 / (1 + e^-x)``; backward ``g y (1 - y)`` from the kept output ``y``."""

    keeps: ClassVar[Literal["input", "output"]] = "output"

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.sigmoid(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.sigmoid_grad(g, kept)


class TanhLayer(UnaryLayer[Decl]):
    """``tanh x``; backward ``g (1 - y^2)`` from the kept output ``y``."""

    keeps: ClassVar[Literal["input", "output"]] = "output"

    def op(self, x: AnyTensor, /) -> AnyTensor:
        return ops.tanh(x)

    def grad_op(self, g: AnyTensor, kept: AnyTensor, /) -> AnyTensor:
        return ops.tanh_grad(g, kept)


# Each backward is its op's vjp (tests/test_layers_vjp.py): declared per class, so that a
# subclass with another grad_op is not taken for exact.
for _exact in (
    AbsLayer,
    SinLayer,
    CosLayer,
    TanLayer,
    AsinLayer,
    AcosLayer,
    AsinhLayer,
    AcoshLayer,
    SquareLayer,
    ExpLayer,
    LogLayer,
    SigmoidLayer,
    TanhLayer,
):
    _exact.vjp_exact = True
