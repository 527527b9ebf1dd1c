"""Element-wise math layers (MetaNN ``layers/principal/math``): each is a UnaryLayer declared by
its op, its gradient op (METANN.md §2.2) and whether backward needs the input or the output.

All take ``LayerInput`` and give ``LayerOutput`` of the same element, device and rank.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from .. import ops
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

    op = staticmethod(ops.abs)
    grad_op = staticmethod(ops.abs_grad)


class SinLayer(UnaryLayer[Decl]):
    """``sin x``; backward ``g cos x``."""

    op = staticmethod(ops.sin)
    grad_op = staticmethod(ops.sin_grad)


class CosLayer(UnaryLayer[Decl]):
    """``cos x``; backward ``-g sin x``."""

    op = staticmethod(ops.cos)
    grad_op = staticmethod(ops.cos_grad)


class TanLayer(UnaryLayer[Decl]):
    """``tan x``; backward ``g / cos^2 x``."""

    op = staticmethod(ops.tan)
    grad_op = staticmethod(ops.tan_grad)


class AsinLayer(UnaryLayer[Decl]):
    """``asin x``; backward ``g / sqrt(1 - x^2)``."""

    op = staticmethod(ops.asin)
    grad_op = staticmethod(ops.asin_grad)


class AcosLayer(UnaryLayer[Decl]):
    """``acos x``; backward ``-g / sqrt(1 - x^2)``."""

    op = staticmethod(ops.acos)
    grad_op = staticmethod(ops.acos_grad)


class AsinhLayer(UnaryLayer[Decl]):
    """``asinh x``; backward ``g / sqrt(x^2 + 1)``."""

    op = staticmethod(ops.asinh)
    grad_op = staticmethod(ops.asinh_grad)


class AcoshLayer(UnaryLayer[Decl]):
    """``acosh x``; backward ``g / sqrt(x^2 - 1)``."""

    op = staticmethod(ops.acosh)
    grad_op = staticmethod(ops.acosh_grad)


class SquareLayer(UnaryLayer[Decl]):
    """``x^2``; backward ``2 g x``."""

    op = staticmethod(ops.square)
    grad_op = staticmethod(ops.square_grad)


class ExpLayer(UnaryLayer[Decl]):
    """``e^x``; backward ``g e^x``."""

    op = staticmethod(ops.exp)
    grad_op = staticmethod(ops.exp_grad)


class LogLayer(UnaryLayer[Decl]):
    """``ln x``; backward ``g / x``."""

    op = staticmethod(ops.log)
    grad_op = staticmethod(ops.log_grad)


class SigmoidLayer(UnaryLayer[Decl]):
    """``1 / (1 + e^-x)``; backward ``g y (1 - y)`` from the kept output ``y``."""

    keeps: ClassVar[Literal["input", "output"]] = "output"
    op = staticmethod(ops.sigmoid)
    grad_op = staticmethod(ops.sigmoid_grad)


class TanhLayer(UnaryLayer[Decl]):
    """``tanh x``; backward ``g (1 - y^2)`` from the kept output ``y``."""

    keeps: ClassVar[Literal["input", "output"]] = "output"
    op = staticmethod(ops.tanh)
    grad_op = staticmethod(ops.tanh_grad)


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
