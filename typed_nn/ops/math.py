"""Element-wise math: exp, log, sqrt, square, trigonometric and hyperbolic functions, and
their gradient ops (``<op>_grad(g, x)`` = g times the derivative at ``x``; METANN.md §2.2).

All take float elements (``ops.astype`` converts integers explicitly).
"""

from __future__ import annotations

from ..data.tensor_like import TensorLike
from ..tags import D2, FE, D, Dv
from .elementwise import grad, unary
from .node import build

__all__ = [
    "ACOS", "ACOSH", "ASIN", "ASINH", "COS", "EXP", "LOG", "SIN", "SQRT", "SQUARE", "TAN",
    "ABS_GRAD", "ACOS_GRAD", "ACOSH_GRAD", "ASIN_GRAD", "ASINH_GRAD", "COS_GRAD", "EXP_GRAD",
    "LOG_GRAD", "SIN_GRAD", "SQRT_GRAD", "SQUARE_GRAD", "TAN_GRAD",
    "abs_grad", "acos", "acos_grad", "acosh", "acosh_grad", "asin", "asin_grad", "asinh",
    "asinh_grad", "cos", "cos_grad", "exp", "exp_grad", "log", "log_grad", "sin", "sin_grad",
    "sqrt", "sqrt_grad", "square", "square_grad", "tan", "tan_grad",
]  # fmt: skip

EXP, LOG, SQRT, SQUARE = unary("exp"), unary("log"), unary("sqrt"), unary("square")
SIN, COS, TAN = unary("sin"), unary("cos"), unary("tan")
ASIN, ACOS, ASINH, ACOSH = unary("asin"), unary("acos"), unary("asinh"), unary("acosh")

ABS_GRAD, EXP_GRAD, LOG_GRAD = grad("abs_grad"), grad("exp_grad"), grad("log_grad")
SQRT_GRAD, SQUARE_GRAD = grad("sqrt_grad"), grad("square_grad")
SIN_GRAD, COS_GRAD, TAN_GRAD = grad("sin_grad"), grad("cos_grad"), grad("tan_grad")
ASIN_GRAD, ACOS_GRAD = grad("asin_grad"), grad("acos_grad")
ASINH_GRAD, ACOSH_GRAD = grad("asinh_grad"), grad("acosh_grad")


def exp(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """e to the power x, element-wise."""
    return build(EXP, (x,))


def log(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Natural logarithm, element-wise (NaN for x < 0, -inf at 0)."""
    return build(LOG, (x,))


def sqrt(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Square root, element-wise."""
    return build(SQRT, (x,))


def square(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """x squared, element-wise."""
    return build(SQUARE, (x,))


def sin(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Sine, element-wise."""
    return build(SIN, (x,))


def cos(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Cosine, element-wise."""
    return build(COS, (x,))


def tan(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Tangent, element-wise."""
    return build(TAN, (x,))


def asin(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Arc sine, element-wise."""
    return build(ASIN, (x,))


def acos(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Arc cosine, element-wise."""
    return build(ACOS, (x,))


def asinh(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Inverse hyperbolic sine, element-wise."""
    return build(ASINH, (x,))


def acosh(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Inverse hyperbolic cosine, element-wise."""
    return build(ACOSH, (x,))


def abs_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of abs: g * sign(x)."""
    return build(ABS_GRAD, (g, x))


def exp_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of exp: g * exp(x)."""
    return build(EXP_GRAD, (g, x))


def log_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of log: g / x."""
    return build(LOG_GRAD, (g, x))


def sqrt_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of sqrt: g / (2 sqrt(x))."""
    return build(SQRT_GRAD, (g, x))


def square_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of square: 2 g x."""
    return build(SQUARE_GRAD, (g, x))


def sin_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of sin: g cos(x)."""
    return build(SIN_GRAD, (g, x))


def cos_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of cos: -g sin(x)."""
    return build(COS_GRAD, (g, x))


def tan_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of tan: g / cos(x)^2."""
    return build(TAN_GRAD, (g, x))


def asin_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of asin: g / sqrt(1 - x^2)."""
    return build(ASIN_GRAD, (g, x))


def acos_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of acos: -g / sqrt(1 - x^2)."""
    return build(ACOS_GRAD, (g, x))


def asinh_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of asinh: g / sqrt(x^2 + 1)."""
    return build(ASINH_GRAD, (g, x))


def acosh_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of acosh: g / sqrt(x^2 - 1)."""
    return build(ACOSH_GRAD, (g, x))
