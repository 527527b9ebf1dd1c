"""Arithmetic: ``+ - * /`` (tensor or number on either side), negation, abs, sign.

The operators on :class:`~typed_nn.TensorLike` call these builders; they are typed there by
the generated overloads, so the builders themselves take plain objects and check at run time.
"""

from __future__ import annotations

from ..data.tensor import AnyTensor, TensorLike
from ..tags import D, Dv, E
from .declare import NOT_DIFFERENTIABLE
from .elementwise import binary, unary
from .math import abs_grad
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


ADD = binary("add", vjp=_add_vjp)
SUB = binary("sub", vjp=_sub_vjp)
MUL = binary("mul", vjp=_mul_vjp)
DIV = binary("div", vjp=_div_vjp, float_only=True)
NEGATIVE = unary("negative", vjp=_negative_vjp, float_only=False)
ABS = unary("abs", vjp=_abs_vjp, float_only=False)
SIGN = unary("sign", vjp=NOT_DIFFERENTIABLE, float_only=False)


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
