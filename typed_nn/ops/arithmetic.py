"""Arithmetic: ``+ - * /`` (tensor or number on either side), negation, abs, sign.

The operators on :class:`~typed_nn.TensorLike` call these builders; they are typed there by
the generated overloads, so the builders themselves take plain objects and check at run time.
"""

from __future__ import annotations

from ..data.tensor_like import AnyTensor, TensorLike
from ..tags import D, Dv, E
from .elementwise import binary, unary
from .node import build

__all__ = [
    "ABS",
    "ADD",
    "DIV",
    "MUL",
    "NEGATIVE",
    "SIGN",
    "SUB",
    "abs",
    "add",
    "div",
    "mul",
    "negative",
    "sign",
    "sub",
]

ADD = binary("add")
SUB = binary("sub")
MUL = binary("mul")
DIV = binary("div", float_only=True)
NEGATIVE = unary("negative", float_only=False)
ABS = unary("abs", float_only=False)
SIGN = unary("sign", float_only=False)


def add(a: object, b: object) -> AnyTensor:
    """``a + b`` with MetaNN broadcasting; either side may be a Python number."""
    return build(ADD, (a, b))


def sub(a: object, b: object) -> AnyTensor:
    """``a - b``; either side may be a Python number."""
    return build(SUB, (a, b))


def mul(a: object, b: object) -> AnyTensor:
    """``a * b`` element-wise; either side may be a Python number."""
    return build(MUL, (a, b))


def div(a: object, b: object) -> AnyTensor:
    """``a / b`` element-wise (float elements); either side may be a Python number."""
    return build(DIV, (a, b))


def negative(x: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]:
    """``-x``."""
    return build(NEGATIVE, (x,))


def abs(x: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]:
    """``|x|`` element-wise."""
    return build(ABS, (x,))


def sign(x: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]:
    """-1, 0 or +1 element-wise."""
    return build(SIGN, (x,))
