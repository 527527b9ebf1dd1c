"""Element-wise math: exp, log, sqrt, square, trigonometric and hyperbolic functions, and
their gradient ops (``<op>_grad(g, x)`` = g times the derivative at ``x``; METANN.md §2.2);
the error function ``erf`` (exact GELU is built on it), whose vjp is composed of these ops.

All take float elements (``ops.astype`` converts integers explicitly).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..data.tensor import AnyTensor, TensorLike
from ..tags import D2, FE, D, Dv
from .declare import Vjp
from .elementwise import elementwise_grad, grad, unary
from .node import AnyOp, Cotangents, build

__all__ = [
    "ACOS", "ACOSH", "ASIN", "ASINH", "COS", "ERF", "EXP", "LOG", "SIN", "SQRT", "SQUARE", "TAN",
    "ABS_GRAD", "ACOS_GRAD", "ACOSH_GRAD", "ASIN_GRAD", "ASINH_GRAD", "COS_GRAD", "EXP_GRAD",
    "LOG_GRAD", "SIN_GRAD", "SQRT_GRAD", "SQUARE_GRAD", "TAN_GRAD",
    "abs_grad", "acos", "acos_grad", "acosh", "acosh_grad", "asin", "asin_grad", "asinh",
    "asinh_grad", "cos", "cos_grad", "erf", "exp", "exp_grad", "log", "log_grad", "sin", "sin_grad",
    "sqrt", "sqrt_grad", "square", "square_grad", "tan", "tan_grad",
]  # fmt: skip


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


def erf(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """The error function ``2/sqrt(pi) * integral_0^x e^(-t^2) dt``, element-wise (to float64
    rounding); its gradient is ``2/sqrt(pi) * e^(-x^2)``."""
    return build(ERF, (x,))


def asinh(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Inverse hyperbolic sine, element-wise."""
    return build(ASINH, (x,))


def acosh(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Inverse hyperbolic cosine, element-wise."""
    return build(ACOSH, (x,))


@elementwise_grad
def abs_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of abs: g * sign(x)."""
    return build(ABS_GRAD, (g, x))


@elementwise_grad
def exp_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of exp: g * exp(x)."""
    return build(EXP_GRAD, (g, x))


@elementwise_grad
def log_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of log: g / x."""
    return build(LOG_GRAD, (g, x))


@elementwise_grad
def sqrt_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of sqrt: g / (2 sqrt(x))."""
    return build(SQRT_GRAD, (g, x))


@elementwise_grad
def square_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of square: 2 g x."""
    return build(SQUARE_GRAD, (g, x))


@elementwise_grad
def sin_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of sin: g cos(x)."""
    return build(SIN_GRAD, (g, x))


@elementwise_grad
def cos_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of cos: -g sin(x)."""
    return build(COS_GRAD, (g, x))


@elementwise_grad
def tan_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of tan: g / cos(x)^2."""
    return build(TAN_GRAD, (g, x))


@elementwise_grad
def asin_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of asin: g / sqrt(1 - x^2)."""
    return build(ASIN_GRAD, (g, x))


@elementwise_grad
def acos_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of acos: -g / sqrt(1 - x^2)."""
    return build(ACOS_GRAD, (g, x))


@elementwise_grad
def asinh_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of asinh: g / sqrt(x^2 + 1)."""
    return build(ASINH_GRAD, (g, x))


@elementwise_grad
def acosh_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of acosh: g / sqrt(x^2 - 1)."""
    return build(ACOSH_GRAD, (g, x))


# The declarations follow the builders, so each vjp can name them. A forward op's vjp is its
# gradient op; a gradient op ``h(g, x) = g * f'(x)`` is linear in ``g``, so its vjp for ``g``
# is the same gradient op of the cotangent ``c``, and for ``x`` it is ``c * g * f''(x)``.

GradOp = Callable[[AnyTensor, AnyTensor], AnyTensor]


def _grad_of(grad_op: GradOp) -> Vjp:
    def vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
        return (grad_op(g, n.operands[0]),)

    return vjp


def _second(grad_op: GradOp, d_x: Callable[[AnyTensor, AnyTensor], AnyTensor | None]) -> Vjp:
    """The vjp of ``grad_op(g, x)``: ``grad_op(c, x)`` for ``g``; ``d_x(c * g, x)``
    (= c * g * f''(x)) for ``x``."""

    def vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
        g, x = n.operands
        return grad_op(c, x), d_x(c * g, x)

    return vjp


def _erf_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    x = n.operands[0]
    return (g * exp(-square(x)) * TWO_OVER_SQRT_PI,)


TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

SIGN_OF_0 = "({0} > {zero} ? {one} : ({0} < {zero} ? -{one} : {0}))"
"""sign in C (NaN and 0 map to themselves, as np.sign); ``abs_grad`` and ``sign`` use it."""

EXP = unary("exp", onnx="Exp", vjp=_grad_of(exp_grad), ufunc=np.exp, cuda="{exp}({0})")
LOG = unary("log", onnx="Log", vjp=_grad_of(log_grad), ufunc=np.log, cuda="{log}({0})")
SQRT = unary("sqrt", onnx="Sqrt", vjp=_grad_of(sqrt_grad), ufunc=np.sqrt, cuda="{sqrt}({0})")
SQUARE = unary("square", vjp=_grad_of(square_grad), ufunc=np.square, cuda="{0} * {0}")
SIN = unary("sin", onnx="Sin", vjp=_grad_of(sin_grad), ufunc=np.sin, cuda="{sin}({0})")
COS = unary("cos", onnx="Cos", vjp=_grad_of(cos_grad), ufunc=np.cos, cuda="{cos}({0})")
TAN = unary("tan", onnx="Tan", vjp=_grad_of(tan_grad), ufunc=np.tan, cuda="{tan}({0})")
ASIN = unary("asin", onnx="Asin", vjp=_grad_of(asin_grad), ufunc=np.arcsin, cuda="{asin}({0})")
ACOS = unary("acos", onnx="Acos", vjp=_grad_of(acos_grad), ufunc=np.arccos, cuda="{acos}({0})")
ERF = unary(  # numpy has no erf ufunc: backends/numpy/erf.py; C and ONNX have one
    "erf", onnx="Erf", vjp=_erf_vjp, alias_safe=True, cuda="{erf}({0})"
)
ASINH = unary(
    "asinh", onnx="Asinh", vjp=_grad_of(asinh_grad), ufunc=np.arcsinh, cuda="{asinh}({0})"
)
ACOSH = unary(
    "acosh", onnx="Acosh", vjp=_grad_of(acosh_grad), ufunc=np.arccosh, cuda="{acosh}({0})"
)

# The gradients ``g * f'(x)``: their numpy kernels (backends/numpy/elementwise.py) write a
# partial result into ``out`` before reading every operand, so they are not alias-safe.
ABS_GRAD = grad(  # sign' = 0
    "abs_grad",
    vjp=_second(abs_grad, lambda cg, x: None),
    cuda="{0} * " + SIGN_OF_0.replace("{0}", "{1}"),
)
EXP_GRAD = grad("exp_grad", vjp=_second(exp_grad, exp_grad), cuda="{0} * {exp}({1})")
LOG_GRAD = grad(
    "log_grad", vjp=_second(log_grad, lambda cg, x: -cg / square(x)), cuda="{0} * ({one} / {1})"
)
SQRT_GRAD = grad(
    "sqrt_grad",
    vjp=_second(sqrt_grad, lambda cg, x: sqrt_grad(cg, x) / x * -0.5),
    cuda="{0} * ({one} / ({sqrt}({1}) * {two}))",
)
SQUARE_GRAD = grad(
    "square_grad", vjp=_second(square_grad, lambda cg, x: cg * 2.0), cuda="{0} * ({1} * {two})"
)
SIN_GRAD = grad("sin_grad", vjp=_second(sin_grad, cos_grad), cuda="{0} * {cos}({1})")
COS_GRAD = grad(
    "cos_grad", vjp=_second(cos_grad, lambda cg, x: -sin_grad(cg, x)), cuda="{0} * -{sin}({1})"
)
TAN_GRAD = grad(
    "tan_grad",
    vjp=_second(tan_grad, lambda cg, x: tan_grad(cg, x) * tan(x) * 2.0),
    cuda="{0} * ({one} / ({cos}({1}) * {cos}({1})))",
)
ASIN_GRAD = grad(
    "asin_grad",
    vjp=_second(asin_grad, lambda cg, x: asin_grad(cg * x, x) / (1.0 - square(x))),
    cuda="{0} * ({one} / {sqrt}({one} - {1} * {1}))",
)
ACOS_GRAD = grad(
    "acos_grad",
    vjp=_second(acos_grad, lambda cg, x: acos_grad(cg * x, x) / (1.0 - square(x))),
    cuda="{0} * -({one} / {sqrt}({one} - {1} * {1}))",
)
ASINH_GRAD = grad(
    "asinh_grad",
    vjp=_second(asinh_grad, lambda cg, x: -asinh_grad(cg * x, x) / (square(x) + 1.0)),
    cuda="{0} * ({one} / {sqrt}({1} * {1} + {one}))",
)
ACOSH_GRAD = grad(
    "acosh_grad",
    vjp=_second(acosh_grad, lambda cg, x: -acosh_grad(cg * x, x) / (square(x) - 1.0)),
    cuda="{0} * ({one} / {sqrt}({1} * {1} - {one}))",
)
