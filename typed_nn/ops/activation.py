"""Activations: sigmoid, tanh, relu, and their gradient ops (METANN.md §2.2); softplus; and
gelu and silu, composed of these and ``erf`` (their gradients come from the parts' vjps, and
the evaluator fuses them into one element-wise pass).

All are element-wise on float data (the evaluator fuses them with their neighbours).
``sigmoid_grad`` and ``tanh_grad`` take the forward *output* ``y`` (MetaNN's choice: the
layer keeps ``y`` for its backward pass anyway); ``relu_grad`` takes the forward *input*.
A gradient ``g`` may have lower rank than the forward value and is broadcast over its
leading dims; the result has the forward value's shape.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from ..data.tensor import AnyTensor, TensorLike
from ..errors import ParamError, message
from ..tags import D2, FE, HALF_TAGS, D, Dv, Float32
from .convert import astype
from .elementwise import elementwise_grad, grad, unary
from .math import erf
from .node import AnyOp, Cotangents, build
from .rules import require_data

__all__ = [
    "RELU",
    "RELU_GRAD",
    "SIGMOID",
    "SIGMOID_GRAD",
    "SOFTPLUS",
    "TANH",
    "TANH_GRAD",
    "gelu",
    "relu",
    "relu_grad",
    "sigmoid",
    "sigmoid_grad",
    "silu",
    "softplus",
    "tanh",
    "tanh_grad",
]


# vjps: sigmoid and tanh differentiate through their output (the node itself), relu through
# its input; each gradient op is linear in g, and its vjp for the forward value is c * g * f''.
def _sigmoid_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (sigmoid_grad(g, n),)


def _tanh_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (tanh_grad(g, n),)


def _relu_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (relu_grad(g, n.operands[0]),)


def _sigmoid_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    g, y = n.operands
    return sigmoid_grad(c, y), c * g * (1.0 - y * 2.0)


def _tanh_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    g, y = n.operands
    return tanh_grad(c, y), c * g * y * -2.0


def _relu_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    return relu_grad(c, n.operands[1]), None  # relu' is piecewise constant


# sigmoid's numpy kernel runs its steps in place on ``out``, and relu is np.maximum(x, 0):
# both alias-safe. NaN stays NaN through relu, as through np.maximum.
SIGMOID = unary(
    "sigmoid",
    onnx="Sigmoid",
    vjp=_sigmoid_vjp,
    alias_safe=True,
    cuda="{one} / ({one} + {exp}(-{0}))",
)
TANH = unary("tanh", onnx="Tanh", vjp=_tanh_vjp, ufunc=np.tanh, cuda="{tanh}({0})")
RELU = unary(
    "relu", onnx="Relu", vjp=_relu_vjp, alias_safe=True, cuda="({0} < {zero} ? {zero} : {0})"
)
SIGMOID_GRAD = grad("sigmoid_grad", vjp=_sigmoid_grad_vjp, cuda="({one} - {1}) * {1} * {0}")
TANH_GRAD = grad("tanh_grad", vjp=_tanh_grad_vjp, cuda="({one} - {1} * {1}) * {0}")
RELU_GRAD = grad(  # a select: inf * 0 is not NaN here
    "relu_grad", vjp=_relu_grad_vjp, cuda="({1} > {zero} ? {0} : {zero})"
)


def _softplus_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (g * sigmoid(n.operands[0]),)  # softplus' = sigmoid


SOFTPLUS = unary(  # numpy: np.logaddexp(x, 0), a ufunc (alias-safe); C: the same stable form
    "softplus",
    onnx="Softplus",
    vjp=_softplus_vjp,
    alias_safe=True,
    cuda="({0} > {zero} ? {0} + {log}({one} + {exp}(-{0})) : {log}({one} + {exp}({0})))",
)


def softplus(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """log(1 + e^x), element-wise; computed stably (no overflow for large x). Its gradient is
    ``sigmoid(x)``.

    >>> ops.softplus(tn.tensor([0.0], tn.Float32, tn.CPU, tn.Dim1)).numpy()
    array([0.6931472], dtype=float32)
    """
    return build(SOFTPLUS, (x,))


SQRT_HALF = math.sqrt(0.5)
SQRT_TWO_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(
    x: TensorLike[FE, Dv, D], approximate: Literal["none", "tanh"] = "none"
) -> TensorLike[FE, Dv, D]:
    """The Gaussian error linear unit ``x * Phi(x)`` (PyTorch's ``gelu``), element-wise:
    ``x / 2 * (1 + erf(x / sqrt(2)))``; with ``approximate="tanh"``, the tanh form
    ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))`` (GPT-2's).

    >>> ops.gelu(tn.tensor([-1.0, 0.0, 1.0], tn.Float64, tn.CPU, tn.Dim1)).numpy()
    array([-0.15865525,  0.        ,  0.84134475])
    """
    require_data("gelu", "x", x)
    if approximate in ("none", "tanh") and x.elem in HALF_TAGS:
        # 1 + erf(...) cancels for x <= -3: rounded to 16 bits at each step it was off by
        # 45 % there (0 below -4); computed in Float32 and rounded once, as PyTorch's
        wide: Any = gelu(astype(x, Float32), approximate)
        return astype(wide, x.elem)
    if approximate == "none":
        return x * (erf(x * SQRT_HALF) + 1.0) * 0.5
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * SQRT_TWO_OVER_PI
        return x * (tanh(inner) + 1.0) * 0.5
    raise ParamError(
        message(
            "gelu: approximate must be 'none' or 'tanh'.",
            [("received", repr(approximate)[:80])],
            hint="use ops.gelu(x) (exact, erf) or ops.gelu(x, approximate='tanh').",
        )
    )


def silu(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """``x * sigmoid(x)`` (also called swish), element-wise.

    >>> ops.silu(tn.tensor([0.0, 1.0], tn.Float32, tn.CPU, tn.Dim1)).numpy()
    array([0.       , 0.7310586], dtype=float32)
    """
    return x * sigmoid(x)


def sigmoid(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """1 / (1 + e^-x), element-wise; computed stably (no overflow for large |x|).

    >>> ops.sigmoid(tn.tensor([0.0], tn.Float32, tn.CPU, tn.Dim1)).numpy()
    array([0.5], dtype=float32)
    """
    return build(SIGMOID, (x,))


def tanh(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Hyperbolic tangent, element-wise."""
    return build(TANH, (x,))


def relu(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """x where x > 0, else 0, element-wise."""
    return build(RELU, (x,))


@elementwise_grad
def sigmoid_grad(g: TensorLike[FE, Dv, D2], y: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of sigmoid from its OUTPUT ``y = sigmoid(x)``: g * y * (1 - y)."""
    return build(SIGMOID_GRAD, (g, y))


@elementwise_grad
def tanh_grad(g: TensorLike[FE, Dv, D2], y: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of tanh from its OUTPUT ``y = tanh(x)``: g * (1 - y^2)."""
    return build(TANH_GRAD, (g, y))


@elementwise_grad
def relu_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of relu from its INPUT ``x``: g where x > 0, else 0."""
    return build(RELU_GRAD, (g, x))
