"""Arithmetic: ``+ - * /`` (tensor or number on either side), negation, abs, sign.

The operators on :class:`~typed_nn.TensorLike` call these builders; they are typed there by
the generated overloads, so the builders themselves take plain objects and check at run time.
"""

from __future__ import annotations

import numpy as np

from ..data.tensor import AnyTensor, TensorLike
from ..tags import D, Dv, E
from .declare import NOT_DIFFERENTIABLE
from .elementwise import binary, unary
from .math import SIGN_OF_0, abs_grad
from .node import AnyOp, Cotangents, build

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


# vjps; cotangents keep the node's (broadcast) shape, and tn.grad sums them back to each
# operand's shape. A number operand's entry is computed but dropped.
def _add_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return g, g


def _sub_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return g, -g


def _mul_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    a, b = n.operands
    return g * b, g * a


def _div_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    a, b = n.operands
    q = g / b
    return q, -q * a / b


def _negative_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (-g,)


def _abs_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (abs_grad(g, n.operands[0]),)


ADD = binary("add", onnx="Add", vjp=_add_vjp, ufunc=np.add, cuda="{0} + {1}", int_overflow=True)
SUB = binary(
    "sub", onnx="Sub", vjp=_sub_vjp, ufunc=np.subtract, cuda="{0} - {1}", int_overflow=True
)
MUL = binary(
    "mul", onnx="Mul", vjp=_mul_vjp, ufunc=np.multiply, cuda="{0} * {1}", int_overflow=True
)
DIV = binary(
    "div", onnx="Div", vjp=_div_vjp, float_only=True, ufunc=np.true_divide, cuda="{0} / {1}"
)
NEGATIVE = unary(
    "negative",
    onnx="Neg",
    vjp=_negative_vjp,
    float_only=False,
    ufunc=np.negative,
    cuda="-{0}",
    int_overflow=True,
)
ABS = unary(
    "abs",
    onnx="Abs",
    vjp=_abs_vjp,
    float_only=False,
    ufunc=np.absolute,
    cuda="{abs}({0})",
    int_overflow=True,
)
SIGN = unary(
    "sign", onnx="Sign", vjp=NOT_DIFFERENTIABLE, float_only=False, ufunc=np.sign, cuda=SIGN_OF_0
)


def add(a: object, b: object) -> AnyTensor:
    """``a + b`` with numpy broadcasting; either side may be a Python number."""
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
